"""The effect of a provider `receipt` event: the message moves forward and the client is told.

`data = {id: <provider message id>, status: delivered|read|failed}`. The message is found
through the receipt index written when it was SENT; the status only moves forward
(SENT -> DELIVERED -> READ; FAILED only from SENT) with a conditional update, so a duplicate
or late receipt changes nothing and queues no second webhook. Unknown ids are ignored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import ConfigDict, StrictStr, ValidationError

from switchboard.catalog.events import ProviderEvent
from switchboard.core.errors import AlreadyFinal, NotFound, provider_text
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.messages.domain import Message, MessageStatus, ReceiptStatus, TraceEvent
from switchboard.messages.ports import ConfigSource, StatusNotifier


class Receipts(Protocol):
    def message_for_receipt(self, provider_id: str, provider_message_id: str, tenant: str) -> str | None: ...

    def advance(
        self,
        tenant: str,
        message_id: str,
        status: MessageStatus,
        at: datetime,
        event: TraceEvent,
        *,
        reason: str | None = None,
    ) -> Message: ...


class ReceiptData(Model):
    model_config = ConfigDict(extra="ignore")

    id: StrictStr
    status: ReceiptStatus
    errors: list[dict[str, Any]] = []  # a failed receipt's: the provider's `{code, title}` (Meta)
    reason: StrictStr | None = None  # a failed receipt's reason, when the kind knows it

    def provider_words(self) -> dict[str, Any]:
        """The first error's code and title, as the trace carries a provider's words."""
        first = next((error for error in self.errors if isinstance(error, dict)), None)
        if first is None:
            return {}
        code, title = first.get("code"), provider_text(first.get("title"))
        words: dict[str, Any] = {} if code is None else {"providerCode": str(code)}
        return words | ({"providerMessage": title} if title else {})


STATUS_FOR_RECEIPT: dict[str, MessageStatus] = {
    "delivered": MessageStatus.DELIVERED,
    "read": MessageStatus.READ,
    "failed": MessageStatus.FAILED,
}


class ReceiptEffect:
    """An `EffectHandler` for `receipt` events; idempotent."""

    def __init__(self, receipts: Receipts, configs: ConfigSource, notifier: StatusNotifier) -> None:
        self._receipts = receipts
        self._configs = configs
        self._notifier = notifier

    def __call__(self, event: ProviderEvent) -> None:
        try:
            data = ReceiptData.model_validate(event.data)
        except ValidationError:
            logger.warning("receipt ignored: malformed data", extra={"event_id": event.event_id})
            return
        tenant = event.instance.tenant
        message_id = self._receipts.message_for_receipt(event.provider_id, data.id, tenant)
        if message_id is None:
            logger.info("receipt ignored: unknown message", extra={"event_id": event.event_id})
            return
        status = STATUS_FOR_RECEIPT[data.status]
        trace = TraceEvent(
            stage=f"receipt.{data.status}",
            at=event.received_at,
            data={"instance": event.instance.name, "eventId": event.event_id, **data.provider_words()},
        )
        try:
            message = self._receipts.advance(tenant, message_id, status, event.received_at, trace, reason=data.reason)
        except AlreadyFinal:
            logger.info("receipt ignored: status already reached", extra={"message_id": message_id})
            return
        logger.info("message status advanced", extra={"message_id": message_id, "status": str(status)})
        try:
            try:
                # A message pinned to an instance (its test message) is the console's: no client webhook.
                pinned = message.pinned_instance is not None
                webhook_url = None if pinned else self._configs.get(tenant, message.api_key_id).webhook_url
            except NotFound:
                webhook_url = None  # the key was revoked: no client webhook, the change is still told
            self._notifier.message_changed(message, webhook_url)
        except Exception:  # the client webhook never fails the receipt
            logger.exception("client webhook not queued", extra={"message_id": message_id})

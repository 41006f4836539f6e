"""The effect of a provider `receipt` event: the message moves forward and the client is told.

`data = {id: <provider message id>, status: delivered|read|failed}`. The message is found
through the receipt index written when it was SENT; the status only moves forward
(SENT -> DELIVERED -> READ; FAILED only from SENT), and only for the send it names, with a
conditional update, so a duplicate or late receipt changes nothing and queues no second webhook.
Unknown ids are ignored.

A send Meta accepted and then failed for the customer-service window (131047: `reason`
`outside_service_window`) goes back to QUEUED when the message carries a fallback template, once
(a conditional write), and a send job takes the template through the same number; the client
hears of it when the template is sent (`message.sent` with `sentAs`), or FAILED. Without a
fallback template the message ends FAILED `outside_service_window`, Meta's code kept.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ConfigDict, StrictStr, ValidationError

from switchboard.catalog.events import ProviderEvent
from switchboard.core.errors import AlreadyFinal, NotFound, provider_text
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.messages.domain import Message, MessageStatus, PendingRoute, ReceiptStatus, SendJob, TraceEvent
from switchboard.messages.ports import ConfigSource, StatusNotifier
from switchboard.messages.window import OUTSIDE_SERVICE_WINDOW

if TYPE_CHECKING:
    from switchboard.core.ports import JobQueue


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
        provider_message_id: str | None = None,
    ) -> Message: ...

    def record_window_refused(
        self, tenant: str, message_id: str, *, provider_message_id: str, at: datetime, event: TraceEvent
    ) -> Message | None: ...


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

    def __init__(
        self, receipts: Receipts, configs: ConfigSource, notifier: StatusNotifier, jobs: JobQueue | None = None
    ) -> None:
        """`jobs`: the send queue, for a fallback template after Meta refused the window (None:
        no fallback here, the message fails)."""
        self._receipts = receipts
        self._configs = configs
        self._notifier = notifier
        self._jobs = jobs

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
        if data.reason == OUTSIDE_SERVICE_WINDOW and self._jobs is not None:
            due = self._receipts.record_window_refused(
                tenant, message_id, provider_message_id=data.id, at=event.received_at, event=trace
            )
            if due is not None:
                self._fall_back(due)
                return
        try:
            message = self._receipts.advance(
                tenant, message_id, status, event.received_at, trace, reason=data.reason, provider_message_id=data.id
            )
        except AlreadyFinal:
            logger.info("receipt ignored: status already reached", extra={"message_id": message_id})
            return
        logger.info("message status advanced", extra={"message_id": message_id, "status": str(status)})
        self._told(message)

    def _fall_back(self, message: Message) -> None:
        """Queue the send of the message's fallback template through the route its content left
        through. A failure raises: the event stays pending, and its redelivery finds the message
        due still and queues it then (a second job finds it claimed)."""
        assert self._jobs is not None and message.number_id is not None and message.provider_id is not None
        route = PendingRoute(number_id=message.number_id, instance=message.instance, provider_id=message.provider_id)
        job = SendJob(
            message_id=message.id,
            tenant=message.tenant,
            api_key_id=message.api_key_id,
            to=message.to,
            template=True,
            fallback=route,
        )
        self._jobs.send(job.model_dump_json(exclude_none=True))
        logger.info("fallback template queued after the window refusal", extra={"message_id": message.id})
        self._told(message)

    def _told(self, message: Message) -> None:
        """The committed change to the console and, for a status with a client event, the client."""
        tenant, message_id = message.tenant, message.id
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

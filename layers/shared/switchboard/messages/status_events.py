"""Every committed status change of a message, told once to the bus.

The services call `message_changed` only after the write that moved the status committed (a
duplicate receipt or a lost race raises before it): one `message.status.changed` event, which
the console's live updates take and, by a rule of the bus (template.yaml,
`ClientWebhookStatusRule`), ClientWebhookQueue too when `clientWebhook` is true and the status
has a client event. The detail says whether the key has a webhook URL, never the URL: the
client-webhooks function reads the key's current URL and secret when it delivers.
"""

from __future__ import annotations

from typing import Any

from switchboard.core.bus import MESSAGE_STATUS_CHANGED
from switchboard.core.ports import Publisher
from switchboard.messages.domain import Message


def status_detail(message: Message, *, client_webhook: bool = False) -> dict[str, Any]:
    """The event's detail: the status and everything the client webhook's body carries
    (`destinationNumber`, and `sentAt`, `failureReason`, `expiresAt`, `sentAs` when set), so the body is
    the change's even when the message has moved on by the time it is delivered, and delivering
    it reads nothing but the key."""
    detail: dict[str, Any] = {
        "tenant": message.tenant,
        "keyId": message.api_key_id,
        "messageId": message.id,
        "status": message.status.value,
        "at": message.updated_at.isoformat(),
        "clientWebhook": client_webhook,
        "destinationNumber": message.to,
    }
    if message.source_number:
        detail["sourceNumber"] = message.source_number
    if message.sent_at:
        detail["sentAt"] = message.sent_at.isoformat()
    if message.failure_reason:
        detail["failureReason"] = message.failure_reason
    if message.expires_at:
        detail["expiresAt"] = message.expires_at.isoformat()
    if message.sent_as:
        detail["sentAs"] = message.sent_as.model_dump(mode="json")
    return detail


class StatusChanges:
    def __init__(self, publisher: Publisher) -> None:
        self._publisher = publisher

    def message_changed(self, message: Message, webhook_url: str | None) -> None:
        """Publish (best effort, never raises: a failure is logged and counted by the publisher)."""
        self._publisher.publish(MESSAGE_STATUS_CHANGED, status_detail(message, client_webhook=bool(webhook_url)))

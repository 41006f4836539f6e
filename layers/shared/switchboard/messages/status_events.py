"""Every committed status change of a message, told once to the bus and to the key's client webhook.

The services call `message_changed` only after the write that moved the status committed (a
duplicate receipt or a lost race raises before it): `message.status.changed` on the bus (the
console's live updates), then the client webhook job when the key has a URL and the status has
a client event.
"""

from __future__ import annotations

from typing import Any, Protocol

from switchboard.core.bus import MESSAGE_STATUS_CHANGED
from switchboard.core.ports import Publisher
from switchboard.messages.domain import Message


class WebhookJobs(Protocol):
    def message_changed(self, message: Message, webhook_url: str | None) -> None: ...


def status_detail(message: Message) -> dict[str, Any]:
    detail: dict[str, Any] = {
        "tenant": message.tenant,
        "keyId": message.api_key_id,
        "messageId": message.id,
        "status": message.status.value,
        "at": message.updated_at.isoformat(),
    }
    if message.source_number:
        detail["sourceNumber"] = message.source_number
    return detail


class StatusChanges:
    def __init__(self, publisher: Publisher, webhooks: WebhookJobs | None = None) -> None:
        self._publisher = publisher
        self._webhooks = webhooks

    def message_changed(self, message: Message, webhook_url: str | None) -> None:
        """Publish (best effort, never raises), then queue the client webhook (may raise)."""
        self._publisher.publish(MESSAGE_STATUS_CHANGED, status_detail(message))
        if self._webhooks is not None:
            self._webhooks.message_changed(message, webhook_url)

"""What the messages routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.media.uploads import MediaUploads
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer
    from switchboard.messages.delivery_log import DeliveryLog
    from switchboard.messages.service import MessageService


def message_service() -> MessageService:
    """The send API's submissions and reads."""
    raise NotProvided(message_service)


def client_webhook_deliverer() -> ClientWebhookDeliverer:
    """Client webhook deliveries and their signing secrets."""
    raise NotProvided(client_webhook_deliverer)


def media_uploads() -> MediaUploads:
    """Presigned uploads into the media bucket (`switchboard.media.uploads`)."""
    raise NotProvided(media_uploads)


def delivery_log() -> DeliveryLog:
    """The webhook delivery log: listings, one delivery, replays."""
    raise NotProvided(delivery_log)

"""What the health routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.health.ports import EventsWebhookSecrets
    from switchboard.health.service import BanWatch


def health_watch() -> BanWatch:
    """The ban watch of each instance."""
    raise NotProvided(health_watch)


def events_webhook_secrets() -> EventsWebhookSecrets:
    """Rotates the signing secret of an instance's events webhook."""
    raise NotProvided(events_webhook_secrets)

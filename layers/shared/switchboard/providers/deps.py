"""What the providers routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.providers.setup import WebhookSetup


def webhook_setup() -> WebhookSetup:
    """Points an instance's provider webhooks at this deployment."""
    raise NotProvided(webhook_setup)

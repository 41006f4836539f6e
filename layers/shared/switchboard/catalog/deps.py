"""What the catalog routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.catalog.domain import PacingLimits
    from switchboard.catalog.pairing import PairingService
    from switchboard.catalog.service import CatalogService
    from switchboard.catalog.webhook_setup import WebhookSetup


def catalog_service() -> CatalogService:
    """Tenants, API keys, numbers, provider servers and instances."""
    raise NotProvided(catalog_service)


def webhook_setup() -> WebhookSetup:
    """Points an instance's provider webhooks at this deployment."""
    raise NotProvided(webhook_setup)


def pacing_defaults() -> PacingLimits:
    """The deployment's pacing (the ban watch's), which a number follows where its own is silent."""
    raise NotProvided(pacing_defaults)


def pairing_service() -> PairingService:
    """Starts, shows and ends an instance's session at its provider; sends a test message."""
    raise NotProvided(pairing_service)

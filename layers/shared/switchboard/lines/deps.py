"""What the call limit routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.lines.service import CallsConfigService
    from switchboard.lines.subscriptions import SubscriptionService


def calls_config_service() -> CallsConfigService:
    """The versioned per-connection call limit."""
    raise NotProvided(calls_config_service)


def subscription_service() -> SubscriptionService:
    """The calls webhook subscription."""
    raise NotProvided(subscription_service)

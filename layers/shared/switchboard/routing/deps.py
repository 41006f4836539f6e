"""What the routing routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.routing.outbox import OutboxService
    from switchboard.routing.service import RoutingService


def routing_service() -> RoutingService:
    """Each tenant's downstream configuration."""
    raise NotProvided(routing_service)


def outbox_service() -> OutboxService:
    """Replies by instance and their outbox."""
    raise NotProvided(outbox_service)

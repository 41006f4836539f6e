"""What the live routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.live.service import TicketService


def ticket_service() -> TicketService:
    """Tickets for the live WebSocket API."""
    raise NotProvided(ticket_service)

"""Live updates: a ticket to open the WebSocket of a tenant's domain events (scope admin or agent)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.live.deps import ticket_service
from switchboard.live.schemas import LiveTicketView
from switchboard.live.service import TicketService

router = APIGatewayHttpRouter()
Tickets = Annotated[TicketService, Depends(ticket_service)]
# Platform keys are refused by the service too: they manage tenants and see no tenant's events.
Caller = Annotated[Principal, Depends(requires(router, Scope.ADMIN, Scope.AGENT))]
ERRORS = documented(401, 403, 422)


@router.post("/api/live/tickets", status_code=201, tags=["live updates"], responses=ERRORS)
def create_live_ticket(tickets: Tickets, principal: Caller) -> LiveTicketView:
    """A single-use ticket, valid 30 seconds, to open `url?ticket=<ticket>` (a WebSocket). Frames are
    `{"type", "detail", "time"}`, one per change of the caller's tenant (an agent gets the events of
    its own calls and those of no attendant): hints to re-read the resource, not state."""
    return LiveTicketView.of(tickets.issue(principal))

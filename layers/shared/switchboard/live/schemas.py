"""The answer of the ticket route (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from switchboard.core.wire import View
from switchboard.live.domain import IssuedTicket


class LiveTicketView(View):
    ticket: str = Field(description="Single use, valid 30 seconds: open `url?ticket=<ticket>` before `expiresAt`.")
    url: str = Field(description="The WebSocket URL of live updates.")
    expires_at: datetime

    @classmethod
    def of(cls, issued: IssuedTicket) -> LiveTicketView:
        return cls(ticket=issued.ticket, url=issued.url, expires_at=issued.expires_at)

"""Live updates: the ticket a browser trades for a WebSocket connection, the connection, the frame.

A browser cannot put an API key in a WebSocket handshake header, and a key in the URL would end
up in access logs; so it asks for a ticket over the authenticated HTTP API and opens the socket
with `?ticket=`. A ticket is opaque, single-use and lives 30 seconds; only its SHA-256 is
stored. The connection it opens is bound to the key's tenant and, for an agent key, to its
attendant; the notifier never sends a tenant's events anywhere else.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from datetime import datetime, timedelta
from typing import Any

from switchboard.catalog.domain import Principal, Scope
from switchboard.core.model import Model

TICKET_VALIDITY = timedelta(seconds=30)
# API Gateway closes a WebSocket connection after 2 hours whatever happens: an item whose
# $disconnect was lost is gone by then too (its TTL), or at the first post that answers 410.
CONNECTION_LIFETIME = timedelta(hours=2)
TICKET_BYTES = 32  # 43 url-safe characters

ADMIN = "admin"
AGENT = "agent"


def new_ticket() -> str:
    return secrets.token_urlsafe(TICKET_BYTES)


def ticket_digest(ticket: str) -> str:
    """What is stored and looked up: a leaked table item does not give a usable ticket."""
    return hashlib.sha256(ticket.encode("utf-8")).hexdigest()


def live_scope(principal: Principal) -> str | None:
    """The scope a live connection of this key gets: admin sees its tenant, agent its own calls.

    Send keys (machines that send messages) and platform keys (which manage tenants and see no
    tenant's traffic) get none.
    """
    if principal.has(Scope.ADMIN):
        return ADMIN
    if principal.has(Scope.AGENT):
        return AGENT
    return None


class Ticket(Model):
    """A ticket as stored (by digest) until a $connect consumes it or its TTL removes it."""

    digest: str
    tenant: str
    key_id: str
    scope: str
    attendant: str | None = None
    expires_at: datetime


class IssuedTicket(Model):
    ticket: str
    url: str
    expires_at: datetime


class Connection(Model):
    """One open WebSocket: whose it is, and until when it can live at most."""

    connection_id: str
    tenant: str
    key_id: str
    scope: str
    attendant: str | None = None
    connected_at: datetime
    expires_at: datetime

    def wants(self, detail: dict[str, Any]) -> bool:
        """Whether an event of this connection's tenant is for it: an agent only gets the events
        that name no attendant or name its own."""
        if detail.get("tenant") != self.tenant:
            return False
        if self.scope != AGENT:
            return True
        attendant = detail.get("attendant")
        return attendant is None or attendant == self.attendant


def frame(detail_type: str, detail: dict[str, Any], time: str) -> bytes:
    """The one text frame a browser gets per domain event (a hint: it re-reads over the API)."""
    return json.dumps({"type": detail_type, "detail": detail, "time": time}, separators=(",", ":")).encode()

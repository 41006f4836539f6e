"""Live updates: the ticket a browser trades for a WebSocket connection, the connection, the frame.

A browser cannot put an API key in a WebSocket handshake header, and a key in the URL would end
up in access logs; so it asks for a ticket over the authenticated HTTP API and opens the socket
with `?ticket=`. A ticket is opaque, single-use and lives 30 seconds; only its SHA-256 is
stored. The connection it opens is bound to the key's tenant and, for an agent key, to its
attendant; the notifier never sends a tenant's events anywhere else.

A connection holds its socket on the strength of its principal's grant when it opened (its
`LiveGrant`: the live scope and, for an agent, the attendant). The grant is the principal's, not
the socket's: once the principal is revoked or its grant changes (an admin demoted to agent or
to send, another attendant), the connection may no longer hold it and is closed.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from datetime import datetime, timedelta
from typing import Any

from pydantic import ConfigDict, model_validator

from switchboard.core.bus import MESSAGE_STATUS_CHANGED
from switchboard.core.identity import Principal, Scope, key_principal
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


class LiveGrant(Model):
    """What a principal's grant lets a live connection see: its scope, and an agent's attendant."""

    model_config = ConfigDict(frozen=True)

    scope: str
    attendant: str | None = None


def live_grant(principal: Principal) -> LiveGrant | None:
    """The live grant of a principal's current scopes; None when it may hold no live connection."""
    scope = live_scope(principal)
    if scope is None:
        return None
    # The attendant as call ownership names it: its attendant id, else the key itself.
    return LiveGrant(scope=scope, attendant=(principal.attendant_id or principal.key_id) if scope == AGENT else None)


class _Granted(Model):
    """A record made on the strength of a principal's grant. Records stored before principals
    were named carry only the key id: their principal is that key's."""

    tenant: str
    principal: str
    key_id: str | None = None
    scope: str
    attendant: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _principal_of_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("principal") and data.get("key_id"):
            return {**data, "principal": key_principal(str(data["key_id"]))}
        return data

    @property
    def grant(self) -> LiveGrant:
        return LiveGrant(scope=self.scope, attendant=self.attendant)


class Ticket(_Granted):
    """A ticket as stored (by digest) until a $connect consumes it or its TTL removes it."""

    digest: str
    expires_at: datetime


class IssuedTicket(Model):
    ticket: str
    url: str
    expires_at: datetime


class Connection(_Granted):
    """One open WebSocket: whose it is, and until when it can live at most."""

    connection_id: str
    connected_at: datetime
    expires_at: datetime

    def allowed_by(self, grant: LiveGrant | None) -> bool:
        """Whether the principal's grant now still lets it see what this connection was opened for."""
        return grant == self.grant

    def wants(self, detail: dict[str, Any]) -> bool:
        """Whether an event of this connection's tenant is for it: an agent only gets the events
        that name no attendant or name its own."""
        if detail.get("tenant") != self.tenant:
            return False
        if self.scope != AGENT:
            return True
        attendant = detail.get("attendant")
        return attendant is None or attendant == self.attendant


# A message's status change carries the whole client webhook body (so its delivery reads nothing
# back): the browser gets only what says which message changed and how, and re-reads the rest with
# its own scope, which for an agent does not include the recipients of the tenant's API sends.
HINT_FIELDS = {MESSAGE_STATUS_CHANGED: ("tenant", "keyId", "messageId", "status", "at", "sourceNumber")}


def frame(detail_type: str, detail: dict[str, Any], time: str) -> bytes:
    """The one text frame a browser gets per domain event (a hint: it re-reads over the API)."""
    fields = HINT_FIELDS.get(detail_type)
    hint = detail if fields is None else {name: detail[name] for name in fields if name in detail}
    return json.dumps({"type": detail_type, "detail": hint, "time": time}, separators=(",", ":")).encode()

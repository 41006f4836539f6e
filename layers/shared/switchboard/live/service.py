"""Live updates use cases: issue a ticket, trade it for a connection, forget a connection."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from switchboard.catalog.domain import Principal, utcnow
from switchboard.core.errors import Forbidden, Unauthenticated
from switchboard.core.observability import logger
from switchboard.live.domain import (
    AGENT,
    CONNECTION_LIFETIME,
    TICKET_VALIDITY,
    Connection,
    IssuedTicket,
    Ticket,
    live_scope,
    new_ticket,
    ticket_digest,
)


class Tickets(Protocol):
    def put_ticket(self, ticket: Ticket) -> None: ...
    def consume_ticket(self, digest: str, now: datetime) -> Ticket | None: ...


class Connections(Protocol):
    def put_connection(self, connection: Connection) -> None: ...
    def tenant_of(self, connection_id: str) -> str | None: ...
    def delete_connection(self, tenant: str, connection_id: str) -> None: ...


class TicketService:
    def __init__(self, tickets: Tickets, live_url: str | None, clock: Callable[[], datetime] = utcnow) -> None:
        self._tickets = tickets
        self._live_url = live_url
        self._clock = clock

    def issue(self, principal: Principal) -> IssuedTicket:
        """A ticket for one connection within 30 s. Raises Forbidden for send and platform keys."""
        scope = live_scope(principal)
        if scope is None:
            raise Forbidden("live updates need an admin or agent key")
        if not self._live_url:
            raise RuntimeError("LIVE_URL is not configured")
        plaintext = new_ticket()
        expires_at = self._clock() + TICKET_VALIDITY
        self._tickets.put_ticket(
            Ticket(
                digest=ticket_digest(plaintext),
                tenant=principal.tenant,
                key_id=principal.key_id,
                scope=scope,
                # The attendant as call ownership names it: its attendant id, else the key itself.
                attendant=(principal.attendant_id or principal.key_id) if scope == AGENT else None,
                expires_at=expires_at,
            )
        )
        return IssuedTicket(ticket=plaintext, url=self._live_url, expires_at=expires_at)


class ConnectionService:
    def __init__(self, tickets: Tickets, connections: Connections, clock: Callable[[], datetime] = utcnow) -> None:
        self._tickets = tickets
        self._connections = connections
        self._clock = clock

    def connect(self, connection_id: str, ticket: str | None) -> Connection:
        """Consume the ticket and store the connection. Raises Unauthenticated for a missing,
        unknown, used or expired ticket (the handshake is refused)."""
        now = self._clock()
        consumed = self._tickets.consume_ticket(ticket_digest(ticket), now) if ticket else None
        if consumed is None:
            logger.info("live connection refused: no valid ticket")
            raise Unauthenticated("missing, used or expired ticket")
        connection = Connection(
            connection_id=connection_id,
            tenant=consumed.tenant,
            key_id=consumed.key_id,
            scope=consumed.scope,
            attendant=consumed.attendant,
            connected_at=now,
            expires_at=now + CONNECTION_LIFETIME,
        )
        self._connections.put_connection(connection)
        logger.info("live connection opened", extra={"tenant": connection.tenant, "scope": connection.scope})
        return connection

    def disconnect(self, connection_id: str) -> None:
        tenant = self._connections.tenant_of(connection_id)
        if tenant is not None:
            self._connections.delete_connection(tenant, connection_id)

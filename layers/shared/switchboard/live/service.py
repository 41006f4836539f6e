"""Live updates use cases: issue a ticket, trade it for a connection, forget a connection."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from switchboard.core.clock import utcnow
from switchboard.core.errors import Forbidden, Unauthenticated
from switchboard.core.identity import Principal
from switchboard.core.observability import logger
from switchboard.live.access import Grants
from switchboard.live.domain import (
    CONNECTION_LIFETIME,
    TICKET_VALIDITY,
    Connection,
    IssuedTicket,
    Ticket,
    live_grant,
    new_ticket,
    ticket_digest,
)


class Tickets(Protocol):
    def put_ticket(self, ticket: Ticket) -> None: ...
    def consume_ticket(self, digest: str, now: datetime) -> Ticket | None: ...


class Connections(Protocol):
    def put_connection(self, connection: Connection) -> None: ...
    def owner_of(self, connection_id: str) -> tuple[str, str | None] | None: ...
    def delete_connection(self, tenant: str, connection_id: str, principal: str | None) -> None: ...


class TicketService:
    def __init__(self, tickets: Tickets, live_url: str | None, clock: Callable[[], datetime] = utcnow) -> None:
        self._tickets = tickets
        self._live_url = live_url
        self._clock = clock

    def issue(self, principal: Principal) -> IssuedTicket:
        """A ticket for one connection within 30 s, for an API key or a person (their principal
        id names which). Raises Forbidden for send and platform keys."""
        grant = live_grant(principal)
        if grant is None:
            raise Forbidden("live updates need an admin or agent key")
        if not self._live_url:
            raise RuntimeError("LIVE_URL is not configured")
        plaintext = new_ticket()
        expires_at = self._clock() + TICKET_VALIDITY
        self._tickets.put_ticket(
            Ticket(
                digest=ticket_digest(plaintext),
                tenant=principal.tenant,
                principal=principal.principal_id,
                key_id=principal.key_id,
                scope=grant.scope,
                attendant=grant.attendant,
                expires_at=expires_at,
            )
        )
        return IssuedTicket(ticket=plaintext, url=self._live_url, expires_at=expires_at)


class ConnectionService:
    def __init__(
        self,
        tickets: Tickets,
        connections: Connections,
        grants: Grants,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._tickets = tickets
        self._connections = connections
        self._grants = grants
        self._clock = clock

    def connect(self, connection_id: str, ticket: str | None) -> Connection:
        """Consume the ticket and store the connection, if its principal's grant still allows it.

        Raises Unauthenticated for a missing, unknown, used or expired ticket, or one whose
        principal was revoked or changed since it was issued (the handshake is refused). The
        grant is read after the connection is stored: a revocation that lists the principal's
        connections before the store is seen by this read (see `switchboard.live.access`).
        """
        now = self._clock()
        consumed = self._tickets.consume_ticket(ticket_digest(ticket), now) if ticket else None
        if consumed is None:
            logger.info("live connection refused: no valid ticket")
            raise Unauthenticated("missing, used or expired ticket")
        connection = Connection(
            connection_id=connection_id,
            tenant=consumed.tenant,
            principal=consumed.principal,
            key_id=consumed.key_id,
            scope=consumed.scope,
            attendant=consumed.attendant,
            connected_at=now,
            expires_at=now + CONNECTION_LIFETIME,
        )
        self._connections.put_connection(connection)
        grant = self._grants.live_grants(connection.tenant, [connection.principal]).get(connection.principal)
        if not connection.allowed_by(grant):
            self._connections.delete_connection(connection.tenant, connection_id, connection.principal)
            logger.info(
                "live connection refused: its grant changed since the ticket", extra={"tenant": connection.tenant}
            )
            raise Unauthenticated("the grant this ticket was issued for was revoked or changed")
        logger.info("live connection opened", extra={"tenant": connection.tenant, "scope": connection.scope})
        return connection

    def disconnect(self, connection_id: str) -> None:
        owner = self._connections.owner_of(connection_id)
        if owner is not None:
            tenant, principal = owner
            self._connections.delete_connection(tenant, connection_id, principal)

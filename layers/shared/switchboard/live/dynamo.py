"""Tickets and live connections in the main table.

    TICKET#<sha256>                       / #META              a ticket, until consumed or its TTL
    LIVE#<tenant>                         / CONNECTION#<id>    a connection: one Query lists a tenant's
    LIVECONNECTION#<id>                   / #META              which tenant and principal a connection id
                                                               belongs to ($disconnect carries only the id)
    LIVEPRINCIPAL#<tenant>#<principal>    / CONNECTION#<id>    a copy of the connection: one Query lists
                                                               a principal's (to close them on revocation)

The three connection items are written in one transaction and deleted together. The principal's
copy is in the table itself rather than in an index, so its Query is strongly consistent: a
connection stored before a revocation reads the principal's connections is always found.

Every item carries `expiresAt` (epoch seconds), the table's TTL attribute; DynamoDB removes
expired items within a day or two, so reads check the expiry themselves.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from pynamodb.attributes import UnicodeAttribute

from switchboard.core import store
from switchboard.core.store import ConditionFailed, EpochAttribute, IsoDateTimeAttribute, TableItem
from switchboard.live.domain import Connection, Ticket

RecordT = TypeVar("RecordT", bound=BaseModel)


class _Granted(TableItem):
    """What every record made on a principal's grant stores (`live.domain._Granted`); `principal`
    is absent on items stored before principals were named."""

    tenant = UnicodeAttribute()
    principal = UnicodeAttribute(null=True)
    key_id = UnicodeAttribute(null=True)
    scope = UnicodeAttribute()
    attendant = UnicodeAttribute(null=True)
    expires_at = IsoDateTimeAttribute()
    ttl = EpochAttribute(attr_name="expiresAt")


class TicketItem(_Granted):
    PREFIX = "TICKET"

    digest = UnicodeAttribute()


class _ConnectionItem(_Granted):
    connection_id = UnicodeAttribute()
    connected_at = IsoDateTimeAttribute()


class TenantConnection(_ConnectionItem):
    PREFIX = "LIVE"
    SORT_PREFIX = "CONNECTION"


class PrincipalConnection(_ConnectionItem):
    PREFIX = "LIVEPRINCIPAL"
    SORT_PREFIX = "CONNECTION"


class ConnectionOwner(TableItem):
    PREFIX = "LIVECONNECTION"

    tenant = UnicodeAttribute()
    principal = UnicodeAttribute(null=True)
    ttl = EpochAttribute(attr_name="expiresAt")


class LiveRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    # --- tickets -----------------------------------------------------------------------------

    def put_ticket(self, ticket: Ticket) -> None:
        item = TicketItem(TicketItem.pk_for(ticket.digest), TicketItem.sk_for(), **_stored(ticket))
        item.ttl = ticket.expires_at
        store.put(item)

    def consume_ticket(self, digest: str, now: datetime) -> Ticket | None:
        """Delete the ticket if it exists and has not expired: the ticket, or None. One conditional
        write: of two connections racing with one ticket, exactly one gets it."""
        ticket = TicketItem(TicketItem.pk_for(digest), TicketItem.sk_for())
        try:
            old = store.delete(ticket, TicketItem.pk.exists() & (TicketItem.ttl > now))
        except ConditionFailed:
            return None
        return _record(Ticket, old) if old else None

    # --- connections -------------------------------------------------------------------------

    def put_connection(self, connection: Connection) -> None:
        """The connection, its owner item and its principal's copy, in one transaction (all or none)."""
        fields = _stored(connection)
        tenant, principal, connection_id = connection.tenant, connection.principal, connection.connection_id
        uow = store.unit_of_work()
        uow.put(TenantConnection(TenantConnection.pk_for(tenant), TenantConnection.sk_for(connection_id), **fields))
        uow.put(
            ConnectionOwner(
                ConnectionOwner.pk_for(connection_id),
                ConnectionOwner.sk_for(),
                tenant=tenant,
                principal=principal,
                ttl=connection.expires_at,
            )
        )
        uow.put(
            PrincipalConnection(
                PrincipalConnection.pk_for(tenant, principal), PrincipalConnection.sk_for(connection_id), **fields
            )
        )
        uow.commit()

    def owner_of(self, connection_id: str) -> tuple[str, str | None] | None:
        """The tenant and principal a connection id belongs to (the principal is None on an item
        stored before principals were recorded)."""
        owner = store.get(
            ConnectionOwner, ConnectionOwner.pk_for(connection_id), ConnectionOwner.sk_for(), consistent=True
        )
        if owner is None:
            return None
        return owner.tenant, owner.principal or None

    def delete_connection(self, tenant: str, connection_id: str, principal: str | None) -> None:
        """Forget the connection (idempotent: deleting a forgotten one is a no-op)."""
        items: list[TableItem] = [
            TenantConnection(TenantConnection.pk_for(tenant), TenantConnection.sk_for(connection_id)),
            ConnectionOwner(ConnectionOwner.pk_for(connection_id), ConnectionOwner.sk_for()),
        ]
        if principal:
            items.append(
                PrincipalConnection(
                    PrincipalConnection.pk_for(tenant, principal), PrincipalConnection.sk_for(connection_id)
                )
            )
        store.delete_all(items)

    def connections_of(self, tenant: str, now: datetime) -> list[Connection]:
        """The tenant's open connections (one Query; expired ones the TTL has not removed yet left out)."""
        return self._open(TenantConnection, TenantConnection.pk_for(tenant), now, consistent=False)

    def connections_of_principal(self, tenant: str, principal: str, now: datetime) -> list[Connection]:
        """A principal's open connections in its tenant (one strongly consistent Query)."""
        return self._open(PrincipalConnection, PrincipalConnection.pk_for(tenant, principal), now, consistent=True)

    @staticmethod
    def _open(model: type[_ConnectionItem], partition: str, now: datetime, *, consistent: bool) -> list[Connection]:
        items = store.query(model, partition, model.sk.startswith(model.sk_for("")), consistent=consistent)
        connections = [_record(Connection, item) for item in items]
        return [connection for connection in connections if connection.expires_at > now]


def _stored(record: BaseModel) -> dict[str, Any]:
    """A record's fields as the attributes of its item (None left out: absent is not null), and
    its expiry as the table's TTL."""
    fields = record.model_dump(exclude_none=True)
    fields["ttl"] = fields["expires_at"]
    return fields


def _record(model: type[RecordT], item: TableItem) -> RecordT:
    """The record of an item: its attributes that are fields of `model`."""
    return model.model_validate(
        {name: value for name, value in item.attribute_values.items() if name in model.model_fields}
    )

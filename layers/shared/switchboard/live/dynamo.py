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
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from switchboard.core.dynamo import META, entity_key, from_item, is_condition_failure, query_all, to_item
from switchboard.live.domain import Connection, Ticket

TTL_ATTRIBUTE = "expiresAt"


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def ticket_key(digest: str) -> dict[str, str]:
    return entity_key("TICKET", digest)


def connection_key(tenant: str, connection_id: str) -> dict[str, str]:
    return {"pk": f"LIVE#{tenant}", "sk": f"CONNECTION#{connection_id}"}


def owner_key(connection_id: str) -> dict[str, str]:
    return {"pk": f"LIVECONNECTION#{connection_id}", "sk": META}


def principal_partition(tenant: str, principal: str) -> str:
    return f"LIVEPRINCIPAL#{tenant}#{principal}"


def principal_connection_key(tenant: str, principal: str, connection_id: str) -> dict[str, str]:
    return {"pk": principal_partition(tenant, principal), "sk": f"CONNECTION#{connection_id}"}


class LiveRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    # --- tickets -----------------------------------------------------------------------------

    def put_ticket(self, ticket: Ticket) -> None:
        item = to_item(ticket, ticket_key(ticket.digest), tenant=ticket.tenant)
        item[TTL_ATTRIBUTE] = _epoch(ticket.expires_at)
        self._table.put_item(Item=item)

    def consume_ticket(self, digest: str, now: datetime) -> Ticket | None:
        """Delete the ticket if it exists and has not expired: the ticket, or None. One conditional
        write: of two connections racing with one ticket, exactly one gets it."""
        try:
            answer = self._table.delete_item(
                Key=ticket_key(digest),
                ConditionExpression="attribute_exists(pk) AND #ttl > :now",
                ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":now": _epoch(now)},
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return None
            raise
        item = answer.get("Attributes")
        return from_item(Ticket, item) if item else None

    # --- connections -------------------------------------------------------------------------

    def put_connection(self, connection: Connection) -> None:
        """The connection, its owner item and its principal's copy, in one transaction (all or none)."""
        ttl = {TTL_ATTRIBUTE: _epoch(connection.expires_at)}
        item = to_item(connection, connection_key(connection.tenant, connection.connection_id), **ttl)
        copy = to_item(
            connection,
            principal_connection_key(connection.tenant, connection.principal, connection.connection_id),
            **ttl,
        )
        owner = {
            **owner_key(connection.connection_id),
            "tenant": connection.tenant,
            "principal": connection.principal,
            **ttl,
        }
        self._client.transact_write_items(
            TransactItems=[{"Put": {"TableName": self._name, "Item": value}} for value in (item, owner, copy)]
        )

    def owner_of(self, connection_id: str) -> tuple[str, str | None] | None:
        """The tenant and principal a connection id belongs to (the principal is None on an item
        stored before principals were recorded)."""
        item = self._table.get_item(Key=owner_key(connection_id), ConsistentRead=True).get("Item")
        if not item:
            return None
        principal = item.get("principal")
        return str(item["tenant"]), str(principal) if principal else None

    def delete_connection(self, tenant: str, connection_id: str, principal: str | None) -> None:
        """Forget the connection (idempotent: deleting a forgotten one is a no-op)."""
        with self._table.batch_writer() as batch:
            batch.delete_item(Key=connection_key(tenant, connection_id))
            batch.delete_item(Key=owner_key(connection_id))
            if principal:
                batch.delete_item(Key=principal_connection_key(tenant, principal, connection_id))

    def connections_of(self, tenant: str, now: datetime) -> list[Connection]:
        """The tenant's open connections (one Query; expired ones the TTL has not removed yet left out)."""
        return self._open(f"LIVE#{tenant}", now, consistent=False)

    def connections_of_principal(self, tenant: str, principal: str, now: datetime) -> list[Connection]:
        """A principal's open connections in its tenant (one strongly consistent Query)."""
        return self._open(principal_partition(tenant, principal), now, consistent=True)

    def _open(self, partition: str, now: datetime, *, consistent: bool) -> list[Connection]:
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(partition) & Key("sk").begins_with("CONNECTION#"),
            ConsistentRead=consistent,
        )
        connections = [from_item(Connection, item) for item in items]
        return [connection for connection in connections if connection.expires_at > now]

"""Tickets and live connections in the main table.

    TICKET#<sha256>               / #META              a ticket, until consumed or its TTL
    LIVE#<tenant>                 / CONNECTION#<id>    a connection: one Query lists a tenant's
    LIVECONNECTION#<id>           / #META              which tenant a connection id belongs to
                                                       ($disconnect carries only the id)

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
        """The connection and its owner item, in one transaction (both or none)."""
        ttl = {TTL_ATTRIBUTE: _epoch(connection.expires_at)}
        item = to_item(connection, connection_key(connection.tenant, connection.connection_id), **ttl)
        owner = {**owner_key(connection.connection_id), "tenant": connection.tenant, **ttl}
        self._client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": self._name, "Item": item}},
                {"Put": {"TableName": self._name, "Item": owner}},
            ]
        )

    def tenant_of(self, connection_id: str) -> str | None:
        item = self._table.get_item(Key=owner_key(connection_id), ConsistentRead=True).get("Item")
        return str(item["tenant"]) if item else None

    def delete_connection(self, tenant: str, connection_id: str) -> None:
        """Forget the connection (idempotent: deleting a forgotten one is a no-op)."""
        with self._table.batch_writer() as batch:
            batch.delete_item(Key=connection_key(tenant, connection_id))
            batch.delete_item(Key=owner_key(connection_id))

    def connections_of(self, tenant: str, now: datetime) -> list[Connection]:
        """The tenant's open connections (one Query; expired ones the TTL has not removed yet left out)."""
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(f"LIVE#{tenant}") & Key("sk").begins_with("CONNECTION#"),
        )
        connections = [from_item(Connection, item) for item in items]
        return [connection for connection in connections if connection.expires_at > now]

"""Routing state: per-tenant downstream mappings and their version stamp, and forward attempts.

- `DOWNSTREAM#<owner_tag>`: one mapping per tenant (listed through GSI1 `DOWNSTREAMS`);
- `ROUTING#VERSION`: a counter bumped in the same transaction as every mapping change, so each
  container can tell with one small read whether its cached mappings are still current;
- `FORWARD#<event id>`: when the first forward of an incoming message started, written before
  it posts anything; it expires after the longest a forward job can live (the dead-letter
  queue's retention, from the original enqueue), so a job redriven from it is still known.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from switchboard.core.dynamo import (
    META,
    cancellation_codes,
    entity_key,
    from_item,
    is_condition_failure,
    query_all,
)
from switchboard.core.errors import InvalidInput, NotFound
from switchboard.routing.domain import DownstreamMapping, IncomingMessage

VERSION_KEY = {"pk": "ROUTING#VERSION", "sk": META}
FORWARD_ATTEMPT_DAYS = 14  # ForwardDLQ's MessageRetentionPeriod


class RoutingRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    # --- downstream mappings --------------------------------------------------------------

    def version(self) -> int:
        item = self._table.get_item(Key=VERSION_KEY, ConsistentRead=True).get("Item")
        return int(item["version"]) if item else 0

    def get_mapping(self, owner_tag: str) -> DownstreamMapping | None:
        item = self._table.get_item(Key=_mapping_key(owner_tag), ConsistentRead=True).get("Item")
        return from_item(DownstreamMapping, item) if item else None

    def list_mappings(self) -> list[DownstreamMapping]:
        items = query_all(self._table, IndexName="GSI1", KeyConditionExpression=Key("gsi1pk").eq("DOWNSTREAMS"))
        return [from_item(DownstreamMapping, item) for item in items]

    def put_mapping(self, mapping: DownstreamMapping, *, token_replaced: bool) -> None:
        """Upsert a mapping of an existing tenant and bump the version, in one transaction.

        Without a new token the mapping must already have one (InvalidInput otherwise); an
        unknown tenant is NotFound.
        """
        fields = {
            "owner_tag": mapping.owner_tag,
            "tenant": mapping.owner_tag,
            "base_url": mapping.base_url,
            "account_id": mapping.account_id,
            "inbox_id": mapping.inbox_id,
            "updated_at": mapping.updated_at.isoformat(),
            "gsi1pk": "DOWNSTREAMS",
            "gsi1sk": mapping.owner_tag,
        }
        if token_replaced:
            fields["token_hint"] = mapping.token_hint
        names = {f"#{name}": name for name in fields}
        values = {f":{name}": value for name, value in fields.items()}
        update = {
            "Update": {
                "TableName": self._name,
                "Key": _mapping_key(mapping.owner_tag),
                "UpdateExpression": "SET " + ", ".join(f"#{name} = :{name}" for name in fields),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }
        if not token_replaced:
            update["Update"]["ConditionExpression"] = "attribute_exists(token_hint)"
        tenant_exists = {
            "ConditionCheck": {
                "TableName": self._name,
                "Key": entity_key("TENANT", mapping.owner_tag),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        try:
            self._client.transact_write_items(TransactItems=[tenant_exists, update, self._bump()])
        except ClientError as error:
            codes = cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise NotFound("tenant not found") from error
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                raise InvalidInput(
                    "downstreamApiToken is required when creating a mapping", code="token_required"
                ) from error
            raise

    def delete_mapping(self, owner_tag: str) -> None:
        delete = {
            "Delete": {
                "TableName": self._name,
                "Key": _mapping_key(owner_tag),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        try:
            self._client.transact_write_items(TransactItems=[delete, self._bump()])
        except ClientError as error:
            if "ConditionalCheckFailed" in cancellation_codes(error):
                raise NotFound("no downstream mapping for this tenant") from error
            raise

    def _bump(self) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self._name,
                "Key": VERSION_KEY,
                "UpdateExpression": "ADD version :one",
                "ExpressionAttributeValues": {":one": 1},
            }
        }


def _mapping_key(owner_tag: str) -> dict[str, str]:
    return {"pk": f"DOWNSTREAM#{owner_tag}", "sk": META}


class ForwardAttemptsRepository:
    """`routing.forwarder.ForwardAttempts`: one conditional put per forward."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def begin(self, message: IncomingMessage, at: datetime) -> datetime | None:
        try:
            self._table.put_item(
                Item={
                    **_forward_key(message),
                    "tenant": message.instance.partition(":")[0],
                    "instance": message.instance,
                    "started_at": at.isoformat(),
                    "expiresAt": int((at + timedelta(days=FORWARD_ATTEMPT_DAYS)).timestamp()),
                },
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            # The earlier item comes back in DynamoDB's own JSON (read again where it does not).
            earlier = error.response.get("Item", {}).get("started_at", {}).get("S")
            if earlier is None:
                stored = self._table.get_item(Key=_forward_key(message), ConsistentRead=True).get("Item") or {}
                earlier = stored.get("started_at")
            return datetime.fromisoformat(str(earlier)) if earlier else at
        return None


def _forward_key(message: IncomingMessage) -> dict[str, str]:
    return {"pk": f"FORWARD#{message.event_id}", "sk": META}

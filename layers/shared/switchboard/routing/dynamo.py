"""Routing state: per-tenant downstream mappings, their version stamp, and instance connection state.

- `DOWNSTREAM#<owner_tag>`: one mapping per tenant (listed through GSI1 `DOWNSTREAMS`);
- `ROUTING#VERSION`: a counter bumped in the same transaction as every mapping change, so each
  container can tell with one small read whether its cached mappings are still current;
- the instance item's `state` / `state_seq`: written only by a newer provider `seq`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from switchboard.catalog.domain import InstanceState
from switchboard.core.dynamo import (
    META,
    cancellation_codes,
    entity_key,
    from_item,
    is_condition_failure,
    query_all,
)
from switchboard.core.errors import InvalidInput, NotFound
from switchboard.routing.domain import DownstreamMapping, StateWrite

VERSION_KEY = {"pk": "ROUTING#VERSION", "sk": META}


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

    # --- instance connection state --------------------------------------------------------

    def apply_connection(self, key: str, state: InstanceState, seq: int | None, at: datetime) -> StateWrite:
        """Write the state if `seq` is newer than the stored one; whether it was written, and over what.

        An event without `seq` only applies while no sequenced state was stored.
        """
        values: dict[str, Any] = {":state": state, ":at": at.isoformat()}
        if seq is None:
            expression = "SET #state = :state, state_changed_at = :at"
            condition = "attribute_exists(pk) AND attribute_not_exists(state_seq)"
        else:
            values[":seq"] = seq
            expression = "SET #state = :state, state_seq = :seq, state_changed_at = :at"
            condition = "attribute_exists(pk) AND (attribute_not_exists(state_seq) OR state_seq < :seq)"
        try:
            answer = self._table.update_item(
                Key=entity_key("INSTANCE", key),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=values,
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return StateWrite(written=False)
            raise
        # An instance never connected has no stored state: the API shows it DISCONNECTED.
        previous = (answer.get("Attributes") or {}).get("state", "DISCONNECTED")
        return StateWrite(written=True, previous=previous)

    def instance_state(self, key: str) -> tuple[InstanceState, int | None] | None:
        item = self._table.get_item(Key=entity_key("INSTANCE", key), ConsistentRead=True).get("Item")
        if not item:
            return None
        seq = item.get("state_seq")
        return item.get("state", "DISCONNECTED"), int(seq) if seq is not None else None


def _mapping_key(owner_tag: str) -> dict[str, str]:
    return {"pk": f"DOWNSTREAM#{owner_tag}", "sk": META}

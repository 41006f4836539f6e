"""Quota items in the MainTable, all in the tenant's `QUOTA#<tag>` partition:

- `#META`: the platform's overrides of the default quotas;
- `BUCKET#tenant`, `BUCKET#key#<key id>`: token buckets (`tat`, see `core.buckets.Bucket`),
  gone by TTL once they would be full again (a missing bucket is a full one);
- `DAY#<yyyy-mm-dd>`: messages accepted that UTC day, gone by TTL two days later.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from switchboard.core.buckets import BucketMoved, Claim
from switchboard.core.dynamo import META, from_item, is_condition_failure, to_item
from switchboard.quotas.domain import QuotaOverrides

_deserializer = TypeDeserializer()
DAY_TTL = timedelta(days=2)


def _partition(tenant: str) -> str:
    return f"QUOTA#{tenant}"


class DynamoBuckets:
    """Token buckets: every take is one conditional UpdateItem, with no read before it."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def take(self, tenant: str, bucket: str, claim: Claim, expires_at: int) -> int:
        """Apply the claim; returns the bucket's new `tat`. Raises BucketMoved with the stored
        `tat` when the bucket is not as claimed (the failed write returns it: no extra read)."""
        key = {"pk": _partition(tenant), "sk": f"BUCKET#{bucket}"}
        return take_bucket(self._table, key, claim, expires_at, tenant=tenant)


def take_bucket(table: Any, key: dict[str, str], claim: Claim, expires_at: int, **extra: Any) -> int:
    """One conditional UpdateItem applying `claim` to the bucket item at `key` (its `tat`, and the
    `extra` attributes set alongside); returns the new `tat`, or raises BucketMoved with the stored
    one, which the failed write returns."""
    values: dict[str, Any] = {":now": claim.now, ":expires": expires_at}
    assignments = ["expiresAt = :expires"]
    for name, value in extra.items():
        values[f":{name}"] = value
        assignments.append(f"{name} = :{name}")
    if claim.idle:
        update = "SET tat = :new, " + ", ".join(assignments)
        condition = "attribute_not_exists(tat) OR tat <= :now"
        values[":new"] = claim.now + claim.add
    else:
        update = "SET tat = tat + :add, " + ", ".join(assignments)
        condition = "tat > :now AND tat <= :limit"
        values.update({":add": claim.add, ":limit": claim.limit})
    try:
        answer = table.update_item(
            Key=key,
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
            ReturnValues="UPDATED_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if not is_condition_failure(error):
            raise
        old = error.response.get("Item", {}).get("tat")
        raise BucketMoved(int(_deserializer.deserialize(old)) if old else None) from error
    return int(answer["Attributes"]["tat"])


class DynamoQuotaStore:
    def __init__(self, table: Any) -> None:
        self._table = table

    def get_overrides(self, tenant: str) -> QuotaOverrides | None:
        item = self._table.get_item(Key={"pk": _partition(tenant), "sk": META}).get("Item")
        return from_item(QuotaOverrides, item) if item else None

    def put_overrides(self, tenant: str, overrides: QuotaOverrides) -> None:
        self._table.put_item(Item=to_item(overrides, {"pk": _partition(tenant), "sk": META}, tenant=tenant))

    def count_message(self, tenant: str, day: date, limit: int) -> bool:
        """One conditional ADD: counted only while fewer than `limit` are counted that day."""
        try:
            self._table.update_item(
                Key={"pk": _partition(tenant), "sk": f"DAY#{day.isoformat()}"},
                UpdateExpression="ADD sent :one SET expiresAt = if_not_exists(expiresAt, :expires), tenant = :tenant",
                ConditionExpression="attribute_not_exists(sent) OR sent < :limit",
                ExpressionAttributeValues={
                    ":one": 1,
                    ":limit": limit,
                    ":expires": int((_midnight(day) + DAY_TTL).timestamp()),
                    ":tenant": tenant,
                },
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def messages_on(self, tenant: str, day: date) -> int:
        item = self._table.get_item(Key={"pk": _partition(tenant), "sk": f"DAY#{day.isoformat()}"}).get("Item")
        return int(item["sent"]) if item else 0


def _midnight(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC)

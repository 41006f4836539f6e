"""Outbox of replies waiting for their instance, and the per-instance outgoing webhook secret.

`<instance>` below is the instance's key (`Instance.key`: its tenant and name).

- entry `OUTBOX#<instance>` / `<enqueuedAt>#<messageId>`: waiting (PENDING) or being sent
  (SENDING, with a lease); the partition holds only unfinished entries, in order; a reply sent
  in parts keeps how many have left (`parts_sent`) and the length they were cut to; `in_flight`
  is the part whose send started (through a kind that cannot resend safely) and is not recorded;
- outcome `OUTBOXMSG#<instance>#<messageId>`: one per downstream message id (dedupe), with the
  final status (SENT, FAILED + reason) once the entry leaves the outbox;
- GSI1 `OUTBOX#WAITING` lists entries of every instance, for the scheduled drain;
- `OUTHOOK#<instance>`: the SHA-256 of the instance's outgoing webhook secret (never the secret).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from switchboard.core.dynamo import (
    META,
    cancellation_codes,
    from_item,
    is_condition_failure,
    query_all,
    to_item,
)
from switchboard.routing.records import FinalStatus, OutboxEntry, Outcome

OUTCOME_DAYS = 8


class OutboxRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    # --- entries ---------------------------------------------------------------------------

    def enqueue(self, entry: OutboxEntry) -> bool:
        """Add an entry and its outcome record together; False if this message id was seen before."""
        item = to_item(
            entry,
            _entry_key(entry),
            status="PENDING",
            lease_until=0,
            gsi1pk="OUTBOX#WAITING",
            gsi1sk=f"{entry.instance}#{_sort(entry)}",
        )
        outcome = {
            **_outcome_key(entry.instance, entry.message_id),
            "status": "PENDING",
            "expiresAt": int((entry.enqueued_at + timedelta(days=OUTCOME_DAYS)).timestamp()),
        }
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._name,
                            "Item": outcome,
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {"Put": {"TableName": self._name, "Item": item}},
                ]
            )
        except ClientError as error:
            if "ConditionalCheckFailed" in cancellation_codes(error):
                return False
            raise
        return True

    def waiting(self, instance: str, limit: int) -> list[OutboxEntry]:
        """The instance's unfinished entries, oldest first."""
        page = self._table.query(
            KeyConditionExpression=Key("pk").eq(f"OUTBOX#{instance}"), ConsistentRead=True, Limit=limit
        )
        return [from_item(OutboxEntry, item) for item in page.get("Items", [])]

    def instances_waiting(self) -> list[str]:
        items = query_all(
            self._table,
            IndexName="GSI1",
            KeyConditionExpression=Key("gsi1pk").eq("OUTBOX#WAITING"),
            ProjectionExpression="instance",
        )
        return sorted({item["instance"] for item in items})

    def claim(self, entry: OutboxEntry, now: datetime, lease_seconds: int) -> OutboxEntry | None:
        """Take an entry for sending: it is PENDING, or its sender's lease ran out. The entry as
        claimed (a dead sender's `in_flight` included), read by the same write."""
        try:
            claimed = self._table.update_item(
                Key=_entry_key(entry),
                UpdateExpression="SET #status = :sending, lease_until = :until",
                ConditionExpression="attribute_exists(pk) AND (#status = :pending OR lease_until < :now)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":sending": "SENDING",
                    ":pending": "PENDING",
                    ":until": int((now + timedelta(seconds=lease_seconds)).timestamp()),
                    ":now": int(now.timestamp()),
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return None
            raise
        return from_item(OutboxEntry, claimed["Attributes"])

    def begin_part(self, entry: OutboxEntry) -> bool:
        """Mark the part `entry.parts_sent` in flight; False when the entry is finished or moved on."""
        try:
            self._table.update_item(
                Key=_entry_key(entry),
                UpdateExpression="SET in_flight = :part",
                ConditionExpression=(
                    "attribute_exists(pk) AND #status = :sending"
                    " AND (parts_sent = :part OR (attribute_not_exists(parts_sent) AND :part = :zero))"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":part": entry.parts_sent, ":sending": "SENDING", ":zero": 0},
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def advance(self, entry: OutboxEntry, parts_sent: int, part_chars: int, now: datetime, lease_seconds: int) -> bool:
        """Record that the first `parts_sent` parts of a claimed entry left (cut to `part_chars`)
        and renew the lease; False when the entry is no longer being sent from that count."""
        try:
            self._table.update_item(
                Key=_entry_key(entry),
                UpdateExpression="SET parts_sent = :sent, part_chars = :chars, lease_until = :until REMOVE in_flight",
                ConditionExpression=(
                    "attribute_exists(pk) AND #status = :sending"
                    " AND (parts_sent = :before OR (attribute_not_exists(parts_sent) AND :before = :zero))"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":sent": parts_sent,
                    ":chars": part_chars,
                    ":until": int((now + timedelta(seconds=lease_seconds)).timestamp()),
                    ":sending": "SENDING",
                    ":before": parts_sent - 1,
                    ":zero": 0,
                },
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def release(self, entry: OutboxEntry) -> None:
        self._table.update_item(
            Key=_entry_key(entry),
            UpdateExpression="SET #status = :pending, lease_until = :zero REMOVE in_flight",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":pending": "PENDING", ":zero": 0},
        )

    def finish(
        self, entry: OutboxEntry, status: FinalStatus, reason: str | None, provider_message_id: str | None
    ) -> bool:
        """Remove the entry and record its outcome in one transaction; False if it was already finished."""
        values: dict[str, Any] = {":status": status}
        expression = "SET #status = :status"
        if reason:
            values[":reason"] = reason
            expression += ", reason = :reason"
        if provider_message_id:
            values[":pmid"] = provider_message_id
            expression += ", provider_message_id = :pmid"
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Delete": {
                            "TableName": self._name,
                            "Key": _entry_key(entry),
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                    {
                        "Update": {
                            "TableName": self._name,
                            "Key": _outcome_key(entry.instance, entry.message_id),
                            "UpdateExpression": expression,
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": values,
                        }
                    },
                ]
            )
        except ClientError as error:
            if "ConditionalCheckFailed" in cancellation_codes(error):
                return False
            raise
        return True

    def outcome(self, instance: str, message_id: str) -> Outcome | None:
        item = self._table.get_item(Key=_outcome_key(instance, message_id), ConsistentRead=True).get("Item")
        return from_item(Outcome, item) if item else None

    # --- outgoing webhook secret -----------------------------------------------------------

    def set_webhook_digest(self, tenant: str, instance: str, digest: str, hint: str, at: datetime) -> None:
        self._table.put_item(
            Item={
                "pk": f"OUTHOOK#{instance}",
                "sk": META,
                "tenant": tenant,
                "digest": digest,
                "hint": hint,
                "created_at": at.isoformat(),
            }
        )

    def webhook_digest(self, tenant: str, instance: str) -> str | None:
        """The digest set for this instance (by its key) by its tenant."""
        item = self._table.get_item(Key={"pk": f"OUTHOOK#{instance}", "sk": META}, ConsistentRead=True).get("Item")
        return str(item["digest"]) if item and item.get("tenant") == tenant else None


def _sort(entry: OutboxEntry) -> str:
    return f"{entry.enqueued_at.isoformat()}#{entry.message_id}"


def _entry_key(entry: OutboxEntry) -> dict[str, str]:
    return {"pk": f"OUTBOX#{entry.instance}", "sk": _sort(entry)}


def _outcome_key(instance: str, message_id: str) -> dict[str, str]:
    return {"pk": f"OUTBOXMSG#{instance}#{message_id}", "sk": META}

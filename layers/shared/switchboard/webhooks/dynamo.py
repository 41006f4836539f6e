"""Provider webhook events: the dedupe marker and the durable event record, written together.

- marker `WHDEDUPE#<provider>#<instanceId>#<eventId>`: exists once per provider event, kept
  `DEDUPE_DAYS` (providers retry for days);
- record `WHEVENT#<provider>#<instanceId>#<eventId>`: the mapped event (never the raw body, only
  its SHA-256 `bodySha256`; the data bounded by `events.storable` so a 1 MB delivery fits the
  400 KB item) and its status (`pending` until every effect ran, then `applied`; `ignored` with
  its reason when it could not be mapped). A pending record sits in a sparse
  index (GSI1 `WHEVENTS#PENDING#<shard>`) so a sweep can re-apply what a crash left behind, and
  carries a short lease so two deliveries of one event never run its effects at the same time.

Both are written in one transaction with a guard (the catalog's check that what the event was
bound against is unchanged) and the writes that join the event's acceptance (its usage count).
A redelivery fails that transaction on the record, whose stored status comes back in the same
answer: an applied event costs that one request.

A delivery authenticated by a bearer token that covers no part of its body (`DeliveryToken`)
adds a third item to that transaction, `WHTOKEN#<provider>#<sha256 of the token>`: the digests
of the bodies the token brought (`bodies`), until when it may bring new ones (`openUntil`, set
when it is first seen) and its TTL (`expiresAt`, the token's own expiry). Its condition (first
sighting, a body it brought before, or still open) failing cancels the whole transaction:
nothing of the event is stored and the delivery is refused.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from switchboard.core.dynamo import META, cancellation_codes, is_condition_failure, query_all
from switchboard.core.events import TransactItem
from switchboard.providers.base import DeliveryToken
from switchboard.webhooks.events import Acceptance, EventStatus, StoredEvent

DEDUPE_DAYS = 4
RECORD_DAYS = 8
PENDING_SHARDS = 4
# Concurrent transactions on one item (the guard's stamp, a usage counter) may cancel each other
# ("TransactionConflict"): nothing was written, so the same transaction is simply tried again.
ACCEPT_ATTEMPTS = 3
CONFLICT_PAUSE_SECONDS = 0.02
BODY_DIGEST_CHARS = 32  # 128 bits of the body's SHA-256: a forged body cannot be made to match one


class EventStore:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    def accept(
        self,
        event: StoredEvent,
        lease_seconds: int,
        guard: TransactItem,
        writes: Sequence[TransactItem] = (),
        token: DeliveryToken | None = None,
    ) -> Acceptance:
        """Write marker and pending record (leased to the caller) with `writes`, if `guard` holds
        and the delivery's `token` may bring its body.

        Returns `accepted` when written, `stale` when the guard failed, `replayed` when the token
        may not bring this body, otherwise what the existing record says of a redelivery
        (`duplicate`, `in_flight`, `claimable`). Any other failure raises, and then nothing was
        written.
        """
        now = event.received_at
        marker = {
            **_marker_key(event),
            "expiresAt": _epoch(now + timedelta(days=DEDUPE_DAYS)),
            "receivedAt": now.isoformat(),
        }
        record = {
            **_record_base(event),
            "payload": json.dumps(
                {"seq": event.seq, "data": event.data, "instance": event.envelope_instance}, separators=(",", ":")
            ),
            "status": "pending",
            "leaseUntil": _epoch(now + timedelta(seconds=lease_seconds)),
            "expiresAt": _epoch(now + timedelta(days=RECORD_DAYS)),
            "gsi1pk": _pending_index(event),
            "gsi1sk": f"{now.isoformat()}#{event.event_id}",
        }
        # The guard first and the record before the marker: whichever way the reasons of a
        # cancelled transaction are reported, a stale guard and the stored record are seen.
        items = [
            guard,
            {
                "Put": {
                    "TableName": self._name,
                    "Item": record,
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {"Put": {"TableName": self._name, "Item": marker, "ConditionExpression": "attribute_not_exists(pk)"}},
            *self._token_use(event, token),
            *writes,
        ]
        reasons = self._transact(items)
        if reasons is None:
            return "accepted"
        codes = [reason.get("Code", "None") for reason in reasons]
        if codes[0] == "ConditionalCheckFailed":
            return "stale"
        if token is not None and codes[3] == "ConditionalCheckFailed":
            return "replayed"  # before the record's answer: a new body never passes for a duplicate
        if codes[1] == "ConditionalCheckFailed":
            return _redelivery(reasons[1].get("Item") or {}, now)
        if codes[2] == "ConditionalCheckFailed":
            return "duplicate"  # the marker without its record: accepted before, the record is gone
        refused = codes[4:] if token is not None else codes[3:]
        raise RuntimeError(f"a write joining the acceptance of {event.name} events was refused: {refused}")

    def _token_use(self, event: StoredEvent, token: DeliveryToken | None) -> list[TransactItem]:
        """The transaction entry that records `token` bringing this event's body, on condition
        that it may: its first sighting, a body it brought before, or before `openUntil`."""
        if token is None:
            return []
        now = _epoch(event.received_at)
        body = (event.body_sha256 or "")[:BODY_DIGEST_CHARS]
        update = {
            "TableName": self._name,
            "Key": {"pk": f"WHTOKEN#{event.provider_id}#{token.digest}", "sk": META},
            "UpdateExpression": (
                "ADD bodies :body SET openUntil = if_not_exists(openUntil, :open), "
                "expiresAt = if_not_exists(expiresAt, :expires)"
            ),
            "ConditionExpression": "attribute_not_exists(pk) OR contains(bodies, :digest) OR openUntil >= :now",
            "ExpressionAttributeValues": {
                ":body": {body},
                ":digest": body,
                ":open": now + token.new_bodies_for_seconds,
                ":expires": max(token.expires_at, now),
                ":now": now,
            },
        }
        return [{"Update": update}]

    def _transact(self, items: list[TransactItem]) -> list[dict[str, Any]] | None:
        """Run a transaction; None when it committed, else the reasons of a refused condition."""
        attempt = 1
        while True:
            try:
                self._client.transact_write_items(TransactItems=items)
            except ClientError as error:
                codes = cancellation_codes(error)
                if "ConditionalCheckFailed" in codes:
                    reasons: list[dict[str, Any]] = error.response.get("CancellationReasons") or [
                        {"Code": code} for code in codes
                    ]
                    return reasons
                if "TransactionConflict" not in codes or attempt == ACCEPT_ATTEMPTS:
                    raise
                time.sleep(random.uniform(0, CONFLICT_PAUSE_SECONDS * attempt))
                attempt += 1
            else:
                return None

    def record_ignored(self, event: StoredEvent, guard: TransactItem, token: DeliveryToken | None = None) -> Acceptance:
        """Keep an event that is acknowledged but never applied, with its reason (no payload),
        if `guard` holds and `token` may bring its body. Returns `accepted`, `stale`, `replayed`
        or `duplicate` (already recorded)."""
        now = event.received_at
        record = {
            **_record_base(event),
            "status": "ignored",
            "reason": event.reason or "",
            "expiresAt": _epoch(now + timedelta(days=RECORD_DAYS)),
        }
        put = {"Put": {"TableName": self._name, "Item": record, "ConditionExpression": "attribute_not_exists(pk)"}}
        reasons = self._transact([guard, put, *self._token_use(event, token)])
        if reasons is None:
            return "accepted"
        codes = [reason.get("Code", "None") for reason in reasons]
        if codes[0] == "ConditionalCheckFailed":
            return "stale"
        if token is not None and codes[2] == "ConditionalCheckFailed":
            return "replayed"
        return "duplicate"

    def claim(self, event: StoredEvent, now: datetime, lease_seconds: int) -> StoredEvent | EventStatus | None:
        """Lease a pending record to (re-)apply it.

        Returns the stored event when leased; otherwise what stands in the way, read from the
        same request: "applied", "pending" (leased by another delivery), or None (no record).
        """
        try:
            answer = self._table.update_item(
                Key=_record_key(event),
                UpdateExpression="SET leaseUntil = :until",
                ConditionExpression="attribute_exists(pk) AND #status = :pending AND leaseUntil < :now",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":until": _epoch(now + timedelta(seconds=lease_seconds)),
                    ":pending": "pending",
                    ":now": _epoch(now),
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if is_condition_failure(error):
                # The old item comes back in the low-level format: {"status": {"S": "applied"}}.
                status = (error.response.get("Item") or {}).get("status", {}).get("S")
                return "applied" if status == "applied" else "pending" if status else None
            raise
        return _stored(answer["Attributes"])

    def mark_applied(self, event: StoredEvent, now: datetime) -> None:
        """Applied records leave the pending index; the marker keeps deduplicating."""
        self._table.update_item(
            Key=_record_key(event),
            UpdateExpression="SET #status = :applied, appliedAt = :now REMOVE gsi1pk, gsi1sk, leaseUntil",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":applied": "applied", ":now": now.isoformat()},
        )

    def release(self, event: StoredEvent) -> None:
        """Give the lease back after a failed attempt so the provider's redelivery can run at once."""
        self._table.update_item(
            Key=_record_key(event),
            UpdateExpression="SET leaseUntil = :zero",
            ConditionExpression="#status = :pending",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":zero": 0, ":pending": "pending"},
        )

    def pending(self, received_before: datetime, limit: int) -> list[StoredEvent]:
        """Pending records received before a moment, oldest first per shard."""
        found: list[StoredEvent] = []
        for shard in range(PENDING_SHARDS):
            condition = Key("gsi1pk").eq(f"WHEVENTS#PENDING#{shard}") & Key("gsi1sk").lt(received_before.isoformat())
            for item in query_all(self._table, IndexName="GSI1", KeyConditionExpression=condition):
                found.append(_stored(item))
                if len(found) >= limit:
                    return found
        return found


def _redelivery(record: dict[str, Any], now: datetime) -> Acceptance:
    """What the stored record (low-level format: {"status": {"S": "applied"}}) says of a redelivery."""
    status = record.get("status", {}).get("S")
    if status != "pending":
        return "duplicate"  # applied, or ignored: acknowledged before either way
    lease = int(record.get("leaseUntil", {}).get("N", "0"))
    return "in_flight" if lease >= _epoch(now) else "claimable"


def _identity(event: StoredEvent) -> str:
    return f"{event.provider_id}#{event.provider_instance_id}#{event.event_id}"


def _marker_key(event: StoredEvent) -> dict[str, str]:
    return {"pk": f"WHDEDUPE#{_identity(event)}", "sk": META}


def _record_base(event: StoredEvent) -> dict[str, Any]:
    """What every event record holds, applied or ignored: its key, its binding and the body's digest."""
    return {
        **_record_key(event),
        "providerId": event.provider_id,
        "providerInstanceId": event.provider_instance_id,
        "instanceKey": event.instance_key,
        "name": event.name,
        "eventId": event.event_id,
        **_digest(event),
        "receivedAt": event.received_at.isoformat(),
    }


def _record_key(event: StoredEvent) -> dict[str, str]:
    return {"pk": f"WHEVENT#{_identity(event)}", "sk": META}


def _pending_index(event: StoredEvent) -> str:
    shard = int(hashlib.sha256(event.event_id.encode()).hexdigest()[:8], 16) % PENDING_SHARDS
    return f"WHEVENTS#PENDING#{shard}"


def _digest(event: StoredEvent) -> dict[str, str]:
    return {"bodySha256": event.body_sha256} if event.body_sha256 else {}


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _stored(item: dict[str, Any]) -> StoredEvent:
    payload = json.loads(item["payload"])
    return StoredEvent(
        provider_id=item["providerId"],
        provider_instance_id=item["providerInstanceId"],
        instance_key=item["instanceKey"],
        name=item["name"],
        event_id=item["eventId"],
        seq=payload.get("seq"),
        data=payload.get("data") or {},
        envelope_instance=payload.get("instance"),
        received_at=datetime.fromisoformat(item["receivedAt"]).astimezone(UTC),
        status=item["status"],
        body_sha256=item.get("bodySha256"),
    )

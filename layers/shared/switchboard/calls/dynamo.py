"""Slots, call records and dial attempts in MainTable (this module owns the line's `occupants`).

Items, all in the partition of the instance's line (`pk = LINE#<instance key>`, its tenant and name):

- the line (`sk = #META`, shared with the call limit): `occupants.<id>` entries written only here;
- a dial attempt (`sk = DIAL#<reservation id>`), kept two days;
- a call record (`sk = CALL#<provider>#<provider instance id>#<callId>`), kept 30 days after its end;
  while live it is also in GSI2 under `LINE#<instance key>#LIVECALL`, so reconciliation reads live calls only.

Admission is one transaction of two items: a check that the attempt is still `pending`, and the
conditional update of the line (`size(occupants) < limit AND the id is not there yet`): exact
under concurrency, idempotent by reservation id, one request. The check is what makes a replay
of the same Idempotency-Key that read the attempt before it was bound unable to reserve again:
binding removes the reservation in the same transaction that marks the attempt `connected`, so
without the check a late replay would put back a reservation nothing ever frees. Every other
change of a record and of its line entry is one transaction conditioned on the record's
revision, so the entry is always the projection of the record.

DynamoDB cancels a transaction that meets another one in flight on the same item
(`TransactionConflict`); the line is such an item for every dial, bind and release of a
connection, so those transactions are tried again a few times after a short random pause.
"""

from __future__ import annotations

import random
import time
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Key
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from switchboard.call_limit.domain import Line, Occupant
from switchboard.call_limit.dynamo import line_from_item, line_key
from switchboard.calls.domain import (
    Attachment,
    AttemptNotPending,
    CallRecord,
    DialAttempt,
    LineNotReady,
    StaleRecord,
    occupant_value,
)
from switchboard.core.dynamo import cancellation_codes, from_item, is_condition_failure, query_all, to_item
from switchboard.core.errors import Conflict, LineBusy

ATTEMPT_TTL = timedelta(days=2)
ENDED_CALL_TTL = timedelta(days=30)
# A conflict lasts as long as the other transaction (milliseconds): a few short random pauses
# outlast it without holding a request for long.
CONFLICT_ATTEMPTS = 5
CONFLICT_PAUSE_SECONDS = 0.02
BATCH_GET_KEYS = 100  # DynamoDB's limit per BatchGetItem
_deserializer = TypeDeserializer()


def _attempt_key(tenant: str, instance: str, attempt_id: str) -> dict[str, str]:
    return {"pk": line_key(tenant, instance)["pk"], "sk": f"DIAL#{attempt_id}"}


def _call_key(record: CallRecord) -> dict[str, str]:
    return call_key(record.tenant, record.instance, record.provider_id, record.provider_instance_id, record.call_id)


def call_key(tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str) -> dict[str, str]:
    return {"pk": line_key(tenant, instance)["pk"], "sk": f"CALL#{provider_id}#{provider_instance_id}#{call_id}"}


def _occupant_call_key(tenant: str, instance: str, occupant_id: str) -> dict[str, str]:
    """A call entry's record: `call#<provider>#<instanceId>#<callId>` is `CALL#<same>` in its partition."""
    return {"pk": line_key(tenant, instance)["pk"], "sk": "CALL#" + occupant_id.removeprefix("call#")}


def _live_index(tenant: str, instance: str) -> str:
    return f"{line_key(tenant, instance)['pk']}#LIVECALL"


def _epoch(delta: timedelta) -> int:
    return int((datetime.now(UTC) + delta).timestamp())


class CallRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    # --- the line --------------------------------------------------------------------------

    def line(self, tenant: str, instance: str) -> Line | None:
        item = self._table.get_item(Key=line_key(tenant, instance), ConsistentRead=True).get("Item")
        return line_from_item(instance, item) if item else None

    def reserve(self, attempt: DialAttempt) -> bool:
        """Admit the attempt's reservation if a slot is free: True if admitted now, False if it already was.

        One transaction: the attempt must still be `pending`, and the line must have a free slot
        or hold this reservation already. Raises AttemptNotPending (read the attempt again),
        LineBusy (with the limit and the occupants) when the line is full, LineNotReady when it
        has no limit or no occupants map yet.
        """
        items = [
            {
                "ConditionCheck": {
                    "TableName": self._name,
                    "Key": _attempt_key(attempt.tenant, attempt.instance, attempt.id),
                    "ConditionExpression": "#state = :pending",
                    "ExpressionAttributeNames": {"#state": "state"},
                    "ExpressionAttributeValues": {":pending": "pending"},
                }
            },
            {
                "Update": {
                    "TableName": self._name,
                    "Key": line_key(attempt.tenant, attempt.instance),
                    "UpdateExpression": "SET occupants.#id = :occupant",
                    "ConditionExpression": "size(occupants) < #limit AND attribute_not_exists(occupants.#id)",
                    "ExpressionAttributeNames": {"#id": attempt.id, "#limit": "limit"},
                    "ExpressionAttributeValues": {":occupant": occupant_value(attempt.occupant())},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ]
        try:
            self._transact(items)
        except ClientError as error:
            codes = cancellation_codes(error)
            if codes[:1] == ["ConditionalCheckFailed"]:
                raise AttemptNotPending(attempt.id) from error
            if codes[1:2] != ["ConditionalCheckFailed"]:
                raise
            old = self._refused_line_item(attempt, error)
            line = line_from_item(attempt.instance, {"tenant": attempt.tenant, **old}) if old else None
            if line is None or line.limit is None or "occupants" not in old:
                raise LineNotReady(line) from error
            if attempt.id in line.occupants:
                return False
            raise LineBusy(
                "no free call slot on this connection",
                limit=line.limit,
                occupants=[occupant.model_dump(by_alias=True) for occupant in line.occupants.values()],
            ) from error
        return True

    def _refused_line_item(self, attempt: DialAttempt, error: ClientError) -> dict[str, Any]:
        """The line item as the refused admission saw it (its cancellation reason), else as read now."""
        reasons = error.response.get("CancellationReasons") or []
        raw = reasons[1].get("Item") if len(reasons) > 1 else None
        if raw:
            return {name: _deserializer.deserialize(value) for name, value in raw.items()}
        item = self._table.get_item(Key=line_key(attempt.tenant, attempt.instance), ConsistentRead=True).get("Item")
        return dict(item or {})

    def ensure_line(self, tenant: str, instance: str) -> None:
        """Create the line item or its `occupants` map if missing; never touches the call limit's attributes."""
        self._table.update_item(
            Key=line_key(tenant, instance),
            UpdateExpression="SET occupants = if_not_exists(occupants, :empty), tenant = if_not_exists(tenant, :t)",
            ExpressionAttributeValues={":empty": {}, ":t": tenant},
        )

    # --- dial attempts ---------------------------------------------------------------------

    def create_attempt(self, attempt: DialAttempt) -> DialAttempt | None:
        """Store a new attempt; if its id exists already (a retry), return the stored one instead."""
        item = to_item(
            attempt, _attempt_key(attempt.tenant, attempt.instance, attempt.id), expiresAt=_epoch(ATTEMPT_TTL)
        )
        try:
            self._table.put_item(
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            old = {name: _deserializer.deserialize(value) for name, value in error.response.get("Item", {}).items()}
            return (
                from_item(DialAttempt, old) if old else self.get_attempt(attempt.tenant, attempt.instance, attempt.id)
            )
        return None

    def reopen_attempt(self, attempt: DialAttempt) -> bool:
        """A retry of a released attempt tries again: released -> pending, once."""
        try:
            self._table.update_item(
                Key=_attempt_key(attempt.tenant, attempt.instance, attempt.id),
                UpdateExpression="SET #state = :pending REMOVE release_reason",
                ConditionExpression="#state = :released",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues={":pending": "pending", ":released": "released"},
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise
        return True

    def get_attempt(self, tenant: str, instance: str, attempt_id: str) -> DialAttempt | None:
        item = self._table.get_item(Key=_attempt_key(tenant, instance, attempt_id), ConsistentRead=True).get("Item")
        return from_item(DialAttempt, item) if item else None

    def pending_attempts(self, tenant: str, instance: str) -> list[DialAttempt]:
        """The attempts whose reservation is on the line: at most `limit` items, read by key."""
        line = self.line(tenant, instance)
        ids = [key for key, occupant in (line.occupants.items() if line else []) if occupant.kind == "reservation"]
        attempts = self.attempts(tenant, instance, ids).values()
        return sorted((attempt for attempt in attempts if attempt.state == "pending"), key=lambda a: a.created_at)

    def attempts(self, tenant: str, instance: str, attempt_ids: Collection[str]) -> dict[str, DialAttempt]:
        """The stored attempts among `attempt_ids`, by id (consistent batch reads; a missing one is absent)."""
        keys = [_attempt_key(tenant, instance, attempt_id) for attempt_id in sorted(set(attempt_ids))]
        return {attempt.id: attempt for attempt in (from_item(DialAttempt, item) for item in self._batch_get(keys))}

    def calls_of_occupants(self, tenant: str, instance: str, occupant_ids: Collection[str]) -> dict[str, CallRecord]:
        """The call records behind call entries of the line, by occupant id (consistent batch reads)."""
        keys = [_occupant_call_key(tenant, instance, occupant_id) for occupant_id in sorted(set(occupant_ids))]
        records = (from_item(CallRecord, item) for item in self._batch_get(keys))
        return {record.occupant_id: record for record in records}

    def _batch_get(self, keys: list[dict[str, str]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for start in range(0, len(keys), BATCH_GET_KEYS):
            request = {self._name: {"Keys": keys[start : start + BATCH_GET_KEYS], "ConsistentRead": True}}
            while request:  # keys left unprocessed (throttling) are asked again
                answer = self._client.batch_get_item(RequestItems=request)
                items.extend(answer.get("Responses", {}).get(self._name, []))
                request = answer.get("UnprocessedKeys") or {}
        return items

    def release(self, attempt: DialAttempt, reason: str) -> bool:
        """Free a pending attempt's slot (one transaction with its state); False if it was not pending."""
        try:
            self._transact(
                [
                    {
                        "Update": {
                            "TableName": self._name,
                            "Key": _attempt_key(attempt.tenant, attempt.instance, attempt.id),
                            "UpdateExpression": "SET #state = :released, release_reason = :reason",
                            "ConditionExpression": "#state = :pending",
                            "ExpressionAttributeNames": {"#state": "state"},
                            "ExpressionAttributeValues": {
                                ":released": "released",
                                ":pending": "pending",
                                ":reason": reason,
                            },
                        }
                    },
                    {
                        "Update": {
                            "TableName": self._name,
                            "Key": line_key(attempt.tenant, attempt.instance),
                            "UpdateExpression": "REMOVE occupants.#id",
                            "ConditionExpression": "attribute_exists(occupants)",
                            "ExpressionAttributeNames": {"#id": attempt.id},
                        }
                    },
                ]
            )
        except ClientError as error:
            codes = cancellation_codes(error)
            if codes[:1] == ["ConditionalCheckFailed"]:
                return False
            if codes[1:2] == ["ConditionalCheckFailed"]:  # no occupants map yet: nothing can be reserved there
                self.ensure_line(attempt.tenant, attempt.instance)
                return self.release(attempt, reason)
            raise
        return True

    # --- call records ----------------------------------------------------------------------

    def get_call(
        self, tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str
    ) -> CallRecord | None:
        key = call_key(tenant, instance, provider_id, provider_instance_id, call_id)
        item = self._table.get_item(Key=key, ConsistentRead=True).get("Item")
        return from_item(CallRecord, item) if item else None

    def live_calls(self, tenant: str, instance: str) -> list[CallRecord]:
        """Live calls through the sparse index entry a record carries only while live (GSI2)."""
        index = _live_index(tenant, instance)
        items = query_all(self._table, IndexName="GSI2", KeyConditionExpression=Key("gsi2pk").eq(index))
        return [from_item(CallRecord, item) for item in items]

    def save(self, previous: CallRecord | None, record: CallRecord, attempt: DialAttempt | None = None) -> CallRecord:
        """Write `record` (read as `previous`) and its line entry; bind `attempt` to it if given.

        One transaction: the record conditioned on the revision read, the line entry set or
        removed to match the record's projection, the attempt's reservation removed and the
        attempt marked connected (conditioned on it still being pending). Raises StaleRecord when
        a condition failed (read again), LineNotReady when the line has no occupants map yet.
        """
        stored = record.model_copy(update={"rev": (previous.rev if previous else 0) + 1})
        extra: dict[str, Any] = {"expiresAt": _epoch(ENDED_CALL_TTL)} if stored.ended else {}
        if stored.live:  # a sparse index of live calls: reconciliation reads only those
            extra |= {"gsi2pk": _live_index(stored.tenant, stored.instance), "gsi2sk": stored.call_id}
        record_put: dict[str, Any] = {
            "TableName": self._name,
            "Item": to_item(stored, _call_key(stored), **extra),
        }
        if previous is None:
            record_put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            record_put["ConditionExpression"] = "rev = :rev"
            record_put["ExpressionAttributeValues"] = {":rev": previous.rev}
        writes: list[tuple[str, dict[str, Any]]] = [("record", {"Put": record_put})]
        line_update = self._line_change(previous, stored, attempt)
        if line_update is not None:
            writes.append(("line", {"Update": line_update}))
        if attempt is not None:
            writes.append(
                (
                    "attempt",
                    {
                        "Update": {
                            "TableName": self._name,
                            "Key": _attempt_key(attempt.tenant, attempt.instance, attempt.id),
                            "UpdateExpression": "SET #state = :connected, call_id = :call",
                            "ConditionExpression": "#state = :pending",
                            "ExpressionAttributeNames": {"#state": "state"},
                            "ExpressionAttributeValues": {
                                ":connected": "connected",
                                ":pending": "pending",
                                ":call": stored.call_id,
                            },
                        }
                    },
                )
            )
        self._write(writes, stored)
        return stored

    def _line_change(
        self, previous: CallRecord | None, record: CallRecord, attempt: DialAttempt | None
    ) -> dict[str, Any] | None:
        before = previous.occupant() if previous else None
        after = record.occupant()
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        sets: list[str] = []
        removes: list[str] = []
        if after is not None and after != before:
            names["#call"] = record.occupant_id
            values[":occupant"] = occupant_value(after)
            sets.append("occupants.#call = :occupant")
        elif after is None and before is not None:
            names["#call"] = record.occupant_id
            removes.append("occupants.#call")
        if attempt is not None:
            names["#res"] = attempt.id
            removes.append("occupants.#res")
        if not sets and not removes:
            return None
        expression = " ".join(
            part
            for part in ("SET " + ", ".join(sets) if sets else "", "REMOVE " + ", ".join(removes) if removes else "")
            if part
        )
        update: dict[str, Any] = {
            "TableName": self._name,
            "Key": line_key(record.tenant, record.instance),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": names,
        }
        update["ConditionExpression"] = "attribute_exists(occupants)"  # a nested path needs the map
        if values:
            update["ExpressionAttributeValues"] = values
        return update

    def _write(self, writes: list[tuple[str, dict[str, Any]]], record: CallRecord) -> None:
        if len(writes) == 1:
            try:
                self._client.put_item(**writes[0][1]["Put"])
            except ClientError as error:
                if is_condition_failure(error):
                    raise StaleRecord(record.occupant_id) from error
                raise
            return
        try:
            self._transact([write for _, write in writes])
        except ClientError as error:
            codes = cancellation_codes(error)
            failed = {kind for (kind, _), code in zip(writes, codes, strict=False) if code == "ConditionalCheckFailed"}
            if failed & {"record", "attempt"}:
                raise StaleRecord(record.occupant_id) from error
            if "line" in failed:
                raise LineNotReady(None) from error
            raise
        except Conflict as contended:  # still contended after the pauses: read again, decide again
            raise StaleRecord(record.occupant_id) from contended

    # --- stray line entries ----------------------------------------------------------------

    def release_stray(
        self, tenant: str, instance: str, occupant: Occupant, behind: DialAttempt | CallRecord | None
    ) -> bool:
        """Remove a line entry that nothing holds, on the condition that what it was judged by has
        not moved since: a reservation's attempt is still missing or not pending; a call entry's
        record is still missing or at the revision read. False when a condition failed."""
        if occupant.kind == "reservation":
            check: dict[str, Any] = {
                "Key": _attempt_key(tenant, instance, occupant.id),
                "ConditionExpression": "attribute_not_exists(pk) OR #state <> :pending",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": {":pending": "pending"},
            }
        elif isinstance(behind, CallRecord):
            check = {
                "Key": _occupant_call_key(tenant, instance, occupant.id),
                "ConditionExpression": "rev = :rev",
                "ExpressionAttributeValues": {":rev": behind.rev},
            }
        else:
            check = {
                "Key": _occupant_call_key(tenant, instance, occupant.id),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        try:
            self._transact(
                [
                    {"ConditionCheck": {"TableName": self._name, **check}},
                    {
                        "Update": {
                            "TableName": self._name,
                            "Key": line_key(tenant, instance),
                            "UpdateExpression": "REMOVE occupants.#id",
                            "ConditionExpression": "attribute_exists(occupants.#id)",
                            "ExpressionAttributeNames": {"#id": occupant.id},
                        }
                    },
                ]
            )
        except ClientError as error:
            if "ConditionalCheckFailed" in cancellation_codes(error):
                return False
            raise
        return True

    def _transact(self, items: list[dict[str, Any]]) -> None:
        """TransactWriteItems, tried again after a short random pause while another transaction on
        one of its items is in flight; any other cancellation is the caller's to read. Raises
        Conflict (`line_contended`, a 409 to try again) when the conflict outlasts the pauses."""
        for attempt in range(CONFLICT_ATTEMPTS):
            try:
                self._client.transact_write_items(TransactItems=items)
            except ClientError as error:
                codes = cancellation_codes(error)
                if "TransactionConflict" not in codes or "ConditionalCheckFailed" in codes:
                    raise
                if attempt == CONFLICT_ATTEMPTS - 1:
                    raise Conflict(
                        "other changes of this connection's calls are in flight: try again",
                        code="line_contended",
                    ) from error
                time.sleep(random.uniform(0, CONFLICT_PAUSE_SECONDS * 2**attempt))
                continue
            return


# --- media attachments and the reconcile gate (items in the line's partition) ------------------

ATTACHMENT_TTL = timedelta(days=1)
RECONCILE_GATE_SK = "RECONCILE#GATE"


def _attachment_key(record: CallRecord) -> dict[str, str]:
    call = _call_key(record)
    return {"pk": call["pk"], "sk": "MEDIA#" + call["sk"].removeprefix("CALL#")}


class AttachmentRepository:
    """Who a call's media session was attached for (last writer wins: only the owner writes it)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def get_attachment(self, record: CallRecord) -> Attachment | None:
        item = self._table.get_item(Key=_attachment_key(record), ConsistentRead=True).get("Item")
        return from_item(Attachment, item) if item else None

    def put_attachment(self, attachment: Attachment) -> None:
        key = _attachment_key(
            CallRecord(
                tenant=attachment.tenant,
                instance=attachment.instance,
                provider_id=attachment.provider_id,
                provider_instance_id=attachment.provider_instance_id,
                call_id=attachment.call_id,
            )
        )
        self._table.put_item(Item=to_item(attachment, key, expiresAt=_epoch(ATTACHMENT_TTL)))


class ReconcileGate:
    """At most one on-demand reconciliation per connection per window, shared by every replica.

    One conditional write on the connection's gate item: it opens a window only when none is
    open (`until` absent or past), so two replicas asking at once get one `True`.
    """

    def __init__(self, table: Any) -> None:
        self._table = table

    def enter(self, tenant: str, instance: str, now: float, window_seconds: float) -> float | None:
        """None when the caller may reconcile now; else the seconds left in the open window."""
        until = now + window_seconds
        try:
            self._table.update_item(
                Key={"pk": line_key(tenant, instance)["pk"], "sk": RECONCILE_GATE_SK},
                UpdateExpression="SET #until = :until, tenant = :tenant, expiresAt = :ttl",
                ConditionExpression="attribute_not_exists(#until) OR #until <= :now",
                ExpressionAttributeNames={"#until": "until"},
                ExpressionAttributeValues={
                    ":until": Decimal(str(until)),
                    ":now": Decimal(str(now)),
                    ":tenant": tenant,
                    ":ttl": int(until) + 3600,
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            old = error.response.get("Item", {}).get("until")
            left = float(_deserializer.deserialize(old)) - now if old else window_seconds
            return max(0.0, left)
        return None

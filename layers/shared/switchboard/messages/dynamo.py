"""Message persistence: the message, the recipient affinity and the provider-message index.

Items (main table):
- message: pk `MESSAGE#<id>`, sk `#META`, with its trace (a list, appended per attempt);
- affinity: pk `AFFINITY#<tenant>#<recipient>`, sk `#META`: the number that last sent to the
  recipient (`number_id`, `number`, `sent_at`) and, one top-level `heard_<number id>` (epoch
  seconds) per number, when the recipient last wrote to that number (an O(1) read, never a scan
  of messages). The send writes the first, the acceptance of an incoming message the second
  (`heard_write`), each an update leaving the other's attributes alone; an item may hold only
  `heard_*` (someone who wrote in and was never sent anything). Like the affinity it is, the
  item has no TTL: it lives as long as the tenant knows the recipient;
- receipt index: pk `PROVIDERMSG#<provider id>#<provider message id>`, sk `#META` -> message id;
- spam guard history: pk `SPAMGUARD#<instance key>#<recipient>`, sk `#META` (see `spam_guard.py`).

Per message the worker makes: the claim (one conditional `UpdateItem` that also returns the
message), the affinity read (pool mode), the round-robin ticket (affinity miss), the spam guard's history
(a guarded instance), the route in flight (before the provider call) and the outcome (SENT with
affinity, index and the spam guard's history in one transaction). Every transition is conditional on
the status and, while SENDING, on the claimant's lease token; a WAITING message is claimable
only by the job carrying its `wake_token`.
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from switchboard.core.clock import utcnow
from switchboard.core.dynamo import (
    META,
    cancellation_codes,
    entity_key,
    from_item,
    is_condition_failure,
    owned_or_missing,
    to_item,
)
from switchboard.core.errors import AlreadyExists, AlreadyFinal
from switchboard.messages.domain import (
    RECEIPT_TRANSITIONS,
    Message,
    MessageStatus,
    PendingRoute,
    TraceEvent,
)
from switchboard.messages.spam_guard import KeptTexts, SentText
from switchboard.pool.domain import Affinity

NOT_EXISTS = "attribute_not_exists(pk)"
_NAMES = {"#status": "status", "#trace": "trace"}
# A number's "heard from" is one top-level attribute per number: SET on a nested map path fails
# on an item that does not exist yet, and a top-level one is created with the item.
HEARD_PREFIX = "heard_"
SENT_ATTEMPTS = 3
CONFLICT_PAUSE_SECONDS = 0.02


def message_key(message_id: str) -> dict[str, str]:
    return entity_key("MESSAGE", message_id)


def affinity_key(tenant: str, recipient: str) -> dict[str, str]:
    return {"pk": f"AFFINITY#{tenant}#{recipient}", "sk": META}


def receipt_key(provider_id: str, provider_message_id: str) -> dict[str, str]:
    return {"pk": f"PROVIDERMSG#{provider_id}#{provider_message_id}", "sk": META}


class MessageRepository:
    def __init__(self, table: Any) -> None:
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    # --- API side ----------------------------------------------------------------------------

    def create(self, message: Message) -> None:
        try:
            self._table.put_item(Item=to_item(message, message_key(message.id)), ConditionExpression=NOT_EXISTS)
        except ClientError as error:
            if is_condition_failure(error):
                raise AlreadyExists("message already exists") from error
            raise

    def get(self, tenant: str, message_id: str) -> Message:
        item = self._table.get_item(Key=message_key(message_id), ConsistentRead=True).get("Item")
        return from_item(Message, owned_or_missing(item, tenant, "message"))

    # --- worker side -------------------------------------------------------------------------

    def claim(
        self, message_id: str, tenant: str, token: str, lease_seconds: int, wake: str | None = None
    ) -> Message | None:
        """QUEUED (or SENDING with an expired lease, or WAITING for the job whose `wake` is its
        `wake_token`) -> SENDING under `token`; the claimed message.

        None when the message is gone, final, leased to another worker right now, or waiting for
        another job.
        """
        now = int(time.time())
        condition = "#status = :queued OR (#status = :sending AND lease_until < :now)"
        values: dict[str, Any] = {
            ":sending": MessageStatus.SENDING.value,
            ":queued": MessageStatus.QUEUED.value,
            ":token": token,
            ":until": now + lease_seconds,
            ":now": now,
            ":tenant": tenant,
        }
        if wake is not None:
            condition += " OR (#status = :waiting AND wake_token = :wake)"
            values.update({":waiting": MessageStatus.WAITING.value, ":wake": wake})
        try:
            answer = self._table.update_item(
                Key=message_key(message_id),
                UpdateExpression="SET #status = :sending, lease_token = :token, lease_until = :until",
                ConditionExpression=f"tenant = :tenant AND ({condition})",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return None
            raise
        return from_item(Message, answer["Attributes"])

    def affinity(self, tenant: str, recipient: str) -> Affinity | None:
        """The recipient's affinity and the numbers that heard from them, in one read."""
        item = self._table.get_item(Key=affinity_key(tenant, recipient), ConsistentRead=True).get("Item")
        return _affinity(item) if item else None

    def heard_write(self, tenant: str, recipient: str, number_id: str, at: datetime) -> dict[str, Any]:
        """The transaction entry recording that `recipient` wrote to `number_id` at `at`: it joins
        the acceptance of the incoming message (no request of its own) and cannot be refused."""
        return {
            "Update": {
                "TableName": self._name,
                "Key": affinity_key(tenant, recipient),
                "UpdateExpression": "SET #heard = :at, tenant = :tenant",
                "ExpressionAttributeNames": {"#heard": f"{HEARD_PREFIX}{number_id}"},
                "ExpressionAttributeValues": {":at": int(at.timestamp()), ":tenant": tenant},
            }
        }

    def record_sent(
        self,
        message: Message,
        *,
        number_id: str,
        source_number: str,
        instance: str | None,
        provider_id: str,
        provider_message_id: str,
        events: list[TraceEvent],
        remember_affinity: bool,
        spam_history: KeptTexts | None = None,
    ) -> Message:
        """QUEUED -> SENT, the receipt index, (if `remember_affinity`) the affinity and (if given) the
        spam guard's history, in one transaction: a send that is not ours to record (AlreadyFinal)
        leaves no history either.

        Raises AlreadyFinal when the message is no longer QUEUED (another delivery finished it).
        """
        now = utcnow()
        sent = message.model_copy(
            update={
                "status": MessageStatus.SENT,
                "number_id": number_id,
                "source_number": source_number,
                "instance": instance,
                "provider_id": provider_id,
                "provider_message_id": provider_message_id,
                "attempts": message.attempts + 1,
                "sent_at": now,
                "updated_at": now,
                "pending": None,
                "lease_token": None,
                "trace": [*message.trace, *events],
            }
        )
        update = self._transition(
            message,
            sets={
                "#status": MessageStatus.SENT.value,
                "number_id": number_id,
                "source_number": source_number,
                "provider_id": provider_id,
                "provider_message_id": provider_message_id,
                "sent_at": now.isoformat(),
                "updated_at": now.isoformat(),
                "instance": instance,
            },
            events=events,
            remove=["pending", "last_error", "lease_token", "lease_until"],
        )
        writes: list[dict[str, Any]] = [
            {"Update": {"TableName": self._name, **update}},
            {
                "Put": {
                    "TableName": self._name,
                    "Item": {
                        **receipt_key(provider_id, provider_message_id),
                        "tenant": message.tenant,
                        "messageId": message.id,
                    },
                }
            },
        ]
        if remember_affinity:
            # An update, not a put: the item's `heard_*` (who the recipient wrote to) stay.
            writes.append(
                {
                    "Update": {
                        "TableName": self._name,
                        "Key": affinity_key(message.tenant, message.to),
                        "UpdateExpression": "SET #n = :id, #d = :number, #s = :at, #t = :tenant",
                        "ExpressionAttributeNames": {
                            "#n": "number_id",
                            "#d": "number",
                            "#s": "sent_at",
                            "#t": "tenant",
                        },
                        "ExpressionAttributeValues": {
                            ":id": number_id,
                            ":number": source_number,
                            ":at": now.isoformat(),
                            ":tenant": message.tenant,
                        },
                    }
                }
            )
        if spam_history is not None:
            writes.append({"Put": {"TableName": self._name, "Item": spam_history_item(spam_history)}})
        self._transact_sent(writes)
        return sent

    def _transact_sent(self, writes: list[dict[str, Any]]) -> None:
        """The SENT transaction. The message has left: a "TransactionConflict" (the recipient's
        affinity item written at that moment by the acceptance of a message they sent) wrote
        nothing and is simply tried again, rather than leaving a sent message to look
        interrupted. Raises AlreadyFinal."""
        attempt = 1
        while True:
            try:
                self._client.transact_write_items(TransactItems=writes)
            except ClientError as error:
                codes = cancellation_codes(error)
                if codes[:1] == ["ConditionalCheckFailed"]:
                    raise AlreadyFinal("the message is no longer held by this worker") from error
                if "TransactionConflict" not in codes or attempt == SENT_ATTEMPTS:
                    raise
                time.sleep(random.uniform(0, CONFLICT_PAUSE_SECONDS * attempt))
                attempt += 1
            else:
                return

    def record_failed(self, message: Message, reason: str, events: list[TraceEvent]) -> Message:
        """QUEUED or claimed -> FAILED with `reason`. Raises AlreadyFinal."""
        now = utcnow()
        self._update(
            self._transition(
                message,
                sets={"#status": MessageStatus.FAILED.value, "failure_reason": reason, "updated_at": now.isoformat()},
                events=events,
                remove=["pending", "lease_token", "lease_until"],
            )
        )
        return message.model_copy(
            update={
                "status": MessageStatus.FAILED,
                "failure_reason": reason,
                "attempts": message.attempts + 1,
                "updated_at": now,
                "pending": None,
                "lease_token": None,
                "trace": [*message.trace, *events],
            }
        )

    def record_retry(
        self, message: Message, error_code: str, events: list[TraceEvent], pending: PendingRoute | None
    ) -> None:
        """Back to QUEUED (lease released): one more attempt, its trace, the route to retry first."""
        sets: dict[str, Any] = {
            "#status": MessageStatus.QUEUED.value,
            "last_error": error_code,
            "updated_at": utcnow().isoformat(),
        }
        if pending is not None:
            sets["pending"] = pending.model_dump()
        remove = ["lease_token", "lease_until"]
        self._update(self._transition(message, sets=sets, events=events, remove=remove))

    def record_in_flight(self, message: Message, route: PendingRoute) -> Message:
        """Mark the route a send is about to go through, as the claimant that still holds it.

        Raises AlreadyFinal when this worker's lease was taken over (it expired and another
        worker claimed the message): this worker must not send.
        """
        try:
            self._table.update_item(
                Key=message_key(message.id),
                UpdateExpression="SET in_flight = :route",
                ConditionExpression="tenant = :tenant AND #status = :sending AND lease_token = :token",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":route": route.model_dump(),
                    ":tenant": message.tenant,
                    ":sending": MessageStatus.SENDING.value,
                    ":token": message.lease_token,
                },
            )
        except ClientError as error:
            if is_condition_failure(error):
                raise AlreadyFinal("the message is no longer held by this worker") from error
            raise
        return message.model_copy(update={"in_flight": route})

    def record_waiting(self, message: Message, next_check_at: datetime, events: list[TraceEvent]) -> Message:
        """Claimed -> WAITING; only the delayed job carrying this claim's lease token (now the
        `wake_token`) may claim it again. Raises AlreadyFinal.

        The first wait counts as an attempt with its trace; a later re-check that still finds no
        number appends nothing (a day of them must not grow the item towards DynamoDB's 400 KB).
        """
        first = message.wait_checks == 0
        now = utcnow()
        sets: dict[str, Any] = {
            "#status": MessageStatus.WAITING.value,
            "wake_token": message.lease_token,
            "next_check_at": next_check_at.isoformat(),
            "wait_checks": message.wait_checks + 1,
            "updated_at": now.isoformat(),
        }
        self._update(
            self._transition(
                message, sets=sets, events=events, remove=["lease_token", "lease_until"], count_attempt=first
            )
        )
        return message.model_copy(
            update={
                "status": MessageStatus.WAITING,
                "wake_token": message.lease_token,
                "next_check_at": next_check_at,
                "wait_checks": message.wait_checks + 1,
                "attempts": message.attempts + (1 if first else 0),
                "updated_at": now,
                "lease_token": None,
                "in_flight": None,
                "trace": [*message.trace, *events],
            }
        )

    # --- receipts ----------------------------------------------------------------------------

    def message_for_receipt(self, provider_id: str, provider_message_id: str, tenant: str) -> str | None:
        item = self._table.get_item(Key=receipt_key(provider_id, provider_message_id)).get("Item")
        if not item or item.get("tenant") != tenant:
            return None
        return str(item["messageId"])

    def advance(self, tenant: str, message_id: str, status: MessageStatus, at: datetime, event: TraceEvent) -> Message:
        """Move the message forward to `status` (delivered/read/failed receipts).

        Raises AlreadyFinal when it is already there or beyond (a duplicate or late receipt).
        """
        allowed = RECEIPT_TRANSITIONS[status]
        values: dict[str, Any] = {
            ":new": status.value,
            ":tenant": tenant,
            ":at": at.isoformat(),
            ":events": [_event_item(event)],
            ":empty": [],
        }
        values.update({f":from{i}": previous.value for i, previous in enumerate(allowed)})
        sources = ", ".join(f":from{i}" for i in range(len(allowed)))
        if status is MessageStatus.FAILED:
            stamp = "failure_reason = :reason"
            values[":reason"] = "provider_receipt_failed"
        else:
            stamp = f"{'delivered_at' if status is MessageStatus.DELIVERED else 'read_at'} = :at"
        try:
            answer = self._table.update_item(
                Key=message_key(message_id),
                UpdateExpression=(
                    f"SET #status = :new, {stamp}, updated_at = :at, "
                    "#trace = list_append(if_not_exists(#trace, :empty), :events)"
                ),
                ConditionExpression=f"tenant = :tenant AND #status IN ({sources})",
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_condition_failure(error):
                raise AlreadyFinal(f"the message is already {status.value} or beyond") from error
            raise
        return from_item(Message, answer["Attributes"])

    # --- helpers -----------------------------------------------------------------------------

    def _transition(
        self,
        message: Message,
        *,
        sets: dict[str, Any],
        events: list[TraceEvent],
        remove: list[str],
        count_attempt: bool = True,
    ) -> dict[str, Any]:
        """An update of `message` as its claimant holds it (SENDING under its lease token, or still
        QUEUED when it was never claimed): one more attempt, trace appended, `sets` applied."""
        names = dict(_NAMES)
        values: dict[str, Any] = {":tenant": message.tenant}
        if message.lease_token is None:
            held = "#status = :queued"
            values[":queued"] = MessageStatus.QUEUED.value
        else:
            held = "#status = :sending AND lease_token = :token"
            values.update({":sending": MessageStatus.SENDING.value, ":token": message.lease_token})
        values.update({":events": [_event_item(event) for event in events], ":empty": []})
        assignments = ["#trace = list_append(if_not_exists(#trace, :empty), :events)"]
        if count_attempt:
            values[":one"] = 1
            assignments.insert(0, "attempts = attempts + :one")
        # Every recorded outcome ends the send in flight: only a worker that died mid-send leaves it.
        remove = [*remove, "in_flight"]
        for i, (name, value) in enumerate(sets.items()):
            if value is None:
                remove = [*remove, name]
                continue
            attribute = name if name.startswith("#") else f"#a{i}"
            if not name.startswith("#"):
                names[attribute] = name
            values[f":v{i}"] = value
            assignments.append(f"{attribute} = :v{i}")
        expression = "SET " + ", ".join(assignments)
        if remove:
            removed = [f"#r{i}" for i in range(len(remove))]
            names.update(zip(removed, remove, strict=True))
            expression += " REMOVE " + ", ".join(removed)
        return {
            "Key": message_key(message.id),
            "UpdateExpression": expression,
            "ConditionExpression": f"tenant = :tenant AND {held}",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def _update(self, update: dict[str, Any]) -> None:
        try:
            self._table.update_item(**update)
        except ClientError as error:
            if is_condition_failure(error):
                raise AlreadyFinal("the message is no longer held by this worker") from error
            raise


def _affinity(item: dict[str, Any]) -> Affinity:
    """An affinity item as the domain reads it: its `heard_<number id>` attributes as `heard`."""
    heard = {
        name.removeprefix(HEARD_PREFIX): datetime.fromtimestamp(int(value), UTC)
        for name, value in item.items()
        if name.startswith(HEARD_PREFIX)
    }
    rest = {name: value for name, value in item.items() if not name.startswith(HEARD_PREFIX)}
    return from_item(Affinity, {**rest, "heard": heard})


def _event_item(event: TraceEvent) -> dict[str, Any]:
    """A trace event as stored: JSON types, nulls kept (the trace shows `affinityNumber: null`)."""
    item: dict[str, Any] = event.model_dump(mode="json")
    return item


def spam_history_key(instance: str, recipient: str) -> dict[str, str]:
    return {"pk": f"SPAMGUARD#{instance}#{recipient}", "sk": META}


def spam_history_item(kept: KeptTexts) -> dict[str, Any]:
    """The history item, Put whole (the send that keeps it has just read it)."""
    return {
        **spam_history_key(kept.instance, kept.recipient),
        "texts": [text.model_dump(mode="json") for text in kept.texts],
        "expiresAt": int(kept.expires_at.timestamp()),
    }


class SpamHistoryRepository:
    """The spam guard's history: pk `SPAMGUARD#<instance key>#<recipient>`, sk `#META`, the last
    texts' hashes with when they were sent, and `expiresAt` (TTL) 24 h after the newest. Read here;
    written by `MessageRepository.record_sent`, in the transaction that records the send."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def recent(self, instance: str, recipient: str) -> list[SentText]:
        item = self._table.get_item(Key=spam_history_key(instance, recipient), ConsistentRead=True).get("Item")
        return [from_item(SentText, text) for text in item.get("texts", [])] if item else []

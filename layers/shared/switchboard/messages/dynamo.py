"""Message persistence: the message, the recipient affinity and the provider-message index.

Items (main table), one PynamoDB model each:
- message (`MessageItem`): pk `MESSAGE#<id>`, sk `#META`, every field of the record under its
  own name, its trace (a list, appended per attempt) and, while claimed, `lease_until`;
- affinity (`AffinityItem`): pk `AFFINITY#<tenant>#<recipient>`, sk `#META`: the number that
  last sent to the recipient (`number_id`, `number`, `sent_at`) and, one top-level
  `heard_<number id>` (epoch seconds, the `HEARD` family) per number, when the recipient last
  wrote to that number (an O(1) read, never a scan of messages). The send writes the first, the
  acceptance of an incoming message the second (`record_heard`), each an update leaving the
  other's attributes alone; an item may hold only `heard_*` (someone who wrote in and was never
  sent anything). Like the affinity it is, the item has no TTL: it lives as long as the tenant
  knows the recipient;
- receipt index (`ReceiptItem`): pk `PROVIDERMSG#<provider id>#<provider message id>`, sk
  `#META` -> `messageId`;
- spam guard history (`SpamHistoryItem`): pk `SPAMGUARD#<instance key>#<recipient>`, sk `#META`
  (see `spam_guard.py`), owned by `SpamHistoryRepository`;
- incoming message (`IncomingItem`): pk `INCOMING#<provider>#<instance id>#<event id>`, sk
  `#META`: a customer's message as the ingest accepted it and its downstream outcome;
- open menu (`MenuItem`): pk `MENU#<tenant>#<number id>#<contact>`, sk `#META`: the options of
  the last interactive message the number sent the contact (`messages/choices.py`), TTL
  `expiresAt`.

Both messages carry the message log's keys (`MessageLogRepository`): `logpk` `MSGLOG#<tenant>`
and `contactpk` `MSGCONTACT#<tenant>#<contact>`, each with the sort key `<created at>#<id>`.

Per message the worker makes: the affinity read (pool mode), the round-robin ticket (affinity
miss), the claim with the first route in flight (one conditional `UpdateItem` that also returns
the message), the spam guard's history (a guarded instance), the route in flight of each later
attempt (before its provider call) and the outcome (SENT with affinity, index, the spam guard's
history and the instance's usage in one transaction). Every transition is conditional on the
status and, while SENDING, on the claimant's lease token; a WAITING message is claimable only by
the job carrying its `wake_token`.

A transition is written from one description of what changes (`_Change`): the record it returns
and the update it sends are both derived from it, so the two cannot drift apart.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic import BaseModel
from pynamodb.attributes import Attribute, BooleanAttribute, UnicodeAttribute
from pynamodb.constants import LIST
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import GlobalSecondaryIndex, IncludeProjection, KeysOnlyProjection

from switchboard.core import store
from switchboard.core.clock import utcnow
from switchboard.core.errors import AlreadyExists, AlreadyFinal, NotFound
from switchboard.core.observability import logger
from switchboard.core.store import (
    AttributeFamily,
    DocumentAttribute,
    EpochAttribute,
    IntegerAttribute,
    IsoDateTimeAttribute,
    TableItem,
    UnitOfWork,
)
from switchboard.messages.choices import MENU_DAYS, OpenMenu
from switchboard.messages.domain import (
    RECEIPT_TRANSITIONS,
    Claim,
    IncomingRecord,
    LogEntry,
    LogFilter,
    LogPage,
    Message,
    MessageStatus,
    PendingRoute,
    SentAs,
    TraceEvent,
    sent_as_of,
)
from switchboard.messages.spam_guard import KeptTexts, SentText
from switchboard.pool.domain import Affinity
from switchboard.providers.content import Interactive, MediaMessage, Option, Template, Text, kind_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from switchboard.catalog.domain import Instance
    from switchboard.messages.ports import Usage

# A sent message's record must land: its transaction writes the instance's usage counter, which
# every send through that instance writes, so concurrent sends collide on it now and then.
SENT_ATTEMPTS = 5
RECEIPT_FAILED = "provider_receipt_failed"


class JsonListAttribute(Attribute[list[Any]]):
    """A list of JSON values stored as a DynamoDB list, nulls kept (the trace shows
    `affinityNumber: null`); floats as exact decimals, integral numbers read back as `int`."""

    attr_type = LIST

    def serialize(self, value: list[Any]) -> list[dict[str, Any]]:
        serialized: list[dict[str, Any]] = _serializer.serialize(_json_storable(value))["L"]
        return serialized

    def deserialize(self, value: list[dict[str, Any]]) -> list[Any]:
        elements: list[Any] = _json_plain(_deserializer.deserialize({"L": value}))
        return elements


_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _json_storable(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, (list, tuple)):
        return [_json_storable(element) for element in value]
    if isinstance(value, dict):
        return {name: _json_storable(element) for name, element in value.items()}
    return value


def _json_plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_json_plain(element) for element in value]
    if isinstance(value, dict):
        return {name: _json_plain(element) for name, element in value.items()}
    return value


class MessageItem(TableItem):
    """A message: every field of `Message` under its own name (the record is its stored form)."""

    PREFIX = "MESSAGE"

    tenant = UnicodeAttribute()
    created_at = IsoDateTimeAttribute()
    id = UnicodeAttribute()
    api_key_id = UnicodeAttribute()
    to = UnicodeAttribute()
    text = UnicodeAttribute()
    content = DocumentAttribute(null=True)  # `providers.content`: a media message holds its bucket reference
    reply_to = UnicodeAttribute(null=True)
    pinned_instance = UnicodeAttribute(null=True)
    fallback_template = DocumentAttribute(null=True)  # `providers.content.Template`
    window_refused_at = IsoDateTimeAttribute(null=True)
    sent_as = DocumentAttribute(null=True)  # `SentAs`
    body_hash = UnicodeAttribute()
    idempotency_key = UnicodeAttribute(null=True)
    status = UnicodeAttribute()
    source_number = UnicodeAttribute(null=True)
    number_id = UnicodeAttribute(null=True)
    instance = UnicodeAttribute(null=True)
    provider_id = UnicodeAttribute(null=True)
    provider_message_id = UnicodeAttribute(null=True)
    attempts = IntegerAttribute()
    failure_reason = UnicodeAttribute(null=True)
    last_error = UnicodeAttribute(null=True)
    pending = DocumentAttribute(null=True)
    in_flight = DocumentAttribute(null=True)
    lease_token = UnicodeAttribute(null=True)
    lease_until = EpochAttribute(null=True)  # the claim's lease: not part of the record
    valid_for = IntegerAttribute()
    expires_at = IsoDateTimeAttribute(null=True)  # not the table's TTL: an expired message stays readable
    wake_token = UnicodeAttribute(null=True)
    wait_checks = IntegerAttribute()
    next_check_at = IsoDateTimeAttribute(null=True)
    sent_at = IsoDateTimeAttribute(null=True)
    delivered_at = IsoDateTimeAttribute(null=True)
    read_at = IsoDateTimeAttribute(null=True)
    updated_at = IsoDateTimeAttribute()
    trace = JsonListAttribute(null=True)
    provider_code = UnicodeAttribute(null=True)
    provider_message = UnicodeAttribute(null=True)
    # The message log's copy: what a list shows and filters on (`MessageLogEntry`).
    direction = UnicodeAttribute(null=True)
    kind = UnicodeAttribute(null=True)
    preview = UnicodeAttribute(null=True)
    outcome = UnicodeAttribute(null=True)  # `SentAs.outcome`: what left in place of the content
    logpk = UnicodeAttribute(null=True)
    logsk = UnicodeAttribute(null=True)
    contactpk = UnicodeAttribute(null=True)
    contactsk = UnicodeAttribute(null=True)


# A number's "heard from" is one top-level attribute per number: SET on a nested map path fails
# on an item that does not exist yet, and a top-level one is created with the item.
HEARD = AttributeFamily("heard_", EpochAttribute)


class AffinityItem(TableItem):
    PREFIX = "AFFINITY"  # pk: AFFINITY#<tenant>#<recipient>

    tenant = UnicodeAttribute()
    number_id = UnicodeAttribute(null=True)
    number = UnicodeAttribute(null=True)
    sent_at = IsoDateTimeAttribute(null=True)


class ReceiptItem(TableItem):
    PREFIX = "PROVIDERMSG"  # pk: PROVIDERMSG#<provider id>#<provider message id>

    tenant = UnicodeAttribute()
    message_id = UnicodeAttribute(attr_name="messageId")


class SpamHistoryItem(TableItem):
    PREFIX = "SPAMGUARD"  # pk: SPAMGUARD#<instance key>#<recipient>

    texts = JsonListAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt")


def _message_item(message_id: str) -> MessageItem:
    return MessageItem(MessageItem.pk_for(message_id), MessageItem.sk_for())


def _affinity_item(tenant: str, recipient: str) -> AffinityItem:
    return AffinityItem(AffinityItem.pk_for(tenant, recipient), AffinityItem.sk_for())


@dataclass(frozen=True)
class _Change:
    """What one write changes in a message: `fields` set (None: removed), and whether it counts
    an attempt and appends `events` to the trace. The record after it and the update actions
    are both derived from it."""

    fields: dict[str, Any]
    events: list[TraceEvent] = field(default_factory=list)
    count_attempt: bool = False

    def applied_to(self, message: Message) -> Message:
        update = {name: value for name, value in self.fields.items() if name in Message.model_fields}
        if self.count_attempt:
            update["attempts"] = message.attempts + 1
        if self.events:
            update["trace"] = [*message.trace, *self.events]
        return message.model_copy(update=update)

    def actions(self) -> list[Action]:
        actions: list[Action] = []
        for name, value in self.fields.items():
            attribute: Attribute[Any] = getattr(MessageItem, name)
            actions.append(attribute.remove() if value is None else attribute.set(_stored(value)))
        if self.count_attempt:
            actions.append(MessageItem.attempts.add(1))
        if self.events:
            events = [event.model_dump(mode="json") for event in self.events]
            actions.append(MessageItem.trace.set((MessageItem.trace | []).append(events)))
        return actions


def _stored(value: Any) -> Any:
    """A record's field value as its attribute takes it."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list):
        return [_stored(element) for element in value]
    return value


class MessageRepository:
    def __init__(
        self, table: Any, spam_history: SpamHistoryRepository | None = None, usage: Usage | None = None
    ) -> None:
        """`table`: the composition root's table, whose building bound the item models. The spam guard's
        history and (with `usage`) the instance's outgoing count join the SENT transaction."""
        self._table = table
        self._spam_history = spam_history or SpamHistoryRepository(table)
        self._usage = usage

    # --- API side ----------------------------------------------------------------------------

    def create(self, message: Message, *, joined: Callable[[UnitOfWork], None] | None = None) -> None:
        item = _message_item(message.id)
        for name in Message.model_fields:
            value = getattr(message, name)
            if value is not None:
                setattr(item, name, _stored(value))
        item.direction, item.kind, item.preview = "out", *_log_kind_and_preview(message)
        log_keys(item, message.tenant, message.to, message.created_at, message.id)
        if joined is None:
            try:
                store.put(item, MessageItem.pk.does_not_exist())
            except store.ConditionFailed as exc:
                raise AlreadyExists("message already exists") from exc
            return
        # The message joins first: when it exists (a client's retry) that is the answer, whatever
        # else the joined writes would have refused.
        uow = store.unit_of_work()
        uow.put(item, MessageItem.pk.does_not_exist(), refused=AlreadyExists("message already exists"))
        joined(uow)
        uow.commit()

    def get(self, tenant: str, message_id: str) -> Message:
        try:
            item = MessageItem.get(MessageItem.pk_for(message_id), MessageItem.sk_for(), consistent_read=True)
        except MessageItem.DoesNotExist:
            raise NotFound("message not found") from None
        if item.tenant != tenant:
            raise NotFound("message not found")
        return _record(item)

    # --- worker side -------------------------------------------------------------------------

    def claim(
        self, message_id: str, tenant: str, token: str, lease_seconds: int, wake: str | None = None
    ) -> Message | None:
        """QUEUED (or SENDING with an expired lease, or WAITING for the job whose `wake` is its
        `wake_token`) -> SENDING under `token`; the claimed message.

        None when the message is gone, final, leased to another worker right now, or waiting for
        another job.
        """
        now = utcnow()
        try:
            item = store.update(
                _message_item(message_id), _claiming(token, now, lease_seconds), _claimable(tenant, now, wake)
            )
        except store.ConditionFailed:
            return None
        return _record(item)

    def claim_in_flight(
        self,
        message_id: str,
        tenant: str,
        token: str,
        lease_seconds: int,
        *,
        route: PendingRoute,
        wake: str | None = None,
    ) -> Claim | None:
        """`claim`, recording `route` in flight in the same write (the worker calls it next, with
        no write in between), when the message has no route pending or in flight from an earlier
        attempt; such a message is claimed as `claim` does, those left as they were, unmarked:
        the plan decides from them (a resend, the pending route first). One request, two for a
        message that comes back that way.

        None when the message is not claimable (see `claim`).
        """
        now = utcnow()
        fresh = MessageItem.in_flight.does_not_exist() & MessageItem.pending.does_not_exist()
        actions = [*_claiming(token, now, lease_seconds), MessageItem.in_flight.set(_stored(route))]
        try:
            item = store.update(
                _message_item(message_id), actions, _claimable(tenant, now, wake) & fresh, return_old=True
            )
        except store.ConditionFailed as exc:
            stored = exc.old(MessageItem)
            if stored is not None and stored.in_flight is None and stored.pending is None:
                return None  # refused for what `claim` refuses too
            claimed = self.claim(message_id, tenant, token, lease_seconds, wake)
            return None if claimed is None else Claim(message=claimed, marked=False)
        return Claim(message=_record(item), marked=True)

    def affinity(self, tenant: str, recipient: str) -> Affinity | None:
        """The recipient's affinity and the numbers that heard from them, in one read."""
        try:
            item = AffinityItem.get(AffinityItem.pk_for(tenant, recipient), AffinityItem.sk_for(), consistent_read=True)
        except AffinityItem.DoesNotExist:
            return None
        return Affinity(number_id=item.number_id, number=item.number, sent_at=item.sent_at, heard=HEARD.read(item))

    def record_heard(self, uow: UnitOfWork, tenant: str, recipient: str, number_id: str, at: datetime) -> None:
        """That `recipient` wrote to `number_id` at `at`, joining the acceptance of the incoming
        message (no request of its own). The mark never moves back: an older message accepted
        after a newer one (a provider's late redelivery) leaves it as it is, and its condition,
        refused then, gives way rather than cancel the message's acceptance (one more request,
        only then; two messages of the same second are no refusal)."""
        mark = HEARD[number_id]
        uow.update(
            _affinity_item(tenant, recipient),
            [mark.set(at), AffinityItem.tenant.set(tenant)],
            mark.does_not_exist() | (mark <= at),
            optional=True,
        )

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
        counted_on: Instance | None = None,
        sent_as: SentAs | None = None,
    ) -> Message:
        """QUEUED -> SENT (`sent_as`: its fallback template left in its place), the receipt index,
        (if `remember_affinity`) the affinity, (if given) the spam guard's history and one outgoing
        message on `counted_on`'s usage, in one transaction:
        a send that is not ours to record (AlreadyFinal) leaves no history and counts nothing, and
        one that is counts once, however often its job is delivered.

        The message has left: a "TransactionConflict" (the instance's usage counter written at
        that moment by another send through it, the recipient's affinity item by the acceptance
        of a message they sent) wrote nothing and is tried again, after a jittered pause, with the
        same request token (a commit that landed unanswered is not applied twice), rather than
        leaving a sent message to look interrupted.

        Raises AlreadyFinal when the message is no longer QUEUED (another delivery finished it).
        """
        now = utcnow()
        change = _outcome(
            {
                "status": MessageStatus.SENT,
                "number_id": number_id,
                "source_number": source_number,
                "instance": instance,
                "provider_id": provider_id,
                "provider_message_id": provider_message_id,
                "sent_at": now,
                "updated_at": now,
                "pending": None,
                "last_error": None,
                "provider_code": None,
                "provider_message": None,
            }
            | ({"sent_as": sent_as, "outcome": sent_as.outcome()} if sent_as is not None else {}),
            events,
        )
        uow = store.unit_of_work(request_token=str(uuid.uuid4()))
        uow.update(
            _message_item(message.id),
            change.actions(),
            _held(message),
            refused=AlreadyFinal("the message is no longer held by this worker"),
        )
        receipt = ReceiptItem(ReceiptItem.pk_for(provider_id, provider_message_id), ReceiptItem.sk_for())
        receipt.tenant, receipt.message_id = message.tenant, message.id
        uow.put(receipt)
        if remember_affinity:
            # An update, not a put: the item's `heard_*` (who the recipient wrote to) stay.
            uow.update(
                _affinity_item(message.tenant, message.to),
                [
                    AffinityItem.number_id.set(number_id),
                    AffinityItem.number.set(source_number),
                    AffinityItem.sent_at.set(now),
                    AffinityItem.tenant.set(message.tenant),
                ],
            )
        if spam_history is not None:
            self._spam_history.record_kept(uow, spam_history)
        if counted_on is not None and self._usage is not None:
            self._usage.record(uow, counted_on, now)
        uow.commit(conflict_attempts=SENT_ATTEMPTS)
        return change.applied_to(message)

    def record_failed(self, message: Message, reason: str, events: list[TraceEvent]) -> Message:
        """QUEUED or claimed -> FAILED with `reason`. Raises AlreadyFinal."""
        fields = {"status": MessageStatus.FAILED, "failure_reason": reason, "updated_at": utcnow(), "pending": None}
        change = _outcome({**fields, **_provider_words(events)}, events)
        return self._transition(message, change)

    def record_retry(
        self, message: Message, error_code: str, events: list[TraceEvent], pending: PendingRoute | None
    ) -> None:
        """Back to QUEUED (lease released): one more attempt, its trace, the route to retry first."""
        fields: dict[str, Any] = {"status": MessageStatus.QUEUED, "last_error": error_code, "updated_at": utcnow()}
        fields.update(_provider_words(events))
        if pending is not None:
            fields["pending"] = pending
        self._transition(message, _outcome(fields, events))

    def record_in_flight(self, message: Message, route: PendingRoute) -> Message:
        """Mark the route a send is about to go through, as the claimant that still holds it.

        Raises AlreadyFinal when this worker's lease was taken over (it expired and another
        worker claimed the message): this worker must not send.
        """
        held = (
            (MessageItem.tenant == message.tenant)
            & (MessageItem.status == MessageStatus.SENDING.value)
            & (MessageItem.lease_token == message.lease_token)
        )
        return self._transition(message, _Change({"in_flight": route}), held)

    def record_waiting(self, message: Message, next_check_at: datetime, events: list[TraceEvent]) -> Message:
        """Claimed -> WAITING; only the delayed job carrying this claim's lease token (now the
        `wake_token`) may claim it again. Raises AlreadyFinal.

        The first wait counts as an attempt with its trace; a later re-check that still finds no
        number appends nothing (a day of them must not grow the item towards DynamoDB's 400 KB).
        """
        fields: dict[str, Any] = {
            "status": MessageStatus.WAITING,
            "wake_token": message.lease_token,
            "next_check_at": next_check_at,
            "wait_checks": message.wait_checks + 1,
            "updated_at": utcnow(),
        }
        return self._transition(message, _outcome(fields, events, count_attempt=message.wait_checks == 0))

    # --- receipts ----------------------------------------------------------------------------

    def message_for_receipt(self, provider_id: str, provider_message_id: str, tenant: str) -> str | None:
        try:
            item = ReceiptItem.get(ReceiptItem.pk_for(provider_id, provider_message_id), ReceiptItem.sk_for())
        except ReceiptItem.DoesNotExist:
            return None
        return item.message_id if item.tenant == tenant else None

    def advance(
        self,
        tenant: str,
        message_id: str,
        status: MessageStatus,
        at: datetime,
        event: TraceEvent,
        *,
        reason: str | None = None,
        provider_message_id: str | None = None,
    ) -> Message:
        """Move the message forward to `status` (delivered/read/failed receipts); a failed one
        with `reason` when the provider's kind knows why (`outside_service_window`). With
        `provider_message_id`, only while that is the send the message stands for (a late
        receipt of a free-form send a fallback template replaced changes nothing).

        Raises AlreadyFinal when it is already there or beyond (a duplicate or late receipt).
        """
        fields: dict[str, Any] = {"status": status, "updated_at": at}
        if status is MessageStatus.FAILED:
            fields["failure_reason"] = reason or RECEIPT_FAILED
            fields.update(_provider_words([event]))
        else:
            fields["delivered_at" if status is MessageStatus.DELIVERED else "read_at"] = at
        allowed = (MessageItem.tenant == tenant) & MessageItem.status.is_in(
            *(previous.value for previous in RECEIPT_TRANSITIONS[status])
        )
        if provider_message_id is not None:
            allowed &= MessageItem.provider_message_id == provider_message_id
        try:
            item = store.update(_message_item(message_id), _Change(fields, [event]).actions(), allowed)
        except store.ConditionFailed as exc:
            raise AlreadyFinal(f"the message is already {status.value} or beyond") from exc
        return _record(item)

    def record_window_refused(
        self, tenant: str, message_id: str, *, provider_message_id: str, at: datetime, event: TraceEvent
    ) -> Message | None:
        """SENT -> QUEUED for the message's fallback template: Meta failed the free-form send
        `provider_message_id` after accepting it, for the customer-service window. One conditional
        write decides it once per message (`window_refused_at`), whatever the redeliveries of the
        status; Meta's words are kept on the message until the template is sent.

        The message due for its fallback (QUEUED, not yet sent as it), whether this write or an
        earlier one made it so: its job may be queued again, a second job finds it claimed. None
        when it is no such message (no fallback template, another send, or past it): the failed
        status then applies as any other."""
        fields: dict[str, Any] = {
            "status": MessageStatus.QUEUED,
            "window_refused_at": at,
            "updated_at": at,
            **_provider_words([event]),
        }
        due = (
            (MessageItem.tenant == tenant)
            & (MessageItem.status == MessageStatus.SENT.value)
            & (MessageItem.provider_message_id == provider_message_id)
            & MessageItem.fallback_template.exists()
            & MessageItem.window_refused_at.does_not_exist()
        )
        try:
            item = store.update(_message_item(message_id), _Change(fields, [event]).actions(), due, return_old=True)
        except store.ConditionFailed as exc:
            old = exc.old(MessageItem)
            if old is None or old.tenant != tenant:
                return None
            stored = _record(old)
            waiting = stored.status is MessageStatus.QUEUED and stored.sent_as is None
            return stored if waiting and stored.window_refused_at is not None else None
        return _record(item)

    # --- helpers -----------------------------------------------------------------------------

    def _transition(self, message: Message, change: _Change, held: Condition | None = None) -> Message:
        """Write `change` as the message's claimant (`held`, by default `_held(message)`); the
        record after it. Raises AlreadyFinal."""
        try:
            store.update(_message_item(message.id), change.actions(), held if held is not None else _held(message))
        except store.ConditionFailed as exc:
            raise AlreadyFinal("the message is no longer held by this worker") from exc
        return change.applied_to(message)


def _outcome(fields: dict[str, Any], events: list[TraceEvent], *, count_attempt: bool = True) -> _Change:
    """A recorded outcome of a claim: the lease is released and the send in flight ends (only a
    worker that died mid-send leaves it), with one more attempt and its trace."""
    return _Change(
        {**fields, "lease_token": None, "lease_until": None, "in_flight": None}, events, count_attempt=count_attempt
    )


def _provider_words(events: list[TraceEvent]) -> dict[str, Any]:
    """The provider's code and message of the latest trace entry that has them (fields to set),
    or nothing: a write whose attempt heard no provider's words leaves the earlier ones."""
    for event in reversed(events):
        code, message = event.data.get("providerCode"), event.data.get("providerMessage")
        if code is not None or message is not None:
            return {
                "provider_code": None if code is None else str(code),
                "provider_message": message if isinstance(message, str) else None,
            }
    return {}


def _claimable(tenant: str, now: datetime, wake: str | None) -> Condition:
    """QUEUED, SENDING under a lease run out, or WAITING for the job carrying `wake`; `tenant`'s."""
    claimable = (MessageItem.status == MessageStatus.QUEUED.value) | (
        (MessageItem.status == MessageStatus.SENDING.value) & (MessageItem.lease_until < now)
    )
    if wake is not None:
        claimable |= (MessageItem.status == MessageStatus.WAITING.value) & (MessageItem.wake_token == wake)
    ours: Condition = (MessageItem.tenant == tenant) & claimable
    return ours


def _claiming(token: str, now: datetime, lease_seconds: int) -> list[Action]:
    return [
        MessageItem.status.set(MessageStatus.SENDING.value),
        MessageItem.lease_token.set(token),
        MessageItem.lease_until.set(now + timedelta(seconds=lease_seconds)),
    ]


def _held(message: Message) -> Condition:
    """The message as its claimant holds it: SENDING under its lease token, or still QUEUED when
    it was never claimed."""
    held: Condition
    if message.lease_token is None:
        held = MessageItem.status == MessageStatus.QUEUED.value
    else:
        held = (MessageItem.status == MessageStatus.SENDING.value) & (MessageItem.lease_token == message.lease_token)
    ours: Condition = (MessageItem.tenant == message.tenant) & held
    return ours


def _record(item: MessageItem) -> Message:
    fields = {name: getattr(item, name) for name in Message.model_fields}
    return Message.model_validate({name: value for name, value in fields.items() if value is not None})


class SpamHistoryRepository:
    """The spam guard's history: the last texts' hashes with when they were sent, and `expiresAt`
    (TTL) 24 h after the newest. Read once per message; rewritten whole (the send that keeps it
    has just read it) by `record_kept`, in the transaction that records the send."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def recent(self, instance: str, recipient: str) -> list[SentText]:
        try:
            item = SpamHistoryItem.get(
                SpamHistoryItem.pk_for(instance, recipient), SpamHistoryItem.sk_for(), consistent_read=True
            )
        except SpamHistoryItem.DoesNotExist:
            return []
        return [SentText.model_validate(text) for text in item.texts or []]

    def record_kept(self, uow: UnitOfWork, kept: KeptTexts) -> None:
        """The history after a send, joining the transaction that records the send."""
        item = SpamHistoryItem(SpamHistoryItem.pk_for(kept.instance, kept.recipient), SpamHistoryItem.sk_for())
        item.texts = [text.model_dump(mode="json") for text in kept.texts]
        item.expires_at = kept.expires_at
        uow.put(item)


class MenuItem(TableItem):
    """The open menu of a (number, contact): `messages/choices.py`."""

    PREFIX = "MENU"  # pk: MENU#<tenant>#<number id>#<contact>

    tenant = UnicodeAttribute()
    number_id = UnicodeAttribute()
    number = UnicodeAttribute()
    contact = UnicodeAttribute()
    message_id = UnicodeAttribute()
    api_key_id = UnicodeAttribute()
    kind = UnicodeAttribute()
    native = BooleanAttribute()
    options = JsonListAttribute()
    sent_at = IsoDateTimeAttribute()
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)


class MenuRepository:
    """One item per (number, contact): the last interactive message's options, with the table's
    TTL `MENU_DAYS` after it was sent. Kept by a conditional put (only a menu sent no earlier
    than the kept one replaces it); read once per incoming choice or number."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def remember(self, menu: OpenMenu) -> None:
        item = MenuItem(
            MenuItem.pk_for(menu.tenant, menu.number_id, menu.contact),
            MenuItem.sk_for(),
            tenant=menu.tenant,
            number_id=menu.number_id,
            number=menu.number,
            contact=menu.contact,
            message_id=menu.message_id,
            api_key_id=menu.api_key_id,
            kind=menu.kind,
            native=menu.native,
            options=[option.model_dump(mode="json", exclude_none=True) for option in menu.options],
            sent_at=menu.sent_at,
            expires_at=menu.sent_at + timedelta(days=MENU_DAYS),
        )
        try:
            store.put(item, MenuItem.pk.does_not_exist() | (MenuItem.sent_at <= menu.sent_at))
        except store.ConditionFailed:
            logger.info("a newer menu is kept", extra={"message_id": menu.message_id})

    def open_menu(self, tenant: str, number_id: str, contact: str) -> OpenMenu | None:
        item = store.get(MenuItem, MenuItem.pk_for(tenant, number_id, contact), MenuItem.sk_for(), consistent=True)
        if item is None:
            return None
        return OpenMenu(
            tenant=item.tenant,
            number_id=item.number_id,
            number=item.number,
            contact=item.contact,
            message_id=item.message_id,
            api_key_id=item.api_key_id,
            kind=item.kind,
            native=item.native,
            options=[Option.model_validate(option) for option in item.options],
            sent_at=item.sent_at,
        )


class UploadedMediaItem(TableItem):
    PREFIX = "UPLOADEDMEDIA"  # pk: UPLOADEDMEDIA#<phone number id>#<sha256>

    media_id = UnicodeAttribute(attr_name="mediaId")
    expires_at = EpochAttribute(attr_name="expiresAt")


# Meta keeps an uploaded media id usable 30 days; reused for 29, so none is named as it lapses.
UPLOADED_MEDIA_SECONDS = 29 * 24 * 3600


class UploadedMediaRepository:
    """`providers.base.UploadedMedia`: the media id a cloud API number got for a file, by number
    and sha256, until the table's TTL (`expiresAt`) drops it (checked on read: TTL deletes late)."""

    def __init__(self, table: Any, clock: Callable[[], datetime] = utcnow) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table
        self._clock = clock

    def media_id(self, number: str, sha256: str) -> str | None:
        try:
            item = UploadedMediaItem.get(UploadedMediaItem.pk_for(number, sha256), UploadedMediaItem.sk_for())
        except UploadedMediaItem.DoesNotExist:
            return None
        return item.media_id if item.expires_at > self._clock() else None

    def remember(self, number: str, sha256: str, media_id: str) -> None:
        item = UploadedMediaItem(UploadedMediaItem.pk_for(number, sha256), UploadedMediaItem.sk_for())
        item.media_id = media_id
        item.expires_at = self._clock() + timedelta(seconds=UPLOADED_MEDIA_SECONDS)
        store.put(item)


# --- the message log ---------------------------------------------------------------------------

LOG_PROJECTION = [
    "tenant",
    "id",
    "direction",
    "kind",
    "status",
    "outcome",
    "to",
    "sender",
    "api_key_id",
    "instance",
    "number_id",
    "source_number",
    "preview",
    "failure_reason",
    "provider_code",
    "provider_message",
    "created_at",
]
PREVIEW_CHARS = 120  # what a list row shows of a text; the whole text is on the message
# The most query requests one page of the log may make: a selective filter reads past rows that do
# not match, and a page stops there (with a cursor) rather than reading the whole partition.
MAX_LOG_REQUESTS = 5


def preview_of(text: str | None) -> str | None:
    return None if text is None else text[:PREVIEW_CHARS]


def _log_kind_and_preview(message: Message) -> tuple[str, str | None]:
    """A sent message's row in the log: its kind (`text`, a media kind, `location`...) and what a
    list shows of it (a text's start, a file's caption; nothing of the other contents' JSON)."""
    content = message.content
    if content is None or isinstance(content, Text):
        return "text", preview_of(message.text)
    if isinstance(content, Interactive):
        return kind_of(content), preview_of(content.body)
    if isinstance(content, Template):
        return kind_of(content), preview_of(f"{content.name} ({content.language})")
    caption = content.media.caption if isinstance(content, MediaMessage) else None
    return kind_of(content), preview_of(caption)


class MessageLogIndex(GlobalSecondaryIndex["LogRow"]):  # type: ignore[no-untyped-call]  # PynamoDB's Index hook
    """A tenant's messages, both directions, newest first: only `LOG_PROJECTION` is copied."""

    class Meta:
        index_name = "MessageLog"
        projection = IncludeProjection(LOG_PROJECTION)

    logpk = UnicodeAttribute(hash_key=True)
    logsk = UnicodeAttribute(range_key=True)


class ContactIndex(GlobalSecondaryIndex["LogRow"]):  # type: ignore[no-untyped-call]  # PynamoDB's Index hook
    """One contact's messages, keys only: written once per message, never on a status change."""

    class Meta:
        index_name = "MessageContact"
        projection = KeysOnlyProjection()

    contactpk = UnicodeAttribute(hash_key=True)
    contactsk = UnicodeAttribute(range_key=True)


class LogRow(TableItem):
    """A row of the message log as its index returns it: an outgoing message (`MESSAGE#`) or an
    incoming one (`INCOMING#`), read through the attributes they share. Never written."""

    PREFIX = "MSGLOGROW"

    tenant = UnicodeAttribute(null=True)
    id = UnicodeAttribute(null=True)
    direction = UnicodeAttribute(null=True)
    kind = UnicodeAttribute(null=True)
    status = UnicodeAttribute(null=True)
    outcome = UnicodeAttribute(null=True)
    to = UnicodeAttribute(null=True)
    sender = UnicodeAttribute(null=True)
    api_key_id = UnicodeAttribute(null=True)
    instance = UnicodeAttribute(null=True)
    number_id = UnicodeAttribute(null=True)
    source_number = UnicodeAttribute(null=True)
    text = UnicodeAttribute(null=True)
    preview = UnicodeAttribute(null=True)
    failure_reason = UnicodeAttribute(null=True)
    provider_code = UnicodeAttribute(null=True)
    provider_message = UnicodeAttribute(null=True)
    created_at = IsoDateTimeAttribute(null=True)
    logpk = UnicodeAttribute(null=True)
    logsk = UnicodeAttribute(null=True)
    contactpk = UnicodeAttribute(null=True)
    contactsk = UnicodeAttribute(null=True)
    log = MessageLogIndex()
    by_contact = ContactIndex()


class IncomingItem(TableItem):
    """A customer's message as the ingest accepted it, and what became of it downstream."""

    PREFIX = "INCOMING"  # pk: INCOMING#<provider>#<instance id>#<event id>

    tenant = UnicodeAttribute()
    created_at = IsoDateTimeAttribute()
    id = UnicodeAttribute()
    direction = UnicodeAttribute()
    kind = UnicodeAttribute()
    status = UnicodeAttribute()
    outcome = UnicodeAttribute()
    sender = UnicodeAttribute()
    to = UnicodeAttribute(null=True)
    instance = UnicodeAttribute()
    number_id = UnicodeAttribute(null=True)
    provider_message_id = UnicodeAttribute(null=True)
    text = UnicodeAttribute(null=True)
    preview = UnicodeAttribute(null=True)
    failure_reason = UnicodeAttribute(null=True)
    updated_at = IsoDateTimeAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)
    logpk = UnicodeAttribute(null=True)
    logsk = UnicodeAttribute(null=True)
    contactpk = UnicodeAttribute(null=True)
    contactsk = UnicodeAttribute(null=True)


def log_keys(item: MessageItem | IncomingItem, tenant: str, contact: str, created_at: datetime, entry_id: str) -> None:
    """The message log's keys of a message: its tenant's log and its contact's conversation."""
    order = f"{created_at.astimezone(UTC).isoformat()}#{entry_id}"
    item.logpk, item.logsk = f"MSGLOG#{tenant}", order
    item.contactpk, item.contactsk = f"MSGCONTACT#{tenant}#{contact}", order


def _log_entry(row: LogRow | MessageItem | IncomingItem) -> LogEntry:
    outgoing = row.direction != "in"
    return LogEntry(
        id=row.id or "",
        direction="out" if outgoing else "in",
        kind=row.kind or "text",
        status=row.status or "",
        outcome=getattr(row, "outcome", None),
        contact=(row.to if outgoing else getattr(row, "sender", None)) or "",
        number=row.source_number if outgoing and isinstance(row, (LogRow, MessageItem)) else row.to,
        number_id=row.number_id,
        instance=row.instance,
        api_key_id=getattr(row, "api_key_id", None),
        preview=row.preview,
        text=getattr(row, "text", None),
        failure_reason=row.failure_reason,
        provider_code=getattr(row, "provider_code", None),
        provider_message=getattr(row, "provider_message", None),
        sent_as=sent_as_of(getattr(row, "outcome", None)) if outgoing else None,
        created_at=row.created_at or datetime.now(UTC),
    )


class MessageLogRepository:
    """The message log: a tenant's messages by its `MessageLog` index (newest first, every filter
    but a contact's is a filter on the index's copy), a contact's by `MessageContact` (keys only,
    then one batch read of the page's items), and the incoming messages with their outcome."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def page(self, tenant: str, query: LogFilter) -> LogPage:
        if query.contact is not None:
            return self._contact_page(tenant, query)
        found = store.page(
            LogRow,
            LogRow.log,
            f"MSGLOG#{tenant}",
            store.time_range(LogRow.logsk, query.since, query.until),
            limit=query.limit,
            cursor=query.cursor,
            filter_condition=_filters(query),
            max_requests=MAX_LOG_REQUESTS,
        )
        return LogPage(items=[_log_entry(row) for row in found.items], cursor=found.cursor)

    def _contact_page(self, tenant: str, query: LogFilter) -> LogPage:
        partition = f"MSGCONTACT#{tenant}#{query.contact}"
        start = store.decode_cursor(query.cursor, "contactpk", partition, "contactsk") if query.cursor else None
        rows = LogRow.by_contact.query(
            partition,
            store.time_range(LogRow.contactsk, query.since, query.until),
            scan_index_forward=query.oldest_first,
            limit=query.limit,
            page_size=query.limit,
            last_evaluated_key=start,
        )
        keys = [(row.pk, row.sk) for row in rows]
        cursor = store.encode_cursor(rows.last_evaluated_key)
        found: dict[str, MessageItem | IncomingItem] = {}
        outgoing = [key for key in keys if key[0].startswith(MessageItem.PREFIX + "#")]
        incoming = [key for key in keys if key[0].startswith(IncomingItem.PREFIX + "#")]
        for item in MessageItem.batch_get(outgoing):
            found[item.pk] = item
        for other in IncomingItem.batch_get(incoming):
            found[other.pk] = other
        entries = [_log_entry(found[pk]) for pk, _ in keys if pk in found]
        return LogPage(items=[entry for entry in entries if query.matches(entry)], cursor=cursor)

    # --- incoming messages -------------------------------------------------------------------

    def record_incoming(self, uow: UnitOfWork, record: IncomingRecord) -> None:
        """An incoming message in the log, joining the transaction that accepts its event: a put
        never refused (a redelivery writes nothing: its event is not accepted twice)."""
        item = IncomingItem(IncomingItem.pk_for(record.event_key), IncomingItem.sk_for())
        item.tenant, item.created_at, item.id = record.tenant, record.created_at, record.id
        item.direction, item.kind, item.status, item.outcome = "in", record.kind, record.status, record.outcome
        item.sender, item.to, item.instance, item.number_id = (
            record.sender,
            record.to,
            record.instance,
            record.number_id,
        )
        item.provider_message_id, item.text, item.preview = (
            record.provider_message_id,
            record.text,
            preview_of(record.text),
        )
        item.failure_reason, item.expires_at = record.failure_reason, record.expires_at
        log_keys(item, record.tenant, record.sender, record.created_at, record.id)
        uow.put(item)

    def record_outcome(self, event_key: str, status: str, outcome: str, reason: str | None) -> bool:
        """What became of an incoming message downstream; False when it is not in the log (an event
        accepted before the log existed, or expired). A forward that succeeded stays forwarded:
        a late failure report of an earlier attempt does not overwrite it."""
        item = IncomingItem(IncomingItem.pk_for(event_key), IncomingItem.sk_for())
        actions: list[Action] = [
            IncomingItem.status.set(status),
            IncomingItem.outcome.set(outcome),
            IncomingItem.updated_at.set(utcnow()),
            IncomingItem.failure_reason.set(reason) if reason else IncomingItem.failure_reason.remove(),
        ]
        condition = IncomingItem.pk.exists()
        if status != "FORWARDED":
            condition &= IncomingItem.status != "FORWARDED"
        try:
            store.update(item, actions, condition)
        except store.ConditionFailed:
            return False
        return True


def _filters(query: LogFilter) -> Condition | None:
    conditions: list[Condition] = []
    if query.direction is not None:
        conditions.append(LogRow.direction == query.direction)
    if query.status is not None:
        conditions.append(LogRow.status.is_in(*query.status))
    if query.number is not None:
        conditions.append((LogRow.number_id == query.number) | (LogRow.source_number == query.number))
    if query.instance is not None:
        conditions.append(LogRow.instance == query.instance)
    if query.api_key_id is not None:
        conditions.append(LogRow.api_key_id == query.api_key_id)
    if query.kind is not None:
        conditions.append(LogRow.kind == query.kind)
    combined: Condition | None = None
    for condition in conditions:
        combined = condition if combined is None else combined & condition
    return combined

"""Slots, call records and dial attempts in MainTable (this module owns the line's `occupants`).

Items, all in the partition of the instance's line (`pk = LINE#<instance key>`, its tenant and name):

- the line (`sk = #META`, the call limit's item): its `occupants.<id>` entries are decided only
  here, written through the call limit's repository inside this module's units of work;
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
from typing import Any

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute

from switchboard.calls.domain import (
    Attachment,
    AttemptNotPending,
    AttemptState,
    CallRecord,
    DialAttempt,
    LineNotReady,
    StaleRecord,
)
from switchboard.core import store
from switchboard.core.errors import Conflict, LineBusy
from switchboard.core.store import (
    CONFLICT,
    EpochAttribute,
    IntegerAttribute,
    RelationIndex,
    TableItem,
    TransactionCancelled,
    UnitOfWork,
)
from switchboard.lines.domain import Line, Occupant
from switchboard.lines.dynamo import LineItem, LineRepository

ATTEMPT_TTL = timedelta(days=2)
ENDED_CALL_TTL = timedelta(days=30)
# A conflict lasts as long as the other transaction (milliseconds): a few short random pauses
# outlast it without holding a request for long.
CONFLICT_ATTEMPTS = 5
CONFLICT_PAUSE_SECONDS = 0.02


def _line_partition(tenant: str, instance: str) -> str:
    return LineItem.of(tenant, instance).pk


def _in(delta: timedelta) -> datetime:
    return datetime.now(UTC) + delta


class DialAttemptItem(TableItem):
    """One dial attempt, by its reservation id, in its line's partition."""

    PREFIX = LineItem.PREFIX
    SORT_PREFIX = "DIAL"

    id = UnicodeAttribute()
    tenant = UnicodeAttribute()
    instance = UnicodeAttribute()
    attendant = UnicodeAttribute()
    to = UnicodeAttribute()
    video = BooleanAttribute()
    state = UnicodeAttribute()
    call_id = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    release_reason = UnicodeAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)

    @classmethod
    def of(cls, tenant: str, instance: str, attempt_id: str) -> DialAttemptItem:
        return cls(_line_partition(tenant, instance), cls.sk_for(attempt_id))


class CallItem(TableItem):
    """One call record, keyed by provider, provider instance id and callId, in its line's partition;
    in GSI2 (`<line>#LIVECALL`) only while live. `rev` is its optimistic lock: a write of a record
    read at `rev` holds only while it is still stored at `rev`, and stores `rev + 1` (a new record
    holds only while none is stored, and stores 1)."""

    PREFIX = LineItem.PREFIX
    SORT_PREFIX = "CALL"

    tenant = UnicodeAttribute()
    instance = UnicodeAttribute()
    provider_id = UnicodeAttribute()
    provider_instance_id = UnicodeAttribute()
    call_id = UnicodeAttribute()
    state = UnicodeAttribute(null=True)
    direction = UnicodeAttribute(null=True)
    peer = UnicodeAttribute(null=True)
    from_number = UnicodeAttribute(null=True)
    to_number = UnicodeAttribute(null=True)
    video = BooleanAttribute(null=True)
    video_seq = IntegerAttribute(null=True)
    last_seq = IntegerAttribute(null=True)
    holds_slot = BooleanAttribute(null=True)
    owner = UnicodeAttribute(null=True)
    reservation_id = UnicodeAttribute(null=True)
    end_reason = UnicodeAttribute(null=True)
    ended_by = UnicodeAttribute(null=True)
    end_origin = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute(null=True)
    answered_at = UnicodeAttribute(null=True)
    ended_at = UnicodeAttribute(null=True)
    recording_status = UnicodeAttribute(null=True)
    recording_url = UnicodeAttribute(null=True)
    recording_seq = IntegerAttribute(null=True)
    first_seen = UnicodeAttribute(null=True)
    rev = VersionAttribute()
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)
    gsi2pk = UnicodeAttribute(null=True)
    gsi2sk = UnicodeAttribute(null=True)
    live = RelationIndex["CallItem"]()

    @classmethod
    def of(cls, tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str) -> CallItem:
        return cls(_line_partition(tenant, instance), cls.sk_for(provider_id, provider_instance_id, call_id))

    @classmethod
    def of_occupant(cls, tenant: str, instance: str, occupant_id: str) -> CallItem:
        """A call entry's record: `call#<provider>#<instanceId>#<callId>` is `CALL#<same>` in its partition."""
        return cls(_line_partition(tenant, instance), cls.sk_for(occupant_id.removeprefix("call#")))

    @staticmethod
    def live_partition(tenant: str, instance: str) -> str:
        return f"{_line_partition(tenant, instance)}#LIVECALL"


def call_key(tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str) -> dict[str, str]:
    """A call record's key, for a raw read of the item as stored."""
    item = CallItem.of(tenant, instance, provider_id, provider_instance_id, call_id)
    return {"pk": item.pk, "sk": item.sk}


_RECORD_FIELDS = tuple(name for name in CallRecord.model_fields if name != "rev")
_ATTEMPT_FIELDS = tuple(DialAttempt.model_fields)


def _call_item(record: CallRecord, previous: CallRecord | None) -> CallItem:
    """The item of `record`, at the revision `previous` was read at (None: a new record)."""
    item = CallItem.of(record.tenant, record.instance, record.provider_id, record.provider_instance_id, record.call_id)
    for name in _RECORD_FIELDS:
        setattr(item, name, getattr(record, name))
    if previous is not None:
        item.rev = previous.rev
    return item


def _record(item: CallItem) -> CallRecord:
    return CallRecord.model_validate(
        {name: getattr(item, name) for name in (*_RECORD_FIELDS, "rev") if getattr(item, name) is not None}
    )


def _attempt_item(attempt: DialAttempt) -> DialAttemptItem:
    item = DialAttemptItem.of(attempt.tenant, attempt.instance, attempt.id)
    for name in _ATTEMPT_FIELDS:
        setattr(item, name, getattr(attempt, name))
    return item


def _attempt(item: DialAttemptItem) -> DialAttempt:
    return DialAttempt.model_validate(
        {name: getattr(item, name) for name in _ATTEMPT_FIELDS if getattr(item, name) is not None}
    )


def _state(state: AttemptState) -> AttemptState:
    return state


class _Refused(Exception):
    """A condition of the unit of work did not hold: the operation answers False."""


class _AlreadyAdmitted(Exception):
    """The reservation is on the line already: a replay of an admission."""


class CallRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models. The line item is the
        call limit's: its occupants are written through the call limit's repository."""
        self._table = table
        self._lines = LineRepository(table)

    # --- the line --------------------------------------------------------------------------

    def line(self, tenant: str, instance: str) -> Line | None:
        return self._lines.get(tenant, instance)

    def reserve(self, attempt: DialAttempt) -> bool:
        """Admit the attempt's reservation if a slot is free: True if admitted now, False if it already was.

        One transaction: the attempt must still be `pending`, and the line must have a free slot
        or hold this reservation already. Raises AttemptNotPending (read the attempt again),
        LineBusy (with the limit and the occupants) when the line is full, LineNotReady when it
        has no limit or no occupants map yet.
        """

        def refused(line: Line | None, has_occupants: bool) -> BaseException:
            if line is None or line.limit is None or not has_occupants:
                return LineNotReady(line)
            if attempt.id in line.occupants:
                return _AlreadyAdmitted()
            return LineBusy(
                "no free call slot on this connection",
                limit=line.limit,
                occupants=[occupant.model_dump(by_alias=True) for occupant in line.occupants.values()],
            )

        uow = store.unit_of_work()
        uow.check(
            DialAttemptItem,
            *_key(DialAttemptItem.of(attempt.tenant, attempt.instance, attempt.id)),
            DialAttemptItem.state == _state("pending"),
            refused=AttemptNotPending(attempt.id),
        )
        self._lines.record_admission(uow, attempt.tenant, attempt.instance, attempt.occupant(), refused=refused)
        try:
            _commit(uow)
        except _AlreadyAdmitted:
            return False
        return True

    def ensure_line(self, tenant: str, instance: str) -> None:
        """Create the line item or its `occupants` map if missing; never touches the call limit's attributes."""
        self._lines.ensure_occupants(tenant, instance)

    # --- dial attempts ---------------------------------------------------------------------

    def create_attempt(self, attempt: DialAttempt) -> DialAttempt | None:
        """Store a new attempt; if its id exists already (a retry), return the stored one instead."""
        item = _attempt_item(attempt)
        item.expires_at = _in(ATTEMPT_TTL)
        try:
            store.put(item, DialAttemptItem.pk.does_not_exist(), return_old=True)
        except store.ConditionFailed as refused:
            old = refused.old(DialAttemptItem)
            return _attempt(old) if old else self.get_attempt(attempt.tenant, attempt.instance, attempt.id)
        return None

    def reopen_attempt(self, attempt: DialAttempt) -> bool:
        """A retry of a released attempt tries again: released -> pending, once."""
        try:
            store.update(
                DialAttemptItem.of(attempt.tenant, attempt.instance, attempt.id),
                [DialAttemptItem.state.set(_state("pending")), DialAttemptItem.release_reason.remove()],
                DialAttemptItem.state == _state("released"),
            )
        except store.ConditionFailed:
            return False
        return True

    def get_attempt(self, tenant: str, instance: str, attempt_id: str) -> DialAttempt | None:
        try:
            item = DialAttemptItem.get(*_key(DialAttemptItem.of(tenant, instance, attempt_id)), consistent_read=True)
        except DialAttemptItem.DoesNotExist:
            return None
        return _attempt(item)

    def pending_attempts(self, tenant: str, instance: str) -> list[DialAttempt]:
        """The attempts whose reservation is on the line: at most `limit` items, read by key."""
        line = self.line(tenant, instance)
        ids = [key for key, occupant in (line.occupants.items() if line else []) if occupant.kind == "reservation"]
        attempts = self.attempts(tenant, instance, ids).values()
        return sorted((attempt for attempt in attempts if attempt.state == "pending"), key=lambda a: a.created_at)

    def attempts(self, tenant: str, instance: str, attempt_ids: Collection[str]) -> dict[str, DialAttempt]:
        """The stored attempts among `attempt_ids`, by id (consistent batch reads; a missing one is absent)."""
        keys = [_key(DialAttemptItem.of(tenant, instance, attempt_id)) for attempt_id in sorted(set(attempt_ids))]
        items = DialAttemptItem.batch_get(keys, consistent_read=True)
        return {attempt.id: attempt for attempt in (_attempt(item) for item in items)}

    def calls_of_occupants(self, tenant: str, instance: str, occupant_ids: Collection[str]) -> dict[str, CallRecord]:
        """The call records behind call entries of the line, by occupant id (consistent batch reads)."""
        keys = [_key(CallItem.of_occupant(tenant, instance, occupant_id)) for occupant_id in sorted(set(occupant_ids))]
        records = (_record(item) for item in CallItem.batch_get(keys, consistent_read=True))
        return {record.occupant_id: record for record in records}

    def release(self, attempt: DialAttempt, reason: str) -> bool:
        """Free a pending attempt's slot (one transaction with its state); False if it was not pending."""
        uow = store.unit_of_work()
        uow.update(
            DialAttemptItem.of(attempt.tenant, attempt.instance, attempt.id),
            [DialAttemptItem.state.set(_state("released")), DialAttemptItem.release_reason.set(reason)],
            DialAttemptItem.state == _state("pending"),
            refused=_Refused(),
        )
        # No occupants map yet: nothing can be reserved there.
        no_map = LineNotReady(None)
        self._lines.record_occupants(uow, attempt.tenant, attempt.instance, remove=[attempt.id], refused=no_map)
        try:
            _commit(uow)
        except _Refused:
            return False
        except LineNotReady:
            self.ensure_line(attempt.tenant, attempt.instance)
            return self.release(attempt, reason)
        return True

    # --- call records ----------------------------------------------------------------------

    def get_call(
        self, tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str
    ) -> CallRecord | None:
        key = _key(CallItem.of(tenant, instance, provider_id, provider_instance_id, call_id))
        try:
            item = CallItem.get(*key, consistent_read=True)
        except CallItem.DoesNotExist:
            return None
        return _record(item)

    def live_calls(self, tenant: str, instance: str) -> list[CallRecord]:
        """Live calls through the sparse index entry a record carries only while live (GSI2)."""
        items = store.query(CallItem, CallItem.live_partition(tenant, instance), index=CallItem.live)
        return [_record(item) for item in items]

    def save(self, previous: CallRecord | None, record: CallRecord, attempt: DialAttempt | None = None) -> CallRecord:
        """Write `record` (read as `previous`) and its line entry; bind `attempt` to it if given.

        One transaction: the record conditioned on the revision read, the line entry set or
        removed to match the record's projection, the attempt's reservation removed and the
        attempt marked connected (conditioned on it still being pending). Raises StaleRecord when
        a condition failed (read again), LineNotReady when the line has no occupants map yet.
        """
        stored = record.model_copy(update={"rev": (previous.rev if previous else 0) + 1})
        item = _call_item(stored, previous)
        if stored.ended:
            item.expires_at = _in(ENDED_CALL_TTL)
        if stored.live:  # a sparse index of live calls: reconciliation reads only those
            item.gsi2pk = CallItem.live_partition(stored.tenant, stored.instance)
            item.gsi2sk = stored.call_id
        stale = StaleRecord(stored.occupant_id)
        before = previous.occupant() if previous else None
        after = stored.occupant()
        put = after if after is not None and after != before else None
        remove = [stored.occupant_id] if after is None and before is not None else []
        if attempt is not None:
            remove.append(attempt.id)
        if put is None and not remove:
            try:
                store.put(item)  # on the revision read
            except store.ConditionFailed as refused:
                raise stale from refused
            return stored
        # Joined in the order their refusals are told: a stale record or attempt comes first.
        uow = store.unit_of_work()
        uow.put(item, refused=stale)  # on the revision read
        if attempt is not None:
            uow.update(
                DialAttemptItem.of(attempt.tenant, attempt.instance, attempt.id),
                [DialAttemptItem.state.set(_state("connected")), DialAttemptItem.call_id.set(stored.call_id)],
                DialAttemptItem.state == _state("pending"),
                refused=stale,
            )
        self._lines.record_occupants(
            uow, stored.tenant, stored.instance, put=put, remove=remove, refused=LineNotReady(None)
        )
        try:
            _commit(uow)
        except Conflict as contended:  # still contended after the pauses: read again, decide again
            raise StaleRecord(stored.occupant_id) from contended
        return stored

    # --- stray line entries ----------------------------------------------------------------

    def release_stray(
        self, tenant: str, instance: str, occupant: Occupant, behind: DialAttempt | CallRecord | None
    ) -> bool:
        """Remove a line entry that nothing holds, on the condition that what it was judged by has
        not moved since: a reservation's attempt is still missing or not pending; a call entry's
        record is still missing or at the revision read. False when a condition failed."""
        uow = store.unit_of_work()
        if occupant.kind == "reservation":
            uow.check(
                DialAttemptItem,
                *_key(DialAttemptItem.of(tenant, instance, occupant.id)),
                DialAttemptItem.pk.does_not_exist() | (DialAttemptItem.state != _state("pending")),
                refused=_Refused(),
            )
        else:
            unmoved = CallItem.rev == behind.rev if isinstance(behind, CallRecord) else CallItem.pk.does_not_exist()
            uow.check(CallItem, *_key(CallItem.of_occupant(tenant, instance, occupant.id)), unmoved, refused=_Refused())
        self._lines.record_occupant_removed(uow, tenant, instance, occupant.id, refused=_Refused())
        try:
            _commit(uow)
        except _Refused:
            return False
        return True


def _key(item: TableItem) -> tuple[str, str]:
    return item.pk, item.sk


def _commit(uow: UnitOfWork) -> None:
    """Commit, tried again after a short random pause while another transaction on one of its
    items is in flight; a refusal raises what its operation named. Raises Conflict
    (`line_contended`, a 409 to try again) when the conflict outlasts the pauses."""
    for attempt in range(CONFLICT_ATTEMPTS):
        try:
            uow.commit()
        except TransactionCancelled as cancelled:
            if CONFLICT not in cancelled.codes:
                raise
            if attempt == CONFLICT_ATTEMPTS - 1:
                raise Conflict(
                    "other changes of this connection's calls are in flight: try again", code="line_contended"
                ) from cancelled
            time.sleep(random.uniform(0, CONFLICT_PAUSE_SECONDS * 2**attempt))
            continue
        return


# --- media attachments and the reconcile gate (items in the line's partition) ------------------

ATTACHMENT_TTL = timedelta(days=1)


class AttachmentItem(TableItem):
    """Who a call's media session was attached for, beside its call record."""

    PREFIX = LineItem.PREFIX
    SORT_PREFIX = "MEDIA"  # sk: MEDIA#<provider>#<provider instance id>#<callId>

    tenant = UnicodeAttribute()
    instance = UnicodeAttribute()
    provider_id = UnicodeAttribute()
    provider_instance_id = UnicodeAttribute()
    call_id = UnicodeAttribute()
    attendant = UnicodeAttribute()
    session_id = UnicodeAttribute()
    attached_at = UnicodeAttribute()
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)

    @classmethod
    def of(
        cls, tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str
    ) -> AttachmentItem:
        return cls(_line_partition(tenant, instance), cls.sk_for(provider_id, provider_instance_id, call_id))


_ATTACHMENT_FIELDS = tuple(Attachment.model_fields)


class AttachmentRepository:
    """Who a call's media session was attached for (last writer wins: only the owner writes it)."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def get_attachment(self, record: CallRecord) -> Attachment | None:
        key = AttachmentItem.of(
            record.tenant, record.instance, record.provider_id, record.provider_instance_id, record.call_id
        )
        try:
            item = AttachmentItem.get(*_key(key), consistent_read=True)
        except AttachmentItem.DoesNotExist:
            return None
        return Attachment.model_validate({name: getattr(item, name) for name in _ATTACHMENT_FIELDS})

    def put_attachment(self, attachment: Attachment) -> None:
        item = AttachmentItem.of(
            attachment.tenant,
            attachment.instance,
            attachment.provider_id,
            attachment.provider_instance_id,
            attachment.call_id,
        )
        for name in _ATTACHMENT_FIELDS:
            setattr(item, name, getattr(attachment, name))
        item.expires_at = _in(ATTACHMENT_TTL)
        store.put(item)


class ReconcileGateItem(TableItem):
    """The open window of a connection's on-demand reconciliation."""

    PREFIX = LineItem.PREFIX
    SORT_PREFIX = "RECONCILE"  # sk: RECONCILE#GATE

    until = NumberAttribute(null=True)  # epoch seconds, fractional
    tenant = UnicodeAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)


class ReconcileGate:
    """At most one on-demand reconciliation per connection per window, shared by every replica.

    One conditional write on the connection's gate item: it opens a window only when none is
    open (`until` absent or past), so two replicas asking at once get one `True`.
    """

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def enter(self, tenant: str, instance: str, now: float, window_seconds: float) -> float | None:
        """None when the caller may reconcile now; else the seconds left in the open window."""
        until = now + window_seconds
        gate = ReconcileGateItem(_line_partition(tenant, instance), ReconcileGateItem.sk_for("GATE"))
        try:
            store.update(
                gate,
                [
                    ReconcileGateItem.until.set(until),
                    ReconcileGateItem.tenant.set(tenant),
                    ReconcileGateItem.expires_at.set(datetime.fromtimestamp(int(until) + 3600, UTC)),
                ],
                ReconcileGateItem.until.does_not_exist() | (ReconcileGateItem.until <= now),
                return_old=True,
            )
        except store.ConditionFailed as refused:
            old = refused.old(ReconcileGateItem)
            left = old.until - now if old is not None and old.until is not None else window_seconds
            return max(0.0, left)
        return None

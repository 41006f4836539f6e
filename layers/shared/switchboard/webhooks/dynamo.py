"""Provider webhook events: the dedupe marker and the durable event record, written together.

- marker `WHDEDUPE#<provider>#<instanceId>#<eventId>` (`DedupeMarker`): exists once per provider
  event, kept `DEDUPE_DAYS` (providers retry for days);
- record `WHEVENT#<provider>#<instanceId>#<eventId>` (`EventRecord`): the mapped event (never the
  raw body, only its SHA-256 `bodySha256`; the data bounded by `events.storable` so a 1 MB
  delivery fits the 400 KB item) and its status (`pending` until every effect ran, then
  `applied`; `ignored` with its reason and its code when it could not be mapped). A pending
  record sits in a sparse index (GSI1 `WHEVENTS#PENDING#<shard>`) so a sweep can re-apply what a
  crash left behind, and carries a short lease (`lease_until`) so two deliveries of one event
  never run its effects at the same time. An ignored record sits in GSI2 (`WHIGNORED#<instance key>` /
  `<received at>#<event id>`): the instance's ignored events, newest first, for as long as the
  record lives (`RECORD_DAYS`).

Both join the caller's unit of work (`record_accepted`, `record_ignored`) after the guard (the
catalog's check that what the event was bound against is unchanged) and before the writes that
join the event's acceptance (its usage count, its sender's heard mark). A redelivery is refused
on the record, whose stored status comes back in the same answer: an applied event costs that
one request.

A delivery authenticated by a bearer token that covers no part of its body (`DeliveryToken`)
adds a third item, `WHTOKEN#<provider>#<sha256 of the token>` (`TokenUse`): the digests of the
bodies the token brought (`bodies`), until when it may bring new ones (`openUntil`, set when it
is first seen) and its TTL (`expiresAt`, the token's own expiry). Its condition (first
sighting, a body it brought before, or still open) failing cancels the whole transaction:
nothing of the event is stored and the delivery is refused.

Stored names: a record written before the lease and the provider were stored as `lease_until`
and `provider_id` (the message's spelling) holds them as `leaseUntil` and `providerId`; such a
record is read, claimed and released through either name (`legacy_*`) until its TTL
(`RECORD_DAYS`) has removed the last of them.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pynamodb.attributes import UnicodeAttribute, UnicodeSetAttribute

from switchboard.core import store
from switchboard.core.store import (
    EpochAttribute,
    IntegerAttribute,
    IsoDateTimeAttribute,
    Refusal,
    RelationIndex,
    TableItem,
    TenantIndex,
    UnitOfWork,
)
from switchboard.providers.base import DeliveryToken
from switchboard.webhooks.events import Acceptance, EventStatus, IgnoredEvent, IgnoredPage, NotAccepted, StoredEvent

DEDUPE_DAYS = 4
RECORD_DAYS = 8
PENDING_SHARDS = 4
BODY_DIGEST_CHARS = 32  # 128 bits of the body's SHA-256: a forged body cannot be made to match one
PENDING: EventStatus = "pending"


class DedupeMarker(TableItem):
    PREFIX = "WHDEDUPE"  # pk: WHDEDUPE#<provider>#<instanceId>#<eventId>

    expires_at = EpochAttribute(attr_name="expiresAt")
    received_at = IsoDateTimeAttribute(attr_name="receivedAt")


class EventRecord(TableItem):
    PREFIX = "WHEVENT"  # pk: WHEVENT#<provider>#<instanceId>#<eventId>

    provider_id = UnicodeAttribute(null=True)
    legacy_provider_id = UnicodeAttribute(attr_name="providerId", null=True)
    provider_instance_id = UnicodeAttribute(attr_name="providerInstanceId")
    instance_key = UnicodeAttribute(attr_name="instanceKey")
    name = UnicodeAttribute()
    event_id = UnicodeAttribute(attr_name="eventId")
    body_sha256 = UnicodeAttribute(attr_name="bodySha256", null=True)
    received_at = IsoDateTimeAttribute(attr_name="receivedAt")
    payload = UnicodeAttribute(null=True)
    status = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    lease_until = IntegerAttribute(null=True)  # epoch seconds; 0: given back
    legacy_lease_until = IntegerAttribute(attr_name="leaseUntil", null=True)
    applied_at = IsoDateTimeAttribute(attr_name="appliedAt", null=True)
    expires_at = EpochAttribute(attr_name="expiresAt")
    reason_code = UnicodeAttribute(null=True)
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    gsi2pk = UnicodeAttribute(null=True)
    gsi2sk = UnicodeAttribute(null=True)
    pending = TenantIndex["EventRecord"]()
    by_instance = RelationIndex["EventRecord"]()


class TokenUse(TableItem):
    PREFIX = "WHTOKEN"  # pk: WHTOKEN#<provider>#<sha256 of the token>

    bodies = UnicodeSetAttribute(null=True)
    open_until = IntegerAttribute(attr_name="openUntil", null=True)
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)


class EventStore:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def record_accepted(
        self, uow: UnitOfWork, event: StoredEvent, lease_seconds: int, token: DeliveryToken | None = None
    ) -> None:
        """Join `uow` with marker and pending record (leased to the caller), if the delivery's
        `token` may bring its body.

        Refused (NotAccepted): `replayed` when the token may not bring this body, otherwise what
        the existing record says of a redelivery (`duplicate`, `in_flight`, `claimable`). The
        token before the record: a new body never passes for a duplicate."""
        now = event.received_at
        self._join_token_use(uow, event, token)
        record = _record(event, PENDING, now + timedelta(days=RECORD_DAYS))
        record.payload = json.dumps(
            {"seq": event.seq, "data": event.data, "instance": event.envelope_instance}, separators=(",", ":")
        )
        record.lease_until = _epoch(now + timedelta(seconds=lease_seconds))
        record.gsi1pk = _pending_index(event)
        record.gsi1sk = f"{now.isoformat()}#{event.event_id}"
        uow.put(
            record,
            EventRecord.pk.does_not_exist(),
            refused=lambda refusal: NotAccepted(_redelivery(refusal, now)),
            return_old=True,
        )
        marker = DedupeMarker(DedupeMarker.pk_for(_identity(event)), DedupeMarker.sk_for())
        marker.expires_at = now + timedelta(days=DEDUPE_DAYS)
        marker.received_at = now
        # The marker without its record: accepted before, the record is gone.
        uow.put(marker, DedupeMarker.pk.does_not_exist(), refused=NotAccepted("duplicate"))

    def record_ignored(self, uow: UnitOfWork, event: StoredEvent, token: DeliveryToken | None = None) -> None:
        """Join `uow` with the record of an event that is acknowledged but never applied, with its
        reason (no payload), if `token` may bring its body. Refused (NotAccepted): `replayed`
        or `duplicate` (already recorded)."""
        self._join_token_use(uow, event, token)
        record = _record(event, "ignored", event.received_at + timedelta(days=RECORD_DAYS))
        record.reason = event.reason or ""
        record.reason_code = event.reason_code
        record.gsi2pk = _ignored_partition(event.instance_key)
        record.gsi2sk = f"{event.received_at.astimezone(UTC).isoformat()}#{event.event_id}"
        uow.put(record, EventRecord.pk.does_not_exist(), refused=NotAccepted("duplicate"))

    def ignored(self, instance_key: str, limit: int, cursor: str | None = None) -> IgnoredPage:
        """The instance's ignored events, newest first, a page at a time (one Query)."""
        found = store.page(
            EventRecord,
            EventRecord.by_instance,
            _ignored_partition(instance_key),
            limit=limit,
            cursor=cursor,
            max_requests=1,
        )
        return IgnoredPage(
            items=[
                IgnoredEvent(
                    event_id=item.event_id,
                    name=item.name,
                    reason=item.reason or "",
                    reason_code=item.reason_code or "unsupported",
                    received_at=item.received_at,
                )
                for item in found.items
            ],
            cursor=found.cursor,
        )

    def _join_token_use(self, uow: UnitOfWork, event: StoredEvent, token: DeliveryToken | None) -> None:
        """`token` bringing this event's body, on condition that it may: its first sighting, a
        body it brought before, or before `openUntil`."""
        if token is None:
            return
        now = _epoch(event.received_at)
        body = (event.body_sha256 or "")[:BODY_DIGEST_CHARS]
        expires = datetime.fromtimestamp(max(token.expires_at, now), UTC)
        uow.update(
            TokenUse(TokenUse.pk_for(event.provider_id, token.digest), TokenUse.sk_for()),
            [
                TokenUse.bodies.add({body}),
                TokenUse.open_until.set(TokenUse.open_until | now + token.new_bodies_for_seconds),
                TokenUse.expires_at.set(TokenUse.expires_at | expires),
            ],
            TokenUse.pk.does_not_exist() | TokenUse.bodies.contains(body) | (TokenUse.open_until >= now),
            refused=NotAccepted("replayed"),
        )

    def claim(self, event: StoredEvent, now: datetime, lease_seconds: int) -> StoredEvent | EventStatus | None:
        """Lease a pending record to (re-)apply it.

        Returns the stored event when leased; otherwise what stands in the way, read from the
        same request: "applied", "pending" (leased by another delivery), or None (no record).
        """
        expired = (EventRecord.lease_until < _epoch(now)) | (
            EventRecord.lease_until.does_not_exist() & (EventRecord.legacy_lease_until < _epoch(now))
        )
        actions = [
            EventRecord.lease_until.set(_epoch(now + timedelta(seconds=lease_seconds))),
            EventRecord.legacy_lease_until.remove(),
        ]
        try:
            item = store.update(
                _record_item(event), actions, (EventRecord.status == PENDING) & expired, return_old=True
            )
        except store.ConditionFailed as exc:
            old = exc.old(EventRecord)
            return None if old is None else "applied" if old.status == "applied" else "pending"
        return _stored(item)

    def mark_applied(self, event: StoredEvent, now: datetime) -> None:
        """Applied records leave the pending index; the marker keeps deduplicating."""
        store.update(
            _record_item(event),
            [
                EventRecord.status.set("applied"),
                EventRecord.applied_at.set(now),
                EventRecord.gsi1pk.remove(),
                EventRecord.gsi1sk.remove(),
                EventRecord.lease_until.remove(),
                EventRecord.legacy_lease_until.remove(),
            ],
        )

    def release(self, event: StoredEvent) -> None:
        """Give the lease back after a failed attempt so the provider's redelivery can run at once."""
        store.update(
            _record_item(event),
            [EventRecord.lease_until.set(0), EventRecord.legacy_lease_until.remove()],
            EventRecord.status == PENDING,
        )

    def pending(self, received_before: datetime, limit: int) -> list[StoredEvent]:
        """Pending records received before a moment, oldest first per shard."""
        found: list[StoredEvent] = []
        for shard in range(PENDING_SHARDS):
            partition = _pending_partition(shard)
            for item in store.query(
                EventRecord, partition, EventRecord.gsi1sk < received_before.isoformat(), index=EventRecord.pending
            ):
                found.append(_stored(item))
                if len(found) >= limit:
                    return found
        return found


def _redelivery(refusal: Refusal, now: datetime) -> Acceptance:
    """What the stored record says of a redelivery (nothing comes back from an endpoint that
    does not return it: then it was accepted before, as far as can be told)."""
    record = refusal.old(EventRecord)
    if record is None or record.status != PENDING:
        return "duplicate"  # applied, or ignored: acknowledged before either way
    return "in_flight" if _lease(record) >= _epoch(now) else "claimable"


def _lease(record: EventRecord) -> int:
    if record.lease_until is not None:
        return record.lease_until
    return record.legacy_lease_until or 0


def _identity(event: StoredEvent) -> str:
    return f"{event.provider_id}#{event.provider_instance_id}#{event.event_id}"


def _record_item(event: StoredEvent) -> EventRecord:
    return EventRecord(EventRecord.pk_for(_identity(event)), EventRecord.sk_for())


def _record(event: StoredEvent, status: EventStatus, expires_at: datetime) -> EventRecord:
    """What every event record holds, applied or ignored: its key, its binding and the body's digest."""
    record = _record_item(event)
    record.provider_id = event.provider_id
    record.provider_instance_id = event.provider_instance_id
    record.instance_key = event.instance_key
    record.name = event.name
    record.event_id = event.event_id
    record.body_sha256 = event.body_sha256
    record.received_at = event.received_at
    record.status = status
    record.expires_at = expires_at
    return record


def _ignored_partition(instance_key: str) -> str:
    return f"WHIGNORED#{instance_key}"


def _pending_partition(shard: int) -> str:
    return f"WHEVENTS#PENDING#{shard}"


def _pending_index(event: StoredEvent) -> str:
    return _pending_partition(int(hashlib.sha256(event.event_id.encode()).hexdigest()[:8], 16) % PENDING_SHARDS)


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _stored(item: EventRecord) -> StoredEvent:
    payload = json.loads(item.payload or "{}")
    return StoredEvent(
        provider_id=item.provider_id or item.legacy_provider_id or "",
        provider_instance_id=item.provider_instance_id,
        instance_key=item.instance_key,
        name=item.name,
        event_id=item.event_id,
        seq=payload.get("seq"),
        data=payload.get("data") or {},
        envelope_instance=payload.get("instance"),
        received_at=item.received_at.astimezone(UTC),
        status=item.status,
        body_sha256=item.body_sha256,
    )

"""Outbox of replies waiting for their instance, and the per-instance outgoing webhook secret.

`<instance>` below is the instance's key (`Instance.key`: its tenant and name).

- entry `OUTBOX#<instance>` / `<enqueuedAt>#<messageId>`: waiting (PENDING) or being sent
  (SENDING, with a lease until `lease_until`, epoch seconds); the partition holds only unfinished
  entries, in order; a reply sent in parts keeps how many have left (`parts_sent`), their
  WhatsApp ids (`sent_ids`) and the length its text was cut to; `in_flight` is the part whose
  send started (through a kind that cannot resend safely) and is not recorded; its attachments
  (`items`, JSON: media by their reference in the media bucket, never bytes, and locations), the
  message it quotes (`quote`, JSON) and when the bucket's retention removes their files
  (`media_valid_until`);
- outcome `OUTBOXMSG#<instance>#<messageId>`: one per downstream message id (dedupe), with the
  final status (SENT, FAILED + reason) once the entry leaves the outbox, the WhatsApp id of
  every part sent (`provider_message_ids`) and when the agent's deletion revoked them
  (`revoked_at`);
- GSI1 `OUTBOX#WAITING` lists entries of every instance, for the scheduled drain;
- `OUTHOOK#<instance>`: the SHA-256 of the instance's outgoing webhook secret (never the secret).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from pydantic import TypeAdapter
from pynamodb.attributes import ListAttribute, UnicodeAttribute
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from switchboard.core import store
from switchboard.core.store import EpochAttribute, IntegerAttribute, IsoDateTimeAttribute, TableItem, TenantIndex
from switchboard.providers.base import Quote
from switchboard.providers.content import Content, content_data
from switchboard.routing.records import FinalStatus, OutboxEntry, OutboxStatus, Outcome

OUTCOME_DAYS = 8
WAITING = "OUTBOX#WAITING"  # GSI1's partition of every unfinished entry
NO_LEASE = datetime.fromtimestamp(0, UTC)  # a PENDING entry's: any sender may take it


@cache
def _contents() -> TypeAdapter[list[Content]]:
    """Built on the first entry with attachments read, not at import."""
    return TypeAdapter(list[Content])


class OutboxItem(TableItem):
    """One unfinished reply in its instance's outbox."""

    PREFIX = "OUTBOX"
    SORT_PREFIX = ""  # the sort key is `<enqueuedAt>#<messageId>`: the partition in order

    instance = UnicodeAttribute()
    message_id = UnicodeAttribute()
    phone = UnicodeAttribute()
    text = UnicodeAttribute()
    conversation_id = IntegerAttribute(null=True)
    owner_tag = UnicodeAttribute(null=True)
    enqueued_at = IsoDateTimeAttribute()
    parts_sent = IntegerAttribute(null=True)
    part_chars = IntegerAttribute(null=True)
    in_flight = IntegerAttribute(null=True)
    items = UnicodeAttribute(null=True)
    quote = UnicodeAttribute(null=True)
    media_valid_until = IsoDateTimeAttribute(null=True)
    sent_ids = ListAttribute(of=UnicodeAttribute, null=True)
    status = UnicodeAttribute()
    lease_until = EpochAttribute()
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    waiting = TenantIndex["OutboxItem"]()

    @classmethod
    def of(cls, entry: OutboxEntry) -> OutboxItem:
        return cls(cls.pk_for(entry.instance), cls.sk_for(_sort(entry)))


class OutboxOutcome(TableItem):
    """What became of one downstream message id (its dedupe key while the entry waits)."""

    PREFIX = "OUTBOXMSG"

    status = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    provider_message_id = UnicodeAttribute(null=True)
    provider_message_ids = ListAttribute(of=UnicodeAttribute, null=True)
    revoked_at = IsoDateTimeAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)

    @classmethod
    def of(cls, instance: str, message_id: str) -> OutboxOutcome:
        return cls(cls.pk_for(instance, message_id), cls.sk_for())


class OutgoingHookSecret(TableItem):
    """The digest of an instance's outgoing webhook secret."""

    PREFIX = "OUTHOOK"

    tenant = UnicodeAttribute()
    digest = UnicodeAttribute()
    hint = UnicodeAttribute()
    created_at = IsoDateTimeAttribute()


class _Refused(Exception):
    """The write's condition did not hold: the operation answers False."""


class OutboxRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    # --- entries ---------------------------------------------------------------------------

    def enqueue(self, entry: OutboxEntry) -> bool:
        """Add an entry and its outcome record together; False if this message id was seen before."""
        item = OutboxItem.of(entry)
        item.instance = entry.instance
        item.message_id = entry.message_id
        item.phone = entry.phone
        item.text = entry.text
        item.conversation_id = entry.conversation_id
        item.owner_tag = entry.owner_tag
        item.enqueued_at = entry.enqueued_at
        item.parts_sent = entry.parts_sent
        item.part_chars = entry.part_chars
        item.in_flight = entry.in_flight
        item.items = json.dumps([content_data(content) for content in entry.items]) if entry.items else None
        item.quote = entry.quote.model_dump_json() if entry.quote is not None else None
        item.media_valid_until = entry.media_valid_until
        item.sent_ids = _ids(entry.sent_ids) or None
        item.status = "PENDING"
        item.lease_until = NO_LEASE
        item.gsi1pk = WAITING
        item.gsi1sk = f"{entry.instance}#{_sort(entry)}"
        outcome = OutboxOutcome.of(entry.instance, entry.message_id)
        outcome.status = "PENDING"
        outcome.expires_at = entry.enqueued_at + timedelta(days=OUTCOME_DAYS)
        uow = store.unit_of_work()
        uow.put(outcome, OutboxOutcome.pk.does_not_exist(), refused=_Refused())
        uow.put(item)
        try:
            uow.commit()
        except _Refused:
            return False
        return True

    def waiting(self, instance: str, limit: int) -> list[OutboxEntry]:
        """The instance's unfinished entries, oldest first."""
        items = store.query(OutboxItem, OutboxItem.pk_for(instance), limit=limit, consistent=True)
        return [_entry(item) for item in items]

    def instances_waiting(self) -> list[str]:
        items = OutboxItem.waiting.query(WAITING, attributes_to_get=["instance"])
        return sorted({item.instance for item in items})

    def claim(self, entry: OutboxEntry, now: datetime, lease_seconds: int) -> OutboxEntry | None:
        """Take an entry for sending: it is PENDING, or its sender's lease ran out. The entry as
        claimed (a dead sender's `in_flight` included), read by the same write."""
        sending: OutboxStatus = "SENDING"
        pending: OutboxStatus = "PENDING"
        try:
            claimed = store.update(
                OutboxItem.of(entry),
                [
                    OutboxItem.status.set(sending),
                    OutboxItem.lease_until.set(now + timedelta(seconds=lease_seconds)),
                ],
                OutboxItem.pk.exists() & ((OutboxItem.status == pending) | (OutboxItem.lease_until < now)),
            )
        except store.ConditionFailed:
            return None
        return _entry(claimed)

    def begin_part(self, entry: OutboxEntry) -> bool:
        """Mark the part `entry.parts_sent` in flight; False when the entry is finished or moved on."""
        return self._conditional(entry, [OutboxItem.in_flight.set(entry.parts_sent)], _sending_from(entry.parts_sent))

    def advance(
        self,
        entry: OutboxEntry,
        parts_sent: int,
        part_chars: int,
        now: datetime,
        lease_seconds: int,
        *,
        provider_message_id: str | None = None,
    ) -> bool:
        """Record that the first `parts_sent` parts of a claimed entry left (cut to `part_chars`),
        the last of them as `provider_message_id`, and renew the lease; False when the entry is no
        longer being sent from that count (the condition also makes `sent_ids` the stored list)."""
        actions: list[Action] = [
            OutboxItem.parts_sent.set(parts_sent),
            OutboxItem.part_chars.set(part_chars),
            OutboxItem.lease_until.set(now + timedelta(seconds=lease_seconds)),
            OutboxItem.in_flight.remove(),
        ]
        if provider_message_id is not None:
            actions.append(OutboxItem.sent_ids.set(_ids([*entry.sent_ids, provider_message_id])))
        return self._conditional(entry, actions, _sending_from(parts_sent - 1))

    def release(self, entry: OutboxEntry) -> None:
        pending: OutboxStatus = "PENDING"
        store.update(
            OutboxItem.of(entry),
            [OutboxItem.status.set(pending), OutboxItem.lease_until.set(NO_LEASE), OutboxItem.in_flight.remove()],
            OutboxItem.pk.exists(),
        )

    def finish(
        self, entry: OutboxEntry, status: FinalStatus, reason: str | None, provider_message_id: str | None
    ) -> bool:
        """Remove the entry and record its outcome in one transaction; False if it was already finished."""
        actions: list[Action] = [OutboxOutcome.status.set(status)]
        if reason:
            actions.append(OutboxOutcome.reason.set(reason))
        if provider_message_id:
            actions.append(OutboxOutcome.provider_message_id.set(provider_message_id))
        sent = [*entry.sent_ids, *([provider_message_id] if provider_message_id else [])]
        if sent:
            actions.append(OutboxOutcome.provider_message_ids.set(_ids(sent)))
        uow = store.unit_of_work()
        uow.delete(OutboxItem.of(entry), OutboxItem.pk.exists(), refused=_Refused())
        uow.update(OutboxOutcome.of(entry.instance, entry.message_id), actions)
        try:
            uow.commit()
        except _Refused:
            return False
        return True

    def outcome(self, instance: str, message_id: str) -> Outcome | None:
        key = OutboxOutcome.of(instance, message_id)
        try:
            item = OutboxOutcome.get(key.pk, key.sk, consistent_read=True)
        except OutboxOutcome.DoesNotExist:
            return None
        return Outcome.model_validate(
            {
                "status": item.status,
                "reason": item.reason,
                "provider_message_id": item.provider_message_id,
                "provider_message_ids": [str(value) for value in item.provider_message_ids or []],
                "revoked": item.revoked_at is not None,
            }
        )

    def mark_revoked(self, instance: str, message_id: str, at: datetime) -> bool:
        """Record that the agent's deletion revoked the reply's parts; False when one did already
        (a redelivered deletion revokes nothing twice) or the reply is unknown."""
        try:
            store.update(
                OutboxOutcome.of(instance, message_id),
                [OutboxOutcome.revoked_at.set(at)],
                OutboxOutcome.pk.exists() & OutboxOutcome.revoked_at.does_not_exist(),
            )
        except store.ConditionFailed:
            return False
        return True

    @staticmethod
    def _conditional(entry: OutboxEntry, actions: list[Action], condition: Condition) -> bool:
        try:
            store.update(OutboxItem.of(entry), actions, condition)
        except store.ConditionFailed:
            return False
        return True

    # --- outgoing webhook secret -----------------------------------------------------------

    def set_webhook_digest(self, tenant: str, instance: str, digest: str, hint: str, at: datetime) -> None:
        store.put(
            OutgoingHookSecret(
                OutgoingHookSecret.pk_for(instance),
                OutgoingHookSecret.sk_for(),
                tenant=tenant,
                digest=digest,
                hint=hint,
                created_at=at,
            )
        )

    def webhook_digest(self, tenant: str, instance: str) -> str | None:
        """The digest set for this instance (by its key) by its tenant."""
        try:
            item = OutgoingHookSecret.get(
                OutgoingHookSecret.pk_for(instance), OutgoingHookSecret.sk_for(), consistent_read=True
            )
        except OutgoingHookSecret.DoesNotExist:
            return None
        return item.digest if item.tenant == tenant else None


def _sending_from(parts_sent: int) -> Condition:
    """The entry is still being sent, with `parts_sent` parts recorded (none: the attribute absent)."""
    sending: OutboxStatus = "SENDING"
    count: Condition = OutboxItem.parts_sent == parts_sent
    if parts_sent == 0:
        count = count | OutboxItem.parts_sent.does_not_exist()
    condition: Condition = OutboxItem.pk.exists() & (OutboxItem.status == sending) & count
    return condition


def _entry(item: OutboxItem) -> OutboxEntry:
    return OutboxEntry(
        instance=item.instance,
        message_id=item.message_id,
        phone=item.phone,
        text=item.text,
        conversation_id=item.conversation_id,
        owner_tag=item.owner_tag,
        enqueued_at=item.enqueued_at,
        parts_sent=item.parts_sent or 0,
        part_chars=item.part_chars,
        in_flight=item.in_flight,
        items=_contents().validate_python(json.loads(item.items)) if item.items else [],
        quote=Quote.model_validate_json(item.quote) if item.quote else None,
        media_valid_until=item.media_valid_until,
        sent_ids=[str(value) for value in item.sent_ids or []],
    )


def _ids(values: list[str]) -> Any:
    """WhatsApp ids as a list attribute's value (PynamoDB types a list of `UnicodeAttribute`s by
    its attribute class, not the strings it holds)."""
    return list(values)


def _sort(entry: OutboxEntry) -> str:
    return f"{entry.enqueued_at.isoformat()}#{entry.message_id}"

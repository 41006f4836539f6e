"""Health items: pk `HEALTH#<instance key>`, sk `#META`, one per instance (`HealthItem`), and the
pacing items (`DynamoPaceStore`).

Counters (`minute_sends`, `hour_sends`, `window_sent`, `window_delivered`, `fail_<code>`) are
only ever added to, so concurrent workers never conflict on them; the reasons and the state are
rewritten under the item's `version` (a conditional write). A batch of sends costs one UpdateItem
(two at a minute's turn, three at an hour's), which answers the counters the ban watch judges on.

The diversity sample rides in that same UpdateItem: each send's recipient and text fingerprints
go to the top-level attributes `dr_<slot>` and `dt_<slot>`, and `send_seq` counts the sends.
Top-level attributes, not a map: `SET sample.#slot` fails on an item (or an item without the
map) that does not exist yet, and creating the map first would cost a second request. The slots
are chosen by the caller before the write (from `send_seq mod size` of the item it last saw, so
one worker writing in turn keeps exactly the last `size` sends; a worker that has not seen the
item starts at random): the write cannot read `send_seq` before naming the attributes it sets.
Two workers with the same stale `send_seq` write the same slots, and the sample loses those
sends, which a ratio over 50 sends can afford.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from switchboard.core import store
from switchboard.core.buckets import Claim
from switchboard.core.store import (
    AttributeFamily,
    ConditionFailed,
    DocumentAttribute,
    EpochAttribute,
    IntegerAttribute,
    IsoDateTimeAttribute,
    TableItem,
)
from switchboard.health.domain import Health, HealthChanged, HealthState, Reason, SampleEntry
from switchboard.quotas.dynamo import BucketItem, take_bucket

_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
COUNT_ATTEMPTS = 4


class HealthItem(TableItem):
    """One instance's health: the reasons under `version`, the counters only ever added to."""

    PREFIX = "HEALTH"

    reasons = DocumentAttribute(null=True)  # code -> the reason as JSON
    state = UnicodeAttribute(null=True)
    since = IsoDateTimeAttribute(null=True)
    # Not PynamoDB's VersionAttribute: the counters are added to without it, and it would put a
    # version condition on every send.
    version = IntegerAttribute(null=True)
    at_minute = IntegerAttribute(null=True)  # epoch minute of `minute_sends`
    minute_sends = IntegerAttribute(null=True)
    at_hour = IntegerAttribute(null=True)  # epoch hour of `hour_sends`
    hour_sends = IntegerAttribute(null=True)
    window_sent = IntegerAttribute(null=True)
    window_delivered = IntegerAttribute(null=True)
    delivery_ratio = NumberAttribute(null=True)
    send_seq = IntegerAttribute(null=True)


# Sends a provider refused, per provider code: `fail_<code>`.
FAILURES = AttributeFamily("fail_", IntegerAttribute)
# The diversity sample, per slot: the recipient's fingerprint `dr_<slot>`, the text's `dt_<slot>`.
RECIPIENTS = AttributeFamily("dr_", UnicodeAttribute)
TEXTS = AttributeFamily("dt_", UnicodeAttribute)

_COUNTERS = ("at_minute", "minute_sends", "at_hour", "hour_sends", "window_sent", "window_delivered", "send_seq")


def _item(instance_key: str) -> HealthItem:
    return HealthItem(HealthItem.pk_for(instance_key), HealthItem.sk_for())


class HealthRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def get(self, instance_key: str) -> Health:
        item = store.get(HealthItem, HealthItem.pk_for(instance_key), HealthItem.sk_for(), consistent=True)
        return _health(instance_key, item)

    def get_many(self, instance_keys: Collection[str]) -> dict[str, Health]:
        """Every instance's health, a missing item read as healthy (one BatchGetItem per 100)."""
        wanted = list(dict.fromkeys(instance_keys))
        found = {key: Health(instance_key=key) for key in wanted}
        for item in HealthItem.batch_get([(HealthItem.pk_for(key), HealthItem.sk_for()) for key in wanted]):
            key = item.pk.removeprefix(f"{HealthItem.PREFIX}{store.SEPARATOR}")
            found[key] = _health(key, item)
        return found

    def count_send(
        self, instance_key: str, now: datetime, samples: Sequence[SampleEntry] = (), *, sends: int = 1
    ) -> Health:
        """`sends` more sends this minute, this hour and in the delivery window, and `samples`
        (slot, recipient and text fingerprints, one slot each) in the diversity sample; the item
        after it."""
        minute, hour = int(now.timestamp()) // 60, int(now.timestamp()) // 3600
        sampled: list[Action] = []
        for slot, recipient, text in {entry[0]: entry for entry in samples}.values():
            sampled += [RECIPIENTS[int(slot)].set(recipient), TEXTS[int(slot)].set(text)]
        counted = [HealthItem.window_sent.add(sends), HealthItem.send_seq.add(sends), *sampled]
        same_minute = (
            [HealthItem.minute_sends.add(sends), HealthItem.hour_sends.add(sends), *counted],
            HealthItem.at_minute == minute,
        )
        new_minute = (
            [
                HealthItem.at_minute.set(minute),
                HealthItem.minute_sends.set(sends),
                HealthItem.hour_sends.add(sends),
                *counted,
            ],
            (HealthItem.at_minute.does_not_exist() | (HealthItem.at_minute < minute)) & (HealthItem.at_hour == hour),
        )
        new_hour = (
            [
                HealthItem.at_minute.set(minute),
                HealthItem.minute_sends.set(sends),
                HealthItem.at_hour.set(hour),
                HealthItem.hour_sends.set(sends),
                *counted,
            ],
            HealthItem.at_hour.does_not_exist() | (HealthItem.at_hour < hour),
        )
        for _ in range(COUNT_ATTEMPTS):
            for actions, condition in (same_minute, new_minute, new_hour):
                item = self._update_if(instance_key, actions, condition)
                if item is not None:
                    return _health(instance_key, item)
        # Every step lost a race against rollovers (clock skew between workers): count nothing.
        return self.get(instance_key)

    def count_failure(self, instance_key: str, provider_code: str) -> Health:
        code = provider_code if _CODE.match(provider_code) else "other"
        return _health(instance_key, store.update(_item(instance_key), [FAILURES[code].add(1)]))

    def count_delivery(self, instance_key: str) -> None:
        store.update(_item(instance_key), [HealthItem.window_delivered.add(1)])

    def save_reasons(
        self,
        health: Health,
        reasons: dict[str, Reason],
        state: HealthState,
        since: datetime | None,
        *,
        close_window: tuple[int, int, float] | None = None,
    ) -> Health:
        """Write the reasons and the state if nobody did since `health` was read (else HealthChanged).

        `close_window` = (sent, delivered, ratio): the window judged is taken off the counters
        (sends counted meanwhile stay in the next window) and its ratio kept."""
        actions: list[Action] = [
            HealthItem.reasons.set({code: _stored_reason(reason) for code, reason in reasons.items()}),
            HealthItem.state.set(str(state)),
            HealthItem.since.set(since) if since is not None else HealthItem.since.remove(),
            HealthItem.version.set(health.version + 1),
        ]
        if close_window is not None:
            sent, delivered, ratio = close_window
            actions += [
                HealthItem.delivery_ratio.set(round(ratio, 4)),
                HealthItem.window_sent.add(-sent),
                HealthItem.window_delivered.add(-delivered),
            ]
        condition = HealthItem.version.does_not_exist() if health.version == 0 else HealthItem.version == health.version
        try:
            item = store.update(_item(health.instance_key), actions, condition)
        except ConditionFailed as error:
            raise HealthChanged(health.instance_key) from error
        return _health(health.instance_key, item)

    @staticmethod
    def _update_if(instance_key: str, actions: Sequence[Action], condition: Condition) -> HealthItem | None:
        try:
            return store.update(_item(instance_key), actions, condition)
        except ConditionFailed:
            return None


def _stored_reason(reason: Reason) -> dict[str, Any]:
    stored: dict[str, Any] = reason.model_dump(mode="json", exclude_none=True)
    return stored


def _slots(family: AttributeFamily[str], item: HealthItem) -> dict[int, str]:
    return {int(slot): value for slot, value in family.read(item).items() if slot.isdigit()}


def _health(instance_key: str, item: HealthItem | None) -> Health:
    if item is None:
        return Health(instance_key=instance_key)
    counters = {name: value for name in _COUNTERS if (value := getattr(item, name)) is not None}
    return Health.model_validate(
        {
            **counters,
            "instance_key": instance_key,
            "reasons": item.reasons or {},
            **({"state": item.state} if item.state is not None else {}),
            "since": item.since,
            "version": item.version or 0,
            "delivery_ratio": item.delivery_ratio,
            "failures": FAILURES.read(item),
            "sample_recipients": _slots(RECIPIENTS, item),
            "sample_texts": _slots(TEXTS, item),
        }
    )


class PaceBucket(BucketItem):
    """A number's pacing bucket."""

    PREFIX = "PACE"
    SORT_PREFIX = "BUCKET"


class PaceDay(TableItem):
    """New contacts of a number counted one UTC day."""

    PREFIX = "PACE"
    SORT_PREFIX = "NEW"

    contacts = IntegerAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)


class DynamoPaceStore:
    """pk `PACE#<number id>`: sk `BUCKET` (the bucket's `tat`, in us) and `NEW#<day>` (new
    contacts counted that UTC day), each with a TTL."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def take(self, number_id: str, claim: Claim, expires_at: int) -> int:
        return take_bucket(PaceBucket(PaceBucket.pk_for(number_id), PaceBucket.sk_for()), claim, expires_at)

    def count_new_contact(self, number_id: str, day: date, budget: int) -> bool:
        expires = datetime.combine(day + timedelta(days=2), datetime.min.time(), tzinfo=UTC)
        item = PaceDay(PaceDay.pk_for(number_id), PaceDay.sk_for(day.isoformat()))
        actions = [PaceDay.contacts.add(1), PaceDay.expires_at.set(expires)]
        try:
            store.update(item, actions, PaceDay.contacts.does_not_exist() | (PaceDay.contacts < budget))
        except ConditionFailed:
            return False
        return True

    def new_contacts_on(self, number_id: str, day: date) -> int:
        item = store.get(PaceDay, PaceDay.pk_for(number_id), PaceDay.sk_for(day.isoformat()))
        return item.contacts or 0 if item else 0

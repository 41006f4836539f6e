"""Quota items in the MainTable, all in the tenant's `QUOTA#<tag>` partition:

- `#META`: the platform's overrides of the default quotas (`QuotaItem`);
- `BUCKET#tenant`, `BUCKET#key#<key id>`: token buckets (`tat`, see `core.buckets.Bucket`),
  gone by TTL once they would be full again (a missing bucket is a full one) (`QuotaBucket`);
- `DAY#<yyyy-mm-dd>`: messages accepted that UTC day, gone by TTL two days later (`QuotaDay`).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.expressions.update import Action

from switchboard.core import store
from switchboard.core.buckets import BucketMoved, Claim
from switchboard.core.store import ConditionFailed, IntegerAttribute, Refused, TableItem, UnitOfWork
from switchboard.quotas.domain import QuotaOverrides

DAY_TTL = timedelta(days=2)


class BucketItem(TableItem):
    """A token bucket (its theoretical arrival time `tat`), gone by TTL once it would be full;
    the base of every bucket kind (a tenant's or key's requests, a number's pace)."""

    tat = IntegerAttribute(null=True)
    expires_at = IntegerAttribute(attr_name="expiresAt", null=True)


class QuotaItem(TableItem):
    PREFIX = "QUOTA"

    tenant = UnicodeAttribute()
    requests_per_second = NumberAttribute(null=True)
    burst = IntegerAttribute(null=True)
    key_requests_per_second = NumberAttribute(null=True)
    key_burst = IntegerAttribute(null=True)
    messages_per_day = IntegerAttribute(null=True)


class QuotaBucket(BucketItem):
    PREFIX = "QUOTA"
    SORT_PREFIX = "BUCKET"

    tenant = UnicodeAttribute(null=True)


class QuotaDay(TableItem):
    PREFIX = "QUOTA"
    SORT_PREFIX = "DAY"

    sent = IntegerAttribute(null=True)
    tenant = UnicodeAttribute(null=True)
    expires_at = IntegerAttribute(attr_name="expiresAt", null=True)


class DynamoBuckets:
    """Token buckets: every take is one conditional UpdateItem, with no read before it."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def take(self, tenant: str, bucket: str, claim: Claim, expires_at: int) -> int:
        """Apply the claim; returns the bucket's new `tat`. Raises BucketMoved with the stored
        `tat` when the bucket is not as claimed (the failed write returns it: no extra read)."""
        item = QuotaBucket(QuotaBucket.pk_for(tenant), QuotaBucket.sk_for(bucket))
        return take_bucket(item, claim, expires_at, QuotaBucket.tenant.set(tenant))


def take_bucket(bucket: BucketItem, claim: Claim, expires_at: int, *also: Action) -> int:
    """One conditional UpdateItem applying `claim` to `bucket` (its `tat`, and the actions `also`
    set alongside); returns the new `tat`, or raises BucketMoved with the stored one, which the
    failed write returns."""
    model = type(bucket)
    if claim.idle:
        tat = model.tat.set(claim.now + claim.add)
        condition = model.tat.does_not_exist() | (model.tat <= claim.now)
    else:
        tat = model.tat.set(model.tat + claim.add)
        condition = (model.tat > claim.now) & (model.tat <= claim.limit)
    try:
        after = store.update(bucket, [tat, model.expires_at.set(expires_at), *also], condition, return_old=True)
    except ConditionFailed as failed:
        old = failed.old(model)
        raise BucketMoved(old.tat if old else None) from failed
    if after.tat is None:
        raise RuntimeError("the bucket's update answered no tat")
    return after.tat


class DynamoQuotaStore:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def get_overrides(self, tenant: str) -> QuotaOverrides | None:
        item = store.get(QuotaItem, QuotaItem.pk_for(tenant), QuotaItem.sk_for())
        if item is None:
            return None
        return QuotaOverrides(
            requests_per_second=item.requests_per_second,
            burst=item.burst,
            key_requests_per_second=item.key_requests_per_second,
            key_burst=item.key_burst,
            messages_per_day=item.messages_per_day,
        )

    def put_overrides(self, tenant: str, overrides: QuotaOverrides) -> None:
        fields = overrides.model_dump(exclude_none=True)
        store.put(QuotaItem(QuotaItem.pk_for(tenant), QuotaItem.sk_for(), tenant=tenant, **fields))

    def count_message_in(self, uow: UnitOfWork, tenant: str, day: date, limit: int, refused: Refused) -> None:
        """Join one conditional ADD to `uow`: counted only while fewer than `limit` are counted that
        day; when the day is full the commit raises `refused` and writes nothing."""
        item = QuotaDay(QuotaDay.pk_for(tenant), QuotaDay.sk_for(day.isoformat()))
        expires = int((_midnight(day) + DAY_TTL).timestamp())
        actions = [
            QuotaDay.sent.add(1),
            QuotaDay.expires_at.set(QuotaDay.expires_at | expires),
            QuotaDay.tenant.set(tenant),
        ]
        uow.update(item, actions, QuotaDay.sent.does_not_exist() | (QuotaDay.sent < limit), refused=refused)

    def messages_on(self, tenant: str, day: date) -> int:
        item = store.get(QuotaDay, QuotaDay.pk_for(tenant), QuotaDay.sk_for(day.isoformat()))
        return item.sent or 0 if item else 0


def _midnight(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time(), tzinfo=UTC)

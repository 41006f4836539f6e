"""The webhook delivery log's item (`DeliveryItem`) and its repository.

One item per delivery: pk `WHDELIVERY#<tenant>#<webhook id>`, sk `#META`, the job as queued
(JSON, what a replay queues again), the last attempt's answer and every attempt in `history`,
`expiresAt` `DELIVERY_RETENTION` after the last write. Each attempt is one UpdateItem that creates
the item at the first: no read, no condition.

Indexes: GSI1 `WHDELIVERIES#<tenant>` / `<first attempt ISO>#<id>` lists a tenant's deliveries
newest first (every other filter is a filter on it); GSI2 `WHDEAD#<tenant>` / the same sort key
holds only the deliveries whose attempts are exhausted (`failed`): the dead-letter view, and what a
replay of a time range reads. A replay takes the delivery out of it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pynamodb.attributes import UnicodeAttribute
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import GlobalSecondaryIndex

from switchboard.core import store
from switchboard.core.errors import DeliveryInProgress, NotFound
from switchboard.core.store import (
    EpochAttribute,
    IntegerAttribute,
    IsoDateTimeAttribute,
    RelationIndex,
    TableItem,
    TenantIndex,
)
from switchboard.messages.delivery_log import (
    DELIVERY_RETENTION,
    REPLAY_PENDING,
    REPLAYABLE,
    Delivery,
    DeliveryAttempt,
    DeliveryFilter,
    DeliveryPage,
)
from switchboard.messages.domain import ClientWebhookJob
from switchboard.messages.dynamo import JsonListAttribute

# Index pages one listing reads at most before it answers with a cursor (as the message log).
MAX_DELIVERY_REQUESTS = 5


class DeliveryItem(TableItem):
    PREFIX = "WHDELIVERY"  # pk: WHDELIVERY#<tenant>#<webhook id>

    tenant = UnicodeAttribute()
    id = UnicodeAttribute()
    event = UnicodeAttribute()
    api_key_id = UnicodeAttribute(null=True)
    instance = UnicodeAttribute(null=True)
    job = UnicodeAttribute()  # the ClientWebhookJob as queued, JSON
    status = UnicodeAttribute()
    attempts = IntegerAttribute()
    replays = IntegerAttribute(null=True)
    status_code = IntegerAttribute(null=True)
    latency_ms = IntegerAttribute(null=True)
    error = UnicodeAttribute(null=True)
    next_retry_at = IsoDateTimeAttribute(null=True)
    created_at = IsoDateTimeAttribute()
    updated_at = IsoDateTimeAttribute()
    delivered_at = IsoDateTimeAttribute(null=True)
    replayed_at = IsoDateTimeAttribute(null=True)
    history = JsonListAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt")
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    gsi2pk = UnicodeAttribute(null=True)
    gsi2sk = UnicodeAttribute(null=True)
    by_tenant = TenantIndex["DeliveryItem"]()
    dead = RelationIndex["DeliveryItem"]()


def _item(tenant: str, delivery_id: str) -> DeliveryItem:
    return DeliveryItem(DeliveryItem.pk_for(tenant, delivery_id), DeliveryItem.sk_for())


def _listing(tenant: str) -> str:
    return f"WHDELIVERIES#{tenant}"


def _dead_letters(tenant: str) -> str:
    return f"WHDEAD#{tenant}"


def _order(at: datetime, delivery_id: str) -> str:
    return f"{at.astimezone(UTC).isoformat()}#{delivery_id}"


class DeliveryRepository:
    """`delivery_log.DeliveryStore` on the main table."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def record_attempt(self, job: ClientWebhookJob, attempt: DeliveryAttempt, next_retry_at: datetime | None) -> None:
        at = attempt.at
        entry = attempt.model_dump(mode="json", exclude_none=True)
        order = _order(at, job.id)
        actions: list[Action] = [
            DeliveryItem.tenant.set(job.tenant),
            DeliveryItem.id.set(job.id),
            DeliveryItem.event.set(job.event),
            DeliveryItem.job.set(job.model_dump_json(exclude_none=True)),
            DeliveryItem.status.set(attempt.outcome),
            DeliveryItem.attempts.add(1),
            DeliveryItem.latency_ms.set(attempt.latency_ms),
            DeliveryItem.created_at.set(DeliveryItem.created_at | at),
            DeliveryItem.updated_at.set(at),
            DeliveryItem.history.set((DeliveryItem.history | []).append([entry])),
            DeliveryItem.expires_at.set(at + DELIVERY_RETENTION),
            DeliveryItem.gsi1pk.set(_listing(job.tenant)),
            DeliveryItem.gsi1sk.set(DeliveryItem.gsi1sk | order),
        ]
        for text, value in ((DeliveryItem.api_key_id, job.api_key_id), (DeliveryItem.instance, job.instance)):
            actions.append(text.remove() if value is None else text.set(value))
        actions += [
            DeliveryItem.error.remove() if attempt.error is None else DeliveryItem.error.set(attempt.error),
            DeliveryItem.status_code.remove()
            if attempt.status_code is None
            else DeliveryItem.status_code.set(attempt.status_code),
            DeliveryItem.next_retry_at.remove()
            if next_retry_at is None
            else DeliveryItem.next_retry_at.set(next_retry_at),
        ]
        if attempt.outcome == "delivered":
            actions.append(DeliveryItem.delivered_at.set(at))
        if attempt.outcome == "failed":
            actions += [
                DeliveryItem.gsi2pk.set(_dead_letters(job.tenant)),
                DeliveryItem.gsi2sk.set(DeliveryItem.gsi1sk | order),
            ]
        else:
            actions += [DeliveryItem.gsi2pk.remove(), DeliveryItem.gsi2sk.remove()]
        store.update(_item(job.tenant, job.id), actions)

    def get(self, tenant: str, delivery_id: str) -> Delivery:
        item = store.get(DeliveryItem, DeliveryItem.pk_for(tenant, delivery_id), DeliveryItem.sk_for())
        if item is None:
            raise NotFound("delivery not found")
        return _record(item)

    def page(self, tenant: str, query: DeliveryFilter) -> DeliveryPage:
        index: GlobalSecondaryIndex[DeliveryItem]
        if query.dead_letters:
            index, partition, sort_key = DeliveryItem.dead, _dead_letters(tenant), DeliveryItem.gsi2sk
        else:
            index, partition, sort_key = DeliveryItem.by_tenant, _listing(tenant), DeliveryItem.gsi1sk
        found = store.page(
            DeliveryItem,
            index,
            partition,
            store.time_range(sort_key, query.since, query.until),
            limit=query.limit,
            cursor=query.cursor,
            filter_condition=_filters(query),
            max_requests=MAX_DELIVERY_REQUESTS,
        )
        return DeliveryPage(items=[_record(item) for item in found.items], cursor=found.cursor)

    def mark_replaying(self, tenant: str, delivery_id: str, now: datetime) -> Delivery:
        stale = now - REPLAY_PENDING
        replayable = DeliveryItem.status.is_in(*REPLAYABLE) | (
            (DeliveryItem.status == "replaying") & (DeliveryItem.replayed_at < stale)
        )
        actions = [
            DeliveryItem.status.set("replaying"),
            DeliveryItem.replays.add(1),
            DeliveryItem.replayed_at.set(now),
            DeliveryItem.updated_at.set(now),
            DeliveryItem.next_retry_at.remove(),
            DeliveryItem.expires_at.set(now + DELIVERY_RETENTION),
            DeliveryItem.gsi2pk.remove(),
            DeliveryItem.gsi2sk.remove(),
        ]
        try:
            before = store.update_returning_old(
                _item(tenant, delivery_id), actions, DeliveryItem.pk.exists() & replayable
            )
        except store.ConditionFailed as exc:
            if store.get(DeliveryItem, DeliveryItem.pk_for(tenant, delivery_id), DeliveryItem.sk_for()) is None:
                raise NotFound("delivery not found") from exc
            raise DeliveryInProgress(
                "the delivery is still being retried, or a replay of it is queued: wait for it to end"
            ) from exc
        return _record(before)

    def unmark_replaying(self, tenant: str, before: Delivery) -> None:
        actions: list[Action] = [
            DeliveryItem.status.set(before.status),
            DeliveryItem.replays.set(before.replays),
            DeliveryItem.replayed_at.remove()
            if before.replayed_at is None
            else DeliveryItem.replayed_at.set(before.replayed_at),
        ]
        if before.status == "failed":
            order = _order(before.created_at, before.id)
            actions += [DeliveryItem.gsi2pk.set(_dead_letters(tenant)), DeliveryItem.gsi2sk.set(order)]
        try:
            store.update(_item(tenant, before.id), actions, DeliveryItem.status == "replaying")
        except store.ConditionFailed:
            return  # attempted meanwhile: what that attempt wrote stands


def _record(item: DeliveryItem) -> Delivery:
    return Delivery(
        tenant=item.tenant,
        id=item.id,
        event=item.event,
        api_key_id=item.api_key_id,
        instance=item.instance,
        status=item.status,
        attempts=item.attempts,
        replays=item.replays or 0,
        status_code=item.status_code,
        latency_ms=item.latency_ms,
        error=item.error,
        next_retry_at=item.next_retry_at,
        created_at=item.created_at,
        updated_at=item.updated_at,
        delivered_at=item.delivered_at,
        replayed_at=item.replayed_at,
        history=[DeliveryAttempt.model_validate(entry) for entry in item.history or []],
        job=ClientWebhookJob.model_validate_json(item.job),
    )


def _filters(query: DeliveryFilter) -> Condition | None:
    conditions: list[Condition] = []
    if query.status is not None and not query.dead_letters:
        conditions.append(DeliveryItem.status.is_in(*query.status))
    if query.event is not None:
        conditions.append(DeliveryItem.event == query.event)
    if query.api_key_id is not None:
        conditions.append(DeliveryItem.api_key_id == query.api_key_id)
    if query.instance is not None:
        conditions.append(DeliveryItem.instance == query.instance)
    return store.all_of(conditions)

"""The outbox's DynamoDB store keeps a part in flight across a dead drain: the drain that claims the
entry after the lease ran out reads it, so a send in doubt is never repeated blindly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from switchboard import bootstrap
from switchboard.routing.outbox_dynamo import OutboxRepository
from switchboard.routing.records import OutboxEntry
from tools.support.aws import AwsResources

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ENTRY = OutboxEntry(instance="acme:acme-evo", message_id="901", phone="5511988887777", text="oi", enqueued_at=NOW)


def test_a_part_in_flight_outlives_its_drain_and_a_release_clears_it(aws: AwsResources) -> None:
    store = OutboxRepository(bootstrap.table())
    assert store.enqueue(ENTRY)
    claimed = store.claim(ENTRY, NOW, 60)
    assert claimed is not None and claimed.in_flight is None
    assert store.begin_part(claimed)  # then the drain dies, its send's outcome unknown

    assert store.claim(ENTRY, NOW + timedelta(seconds=30), 60) is None  # its lease still holds
    taken_over = store.claim(ENTRY, NOW + timedelta(seconds=61), 60)

    assert taken_over is not None and taken_over.in_flight == 0
    store.release(taken_over)
    assert store.waiting(ENTRY.instance, 10)[0].in_flight is None


def test_a_part_is_put_in_flight_only_from_the_count_the_store_holds(aws: AwsResources) -> None:
    store = OutboxRepository(bootstrap.table())
    store.enqueue(ENTRY)
    claimed = store.claim(ENTRY, NOW, 60)
    assert claimed is not None and store.advance(claimed, 1, 4096, NOW, 60)

    assert not store.begin_part(claimed)  # a drain that read 0 parts sent is behind: not its part
    assert store.begin_part(claimed.model_copy(update={"parts_sent": 1}))
    assert store.waiting(ENTRY.instance, 10)[0].in_flight == 1

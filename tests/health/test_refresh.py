"""An expired pause is announced by the scheduled reconciliation, without waiting for the
instance's next send: one read per instance per period, a write and a `number.health.changed`
only when the state moved."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from switchboard import bootstrap
from switchboard.calls.reconcile import Reconciler
from switchboard.catalog.domain import Instance
from switchboard.connection_state.domain import Check
from switchboard.core.clock import utcnow
from switchboard.health.domain import TIMELOCK, HealthState, Reason, Thresholds
from switchboard.health.dynamo import HealthRepository
from switchboard.health.service import HEALTH_CHANGED
from tests.health.test_ban_watch import T0, Requests, WatchedWorld, instance
from tools.support.aws import AwsResources
from tools.support.fakes import FakeCatalog

TEN_MINUTES = Thresholds(timelock_pause_seconds=600)


class Drained(BaseModel):
    sent: int = 0


def test_given_a_pause_expired_then_a_refresh_announces_it_once_with_the_previous_state(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"), limits=TEN_MINUTES)
    source = world.instances["a"]
    world.watch.refused(source, "463")
    assert [detail["state"] for _, detail in world.published.events] == ["paused_for_new_contacts"]

    world.later(timedelta(minutes=9))
    assert world.watch.refresh(source) is HealthState.PAUSED_FOR_NEW_CONTACTS
    assert len(world.published.events) == 1

    world.later(timedelta(minutes=2))
    assert world.watch.refresh(source) is HealthState.HEALTHY

    [_, (kind, detail)] = world.published.events
    assert kind == HEALTH_CHANGED
    assert (detail["instance"], detail["previousState"], detail["state"]) == ("a", "paused_for_new_contacts", "healthy")
    # Healthy since the pause lifted, not since the reconciliation noticed.
    assert detail["since"] == (T0 + timedelta(minutes=10)).isoformat()
    assert (detail["reasons"], detail["pausedUntil"]) == ([], None)
    assert [event for _, event, _ in world.published.webhooks] == [HEALTH_CHANGED, HEALTH_CHANGED]
    stored = world.store.get(source.key)
    assert (stored.state, stored.reasons) == (HealthState.HEALTHY, {})

    world.later(timedelta(minutes=5))
    assert world.watch.refresh(source) is HealthState.HEALTHY
    assert len(world.published.events) == 2
    assert len(world.published.webhooks) == 2


def test_a_refresh_with_nothing_moved_reads_once_and_writes_nothing(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"), limits=TEN_MINUTES)
    source = world.instances["a"]
    world.watch.refused(source, "463")
    requests = Requests()

    world.watch.refresh(source)  # still paused
    world.watch.refresh(world.instances["a"].model_copy(update={"name": "never-sent"}))  # no item: healthy

    assert [name for name, _ in requests.made] == ["GetItem", "GetItem"]


def test_the_reconciliation_refreshes_every_instances_health_and_a_failure_there_never_stops_it(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"), limits=TEN_MINUTES)
    source = world.instances["a"]
    world.watch.refused(source, "463")
    world.later(timedelta(minutes=11))
    drained: list[str] = []

    def drain(key: str) -> Drained:
        drained.append(key)
        return Drained()

    def build(refresh: Any) -> Reconciler:
        return Reconciler(
            FakeCatalog([source]),
            None,  # type: ignore[arg-type]  # a port the refresh never reaches
            None,  # type: ignore[arg-type]  # a port the refresh never reaches
            None,  # type: ignore[arg-type]  # a port the refresh never reaches
            read_status=lambda _: (Check(state="DISCONNECTED"), None),
            apply_limit=lambda *_: None,
            drain_outbox=drain,
            refresh_health=refresh,
        )

    report = build(world.watch.refresh).reconcile_by_key(source.key)

    assert report is not None
    assert report.health == "healthy"
    assert [(d["previousState"], d["state"]) for _, d in world.published.events][-1] == (
        "paused_for_new_contacts",
        "healthy",
    )

    def broken(_: Instance) -> None:
        raise RuntimeError("table unreachable")

    report = build(broken).reconcile_by_key(source.key)

    assert report is not None
    assert report.health is None
    assert drained == [source.key, source.key]


def test_the_wired_reconciler_announces_an_expired_pause_on_the_bus_and_to_the_events_webhook(
    aws: AwsResources, published: list[tuple[str, dict[str, Any]]]
) -> None:
    source = instance("a")
    store = HealthRepository(bootstrap.table())
    lifted = utcnow() - timedelta(minutes=1)
    pause = Reason(
        code=TIMELOCK, state=HealthState.PAUSED_FOR_NEW_CONTACTS, since=lifted - timedelta(hours=6), until=lifted
    )
    store.save_reasons(store.get(source.key), {TIMELOCK: pause}, HealthState.PAUSED_FOR_NEW_CONTACTS, pause.since)

    report = bootstrap.reconciler().reconcile(source)

    assert report.health == "healthy"
    assert [(kind, detail["previousState"], detail["state"]) for kind, detail in published] == [
        (HEALTH_CHANGED, "paused_for_new_contacts", "healthy")
    ]
    assert store.get(source.key).state is HealthState.HEALTHY
    queued = [json.loads(message["Body"]) for message in aws.queue_messages("ClientWebhookQueue")]
    assert [(job["instance"], job["event"]) for job in queued] == [("a", HEALTH_CHANGED)]

"""The scheduled fan-out and the reconnect trigger, with in-memory fakes."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel

from switchboard.calls.reconcile import (
    PER_SERVER_RATE,
    SPREAD_SECONDS,
    ReconcileOnReconnect,
    Reconciler,
    every_instance,
    fan_out,
)
from switchboard.calls.reconcile_queue import ReconcileQueue
from switchboard.catalog.domain import Instance
from switchboard.catalog.events import ProviderEvent
from switchboard.connection_state.domain import Check
from switchboard.core.errors import ProviderUnavailable
from switchboard.providers.base import InstanceStatus
from tools.support.builders import instance, provider_event
from tools.support.fakes import FakeCatalog, FakeReconcileQueue


def test_ten_thousand_instances_fan_out_in_one_thousand_batches_of_ten() -> None:
    catalog = FakeCatalog([instance(f"line-{index}", kind="calls", tenant=f"t{index % 37}") for index in range(10_000)])
    queue = FakeReconcileQueue()

    sent = fan_out(every_instance(catalog), queue)

    assert sent == 10_000
    assert len(queue.batches) == 1_000
    assert {len(batch) for batch in queue.batches} == {10}
    assert len({key for batch in queue.batches for key in batch}) == 10_000


def test_ten_thousand_instances_on_twenty_servers_reach_each_server_at_its_rate_within_the_spread() -> None:
    servers = [f"prv_{index}" for index in range(20)]
    catalog = FakeCatalog(
        [
            instance(f"line-{index}", kind="calls", tenant=f"t{index % 37}", provider_id=servers[index % 20])
            for index in range(10_000)
        ]
    )
    queue = FakeReconcileQueue()

    fan_out(every_instance(catalog), queue)

    server_of = {item.key: item.provider_id for item in catalog.instances.values()}
    per_second: Counter[tuple[str, int]] = Counter()
    for keys, delays in zip(queue.batches, queue.delays, strict=True):
        for key, delay in zip(keys, delays, strict=True):
            per_second[(server_of[key], delay)] += 1
    assert max(per_second.values()) == PER_SERVER_RATE
    assert max(delay for _, delay in per_second) == 500 // PER_SERVER_RATE - 1 < SPREAD_SECONDS
    assert {server for server, _ in per_second} == set(servers)


def test_a_server_with_more_instances_than_its_rate_fills_in_the_spread_wraps_around() -> None:
    catalog = FakeCatalog([instance(f"line-{index}", kind="calls", provider_id="prv_big") for index in range(25)])
    queue = FakeReconcileQueue()

    fan_out(every_instance(catalog), queue, per_server_rate=2, spread_seconds=5)

    delays = [delay for batch in queue.delays for delay in batch]
    assert delays[:10] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert delays[10:14] == [0, 0, 1, 1]
    assert max(Counter(delays).values()) == 6  # 25 over 5 seconds: the rate times the laps begun


class RecordingSqs:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries.extend(Entries)
        return {"Successful": [{"Id": entry["Id"]} for entry in Entries]}


def test_the_queue_sends_each_delay_as_the_entry_delay_capped_at_the_sqs_maximum() -> None:
    sqs = RecordingSqs()

    sent = ReconcileQueue(sqs, "https://queue").send_batch(["a", "b", "c"], [0, 30, 5000])

    assert sent == 3
    assert [entry["DelaySeconds"] for entry in sqs.entries] == [0, 30, 900]


def test_every_instance_of_every_kind_is_fanned_out_each_at_its_servers_rate() -> None:
    """Messaging instances too: their connection state is read from their provider each period."""
    catalog = FakeCatalog(
        [
            instance("calls-1", kind="calls", provider_id="prv_zap"),
            instance("msgs-1", kind="messages", provider_id="prv_evo"),
            instance("calls-2", kind="calls", provider_id="prv_zap"),
        ]
    )
    queue = FakeReconcileQueue()

    fan_out(every_instance(catalog), queue, per_server_rate=1)

    assert queue.batches == [["acme:calls-1", "acme:msgs-1", "acme:calls-2"]]
    assert queue.delays == [[0, 0, 1]]


def connection_event(target: Instance, connected: bool) -> ProviderEvent:
    return provider_event(target, "connection", {"connected": connected}, seq=3, event_id="evt-1")


def test_a_calls_instance_that_reconnects_is_queued_for_reconciliation() -> None:
    queue = FakeReconcileQueue()
    trigger = ReconcileOnReconnect(queue)

    trigger(connection_event(instance("calls-1", kind="calls"), True))
    trigger(connection_event(instance("calls-2", kind="calls"), False))
    trigger(connection_event(instance("msgs-1", kind="messages"), True))

    assert queue.requested == ["acme:calls-1"]


class Drained(BaseModel):
    sent: int


def test_a_messaging_instance_is_reconciled_by_its_status_read_then_its_outbox_without_reading_calls() -> None:
    order: list[str] = []

    def drain(name: str) -> Drained:
        order.append(f"drain {name}")
        return Drained(sent=2)

    def read_status(target: Instance) -> tuple[Check, InstanceStatus]:
        order.append(f"status {target.key}")
        return Check(state="CONNECTED", changed=True), InstanceStatus(connected=True)

    def unreachable(*_: Any, **__: Any) -> Any:
        raise AssertionError("a messaging instance has no calls to read")

    reconciler = Reconciler(
        FakeCatalog([]),
        None,  # type: ignore[arg-type]  # a port this rule never reaches
        None,  # type: ignore[arg-type]  # a port this rule never reaches
        None,  # type: ignore[arg-type]  # a port this rule never reaches
        read_status=read_status,
        apply_limit=unreachable,
        drain_outbox=drain,
    )

    report = reconciler.reconcile(instance("msgs-1", kind="messages"))

    assert order == ["status acme:msgs-1", "drain acme:msgs-1"]
    assert (report.state, report.state_changed, report.outbox) == ("CONNECTED", True, {"sent": 2})


def test_a_messaging_instance_whose_provider_cannot_be_read_still_has_its_outbox_expired() -> None:
    drained: list[str] = []

    def unreadable(target: Instance) -> tuple[Check, InstanceStatus]:
        raise ProviderUnavailable("evolution GET /instance/connectionState/{instance}: could not connect")

    def drain(name: str) -> Drained:
        drained.append(name)
        return Drained(sent=0)

    reconciler = Reconciler(
        FakeCatalog([]),
        None,  # type: ignore[arg-type]  # a port this rule never reaches
        None,  # type: ignore[arg-type]  # a port this rule never reaches
        None,  # type: ignore[arg-type]  # a port this rule never reaches
        read_status=unreadable,
        apply_limit=lambda *_: None,
        drain_outbox=drain,
    )

    report = reconciler.reconcile(instance("msgs-1", kind="messages"))

    assert (report.state, drained) == (None, ["acme:msgs-1"])

"""The scheduled fan-out and the reconnect trigger, with in-memory fakes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from switchboard.calls.reconcile import ReconcileOnReconnect, Reconciler, every_instance, fan_out
from switchboard.catalog.domain import Instance
from switchboard.webhooks.events import ProviderEvent
from tests.support.builders import instance, provider_event
from tests.support.fakes import FakeCatalog, FakeReconcileQueue


def test_ten_thousand_instances_fan_out_in_one_thousand_batches_of_ten() -> None:
    catalog = FakeCatalog([instance(f"line-{index}", kind="calls", tenant=f"t{index % 37}") for index in range(10_000)])
    queue = FakeReconcileQueue()

    sent = fan_out(every_instance(catalog), queue, with_outbox=True)

    assert sent == 10_000
    assert len(queue.batches) == 1_000
    assert {len(batch) for batch in queue.batches} == {10}
    assert len({name for batch in queue.batches for name in batch}) == 10_000


def test_without_an_outbox_only_calls_instances_are_fanned_out() -> None:
    catalog = FakeCatalog(
        [instance("calls-1", kind="calls"), instance("msgs-1", kind="messages"), instance("calls-2", kind="calls")]
    )
    queue = FakeReconcileQueue()

    fan_out(every_instance(catalog), queue, with_outbox=False)

    assert queue.batches == [["acme:calls-1", "acme:calls-2"]]


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


def test_a_messaging_instance_is_reconciled_by_draining_its_outbox_without_reading_calls() -> None:
    drained: list[str] = []

    def drain(name: str) -> Drained:
        drained.append(name)
        return Drained(sent=2)

    def unreachable(*_: Any, **__: Any) -> Any:
        raise AssertionError("a messaging instance has no calls to read")

    reconciler = Reconciler(
        FakeCatalog([]),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        refresh_limit=unreachable,
        drain_outbox=drain,
    )

    report = reconciler.reconcile(instance("msgs-1", kind="messages"))

    assert drained == ["acme:msgs-1"]
    assert report.outbox == {"sent": 2}

"""The scheduled fan-out and the reconnect trigger, with in-memory fakes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from switchboard.calls.reconcile import ReconcileOnReconnect, Reconciler, every_instance, fan_out
from switchboard.catalog.domain import Instance, Tenant
from switchboard.webhooks.events import ProviderEvent


def instance(name: str, kind: str = "calls", tenant: str = "acme") -> Instance:
    return Instance(
        tenant=tenant,
        name=name,
        provider_id="prv_1",
        provider_instance_id=f"pi-{name}",
        number_id="num_1",
        kind=kind,  # type: ignore[arg-type]
        token_hint="…",
    )


class FakeQueue:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.requested: list[str] = []

    def send_batch(self, instance_names: list[str]) -> int:
        self.batches.append(list(instance_names))
        return len(instance_names)

    def request(self, instance: str, delay_seconds: int = 0) -> None:
        self.requested.append(instance)


class FakeCatalog:
    def __init__(self, instances: list[Instance]) -> None:
        self._instances = instances

    def list_tenants(self) -> list[Tenant]:
        tags = sorted({item.tenant for item in self._instances})
        return [Tenant(tenant=tag, owner_tag=tag, name=tag) for tag in tags]

    def list_instances(self, tenant: str) -> list[Instance]:
        return [item for item in self._instances if item.tenant == tenant]


def test_ten_thousand_instances_fan_out_in_one_thousand_batches_of_ten() -> None:
    catalog = FakeCatalog([instance(f"line-{index}", tenant=f"t{index % 37}") for index in range(10_000)])
    queue = FakeQueue()

    sent = fan_out(every_instance(catalog), queue, with_outbox=True)

    assert sent == 10_000
    assert len(queue.batches) == 1_000
    assert {len(batch) for batch in queue.batches} == {10}
    assert len({name for batch in queue.batches for name in batch}) == 10_000


def test_without_an_outbox_only_calls_instances_are_fanned_out() -> None:
    catalog = FakeCatalog([instance("calls-1"), instance("msgs-1", kind="messages"), instance("calls-2")])
    queue = FakeQueue()

    fan_out(every_instance(catalog), queue, with_outbox=False)

    assert queue.batches == [["calls-1", "calls-2"]]


def connection_event(target: Instance, connected: bool) -> ProviderEvent:
    return ProviderEvent(
        provider_id="prv_1",
        instance=target,
        name="connection",
        event_id="evt-1",
        seq=3,
        data={"connected": connected},
        received_at=datetime.now(UTC),
    )


def test_a_calls_instance_that_reconnects_is_queued_for_reconciliation() -> None:
    queue = FakeQueue()
    trigger = ReconcileOnReconnect(queue)

    trigger(connection_event(instance("calls-1"), True))
    trigger(connection_event(instance("calls-2"), False))
    trigger(connection_event(instance("msgs-1", kind="messages"), True))

    assert queue.requested == ["calls-1"]


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

    assert drained == ["msgs-1"]
    assert report.outbox == {"sent": 2}

"""The fleet's gauges, counted as the reconcile schedule lists every instance: disconnected, paused,
down for longer than the alarm's threshold (either), and the call slots in use; no instance or
tenant as a dimension."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from typing import Any

from switchboard.calls.fleet import FleetGauges
from switchboard.catalog.domain import Instance
from switchboard.health.domain import Health, HealthState, Reason
from switchboard.lines.domain import Line, Occupant
from tools.support import builders

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def instance(name: str, *, connected: bool = True, changed_minutes_ago: int = 60, kind: str = "messages") -> Instance:
    return builders.connected(
        name,
        kind=kind,
        state="CONNECTED" if connected else "DISCONNECTED",
        state_changed_at=NOW - timedelta(minutes=changed_minutes_ago),
    )


def paused(key: str, state: HealthState, minutes_ago: int) -> Health:
    reason = Reason(
        code="timelock_463", state=state, since=NOW - timedelta(minutes=minutes_ago), until=NOW + timedelta(hours=1)
    )
    return Health(instance_key=key, reasons={reason.code: reason})


class Healths:
    def __init__(self, healths: dict[str, Health]) -> None:
        self.healths = healths
        self.batches: list[int] = []

    def get_many(self, instance_keys: Collection[str]) -> dict[str, Health]:
        self.batches.append(len(instance_keys))
        return {key: self.healths[key] for key in instance_keys if key in self.healths}


class Lines:
    def get(self, tenant: str, instance_name: str) -> Line | None:
        occupants = {
            f"res_{n}": Occupant(kind="reservation", id=f"res_{n}", direction="outgoing", state="ringing", since="x")
            for n in range(2)
        }
        return Line(instance=instance_name, tenant=tenant, limit=4, occupants=occupants)


def test_the_gauges_count_the_fleet_and_what_has_been_down_longer_than_the_threshold() -> None:
    fleet = [
        instance("ok"),
        instance("off-long", connected=False, changed_minutes_ago=20),
        instance("off-now", connected=False, changed_minutes_ago=1),
        instance("paused-long"),
        instance("paused-now"),
        instance("line", kind="calls"),
    ]
    healths = Healths(
        {
            fleet[3].key: paused(fleet[3].key, HealthState.PAUSED, 30),
            fleet[4].key: paused(fleet[4].key, HealthState.PAUSED_FOR_NEW_CONTACTS, 2),
            fleet[0].key: paused(fleet[0].key, HealthState.WARNING, 90),
        }
    )
    emitted: list[tuple[str, Any, dict[str, Any]]] = []
    gauges = FleetGauges(
        healths,
        Lines(),
        down_after=timedelta(minutes=15),
        clock=lambda: NOW,
        emit=lambda name, value, **dimensions: emitted.append((name, value, dimensions)),
    )

    listed = list(gauges.counting(iter(fleet)))
    values = gauges.publish()

    assert listed == fleet
    assert values == {"InstancesDisconnected": 2, "InstancesPaused": 2, "InstancesDown": 2, "CallSlotsInUse": 2}
    assert emitted == [(name, value, {}) for name, value in values.items()]


def test_health_is_read_in_batches_of_a_hundred() -> None:
    healths = Healths({})
    gauges = FleetGauges(
        healths, Lines(), down_after=timedelta(minutes=15), clock=lambda: NOW, emit=lambda *_, **__: None
    )

    list(gauges.counting(instance(f"i{n}") for n in range(250)))
    gauges.publish()

    assert healths.batches == [100, 100, 50]

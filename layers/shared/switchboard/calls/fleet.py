"""The fleet's gauges, taken as the reconcile schedule lists every instance: how many instances are
disconnected, how many paused (the ban watch's `paused` or `paused_for_new_contacts`), how many have
been either for longer than the alarm's threshold, and how many call slots are in use.

Gauges rather than per-instance metrics: at 10,000 instances a metric with an instance dimension is
10,000 custom metrics (about 3,000 USD a month for one), where these are four. Which instance is down
is on the console's Numbers screen and in `GET /api/instances/{name}/health`.

Cost per period: the listing the schedule makes anyway, one `BatchGetItem` per 100 instances (their
health items) and one `GetItem` per calls instance (its line): about 100 batch reads at 10,000
instances.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from datetime import datetime, timedelta
from typing import Protocol

from switchboard.catalog.domain import Instance
from switchboard.core.clock import utcnow
from switchboard.core.observability import emit_metric, logger
from switchboard.health.domain import Health, HealthState
from switchboard.lines.domain import Line

PAUSED = (HealthState.PAUSED, HealthState.PAUSED_FOR_NEW_CONTACTS)
HEALTH_BATCH = 100  # BatchGetItem's limit


class HealthReader(Protocol):
    def get_many(self, instance_keys: Collection[str]) -> dict[str, Health]: ...


class LineReader(Protocol):
    def get(self, tenant: str, instance_name: str) -> Line | None: ...


class FleetGauges:
    """Counts what passes through `counting()`, then `publish()` reads their health and lines."""

    def __init__(
        self,
        health: HealthReader,
        lines: LineReader,
        *,
        down_after: timedelta,
        clock: Callable[[], datetime] = utcnow,
        emit: Callable[..., None] = emit_metric,
    ) -> None:
        self._health = health
        self._lines = lines
        self._down_after = down_after
        self._clock = clock
        self._emit = emit
        self._seen: list[Instance] = []

    def counting(self, instances: Iterable[Instance]) -> Iterator[Instance]:
        for instance in instances:
            self._seen.append(instance)
            yield instance

    def publish(self) -> dict[str, int]:
        """Emit the gauges of the instances counted; their values."""
        now = self._clock()
        threshold = now - self._down_after
        healths: dict[str, Health] = {}
        keys = [instance.key for instance in self._seen]
        for start in range(0, len(keys), HEALTH_BATCH):
            healths.update(self._health.get_many(keys[start : start + HEALTH_BATCH]))
        disconnected = paused = down = slots = 0
        for instance in self._seen:
            offline = not instance.connected
            offline_long = offline and (instance.state_changed_at is None or instance.state_changed_at < threshold)
            paused_since = _paused_since(healths.get(instance.key), now)
            disconnected += offline
            paused += paused_since is not None
            down += offline_long or (paused_since is not None and paused_since < threshold)
            if instance.kind == "calls":
                line = self._lines.get(instance.tenant, instance.name)
                slots += line.occupancy if line is not None else 0
        gauges = {
            "InstancesDisconnected": disconnected,
            "InstancesPaused": paused,
            "InstancesDown": down,
            "CallSlotsInUse": slots,
        }
        for name, value in gauges.items():
            self._emit(name, value)
        logger.info("fleet gauges", extra={"instances": len(self._seen), **gauges})
        return gauges


def _paused_since(health: Health | None, now: datetime) -> datetime | None:
    """Since when the instance has been paused (for everyone, or for new contacts), or None."""
    if health is None or health.state_at(now) not in PAUSED:
        return None
    return min(reason.since for reason in health.active_reasons(now) if reason.state in PAUSED)

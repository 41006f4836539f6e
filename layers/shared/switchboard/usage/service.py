"""Usage per (instance, day), summed per (owner_tag, month) for billing, and per-instance metrics."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import reduce
from typing import TYPE_CHECKING, Protocol

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from pydantic import Field

from switchboard.catalog.domain import Instance
from switchboard.core.identity import Principal, Scope
from switchboard.core.model import Model
from switchboard.core.observability import metrics
from switchboard.usage.domain import DailyUsage, Direction

if TYPE_CHECKING:
    from switchboard.catalog.events import ProviderEvent
    from switchboard.core.store import UnitOfWork


class UsageStore(Protocol):
    def add(self, instance: Instance, day: date, direction: Direction, count_id: str | None, now: datetime) -> bool: ...
    def month(self, owner_tag: str | None, month: str) -> list[DailyUsage]: ...


class IncomingCounts(Protocol):
    def record_incoming(self, uow: UnitOfWork, instance: Instance, day: date, kind: str) -> None: ...


class OutgoingCounts(Protocol):
    def record_outgoing(self, uow: UnitOfWork, instance: Instance, day: date) -> None: ...


class DayUsage(Model):
    day: date  # UTC
    messages_in: int
    messages_out: int


class InstanceUsage(Model):
    tenant: str
    instance: str
    messages_in: int
    messages_out: int
    messages_in_by_type: dict[str, int] = Field(default_factory=dict)
    days: list[DayUsage] = []


class TenantMonthUsage(Model):
    owner_tag: str | None  # None: instances without an owner tag (global downstream)
    month: str
    messages_in: int
    messages_out: int
    messages_in_by_type: dict[str, int] = Field(default_factory=dict)
    instances: list[InstanceUsage]


_NONE: dict[str, int] = {}


def _added(counts: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    return {kind: counts.get(kind, 0) + more.get(kind, 0) for kind in sorted(counts.keys() | more.keys())}


def count_metric(name: str, instance: str, value: float = 1) -> None:
    """One EMF metric with the instance (its key) as its only dimension (bounded: instances are catalog rows)."""
    with single_metric(
        name=name, unit=MetricUnit.Count, value=value, namespace=metrics.namespace, default_dimensions={}
    ) as metric:
        metric.add_dimension(name="instance", value=instance)


class UsageRecorder:
    def __init__(self, store: UsageStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._store = store
        self._clock = clock

    def record_outgoing(self, instance: Instance, when: datetime, message_id: str | None = None) -> bool:
        """Count one message sent through `instance` (once per `message_id` when given) in a write
        of its own: for a sender whose send is recorded by no transaction of its own (a reply)."""
        counted = self._store.add(instance, when.astimezone(UTC).date(), "out", message_id, self._clock())
        if counted:
            count_metric("MessagesSent", instance.key)
        return counted

    def summary(self, principal: Principal, month: str, tags: list[str]) -> list[TenantMonthUsage]:
        """Per (owner_tag, month): the platform sees every tag (and untagged instances), an admin its own."""
        wanted: list[str | None] = [*tags, None] if principal.has(Scope.PLATFORM) else [principal.tenant]
        result = []
        for tag in wanted:
            days = self._store.month(tag, month)
            per_instance: dict[tuple[str, str], InstanceUsage] = {}
            for day in days:
                usage = per_instance.setdefault(
                    (day.tenant, day.instance),
                    InstanceUsage(tenant=day.tenant, instance=day.instance, messages_in=0, messages_out=0),
                )
                usage.messages_in += day.messages_in
                usage.messages_out += day.messages_out
                usage.messages_in_by_type = _added(usage.messages_in_by_type, day.messages_in_by_type)
                usage.days.append(DayUsage(day=day.day, messages_in=day.messages_in, messages_out=day.messages_out))
            if not per_instance and principal.has(Scope.PLATFORM):
                continue
            for usage in per_instance.values():
                usage.days.sort(key=lambda day: day.day)
            instances = sorted(per_instance.values(), key=lambda usage: (usage.tenant, usage.instance))
            result.append(
                TenantMonthUsage(
                    owner_tag=tag,
                    month=month,
                    messages_in=sum(usage.messages_in for usage in instances),
                    messages_out=sum(usage.messages_out for usage in instances),
                    messages_in_by_type=reduce(_added, (usage.messages_in_by_type for usage in instances), _NONE),
                    instances=instances,
                )
            )
        return result


class IncomingUsage:
    """`message` events: the message is counted by a write joining the unit of work that accepts
    the event, so it counts exactly once with it however often the event's effects run; the
    metric follows once that transaction committed (a re-applied event may emit it again: the
    stored count is the exact one)."""

    def __init__(self, counts: IncomingCounts) -> None:
        self._counts = counts

    def record(self, uow: UnitOfWork, event: ProviderEvent) -> None:
        self._counts.record_incoming(uow, event.instance, event.received_at.astimezone(UTC).date(), message_type(event))

    def received(self, event: ProviderEvent) -> None:
        count_metric("MessagesReceived", event.instance.key)


def message_type(event: ProviderEvent) -> str:
    """What an incoming message was, for its count by type: `text`, a media kind, `location`,
    `contacts`, `choice`, `poll`, `reaction`, `edit`, `revoke`; `other` for a message without a
    content (an event stored before contents existed, or not mapped)."""
    # Imported here: the usage API's function never reads a content, and never pays for its schema.
    from switchboard.providers.content import content_from, kind_of  # noqa: PLC0415 - cold start

    try:
        return kind_of(content_from(event.data))
    except ValueError:
        return "other"


class OutgoingUsage:
    """Messages the send worker sent: each is counted by a write joining the transaction that
    records it SENT, which is conditional on the worker's claim, so it counts exactly once with
    it (no marker, no request of its own); the metric follows once that transaction committed."""

    def __init__(self, counts: OutgoingCounts) -> None:
        self._counts = counts

    def record(self, uow: UnitOfWork, instance: Instance, when: datetime) -> None:
        self._counts.record_outgoing(uow, instance, when.astimezone(UTC).date())

    def sent(self, instance: Instance) -> None:
        count_metric("MessagesSent", instance.key)

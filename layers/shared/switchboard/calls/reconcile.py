"""Reconciliation: recover what lost or late events did not tell us, from the provider's own reads.

Per instance (manual route, queue worker after a schedule fan-out or an admission error):

0. every instance: its ban-watch health (one read; a pause that expired since the last write is
   written and announced as `number.health.changed` now rather than at the instance's next send),
   then its connection state read from its provider (one status read, applied by the revision
   rule of `connection_state`: a webhook written meanwhile wins); a messaging instance's outbox is
   then drained (a provider that cannot be read is logged and read again next period);
1. calls instances: the limit, from that same status read, through the call limit's snapshot rule;
2. `GET /call/active`: every live call applied with the same forward-only guards as events
   (unknown calls are adopted; a newer state stored meanwhile is never undone);
3. local live calls missing from that list: `GET /call/{id}` (then history) for their real end;
   a call the provider does not know at all is left as it is, never ended on a guess;
4. pending reservations: a young one is re-dialled with its own key (the provider returns the
   same call if the first dial was applied); a refusal releases it; an unknown outcome keeps it;
   one older than `REDIAL_WINDOW` is never re-dialled (that would place a call nobody waits
   for): it is released, and a call it did produce was adopted in step 2 if still live;
5. outgoing calls that waited for a dial answer that will never come take their own slot;
6. line entries with neither a live call nor a pending attempt behind them are removed
   (`switchboard.calls.strays`: the grace is `REDIAL_WINDOW`).

The scheduled fan-out sends one queue message per instance (every kind), so a period covers any
number of instances with bounded work per invocation. Each message is delayed so that no provider
server receives more than `PER_SERVER_RATE` reconciliations per second from one period.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from switchboard.calls.domain import CallRecord, DialAttempt, digits, utcnow
from switchboard.calls.ports import ReconcileRequests
from switchboard.calls.service import CallService
from switchboard.calls.strays import StrayStore, release_strays
from switchboard.catalog.domain import Instance, Tenant
from switchboard.catalog.ports import Instances, Targets
from switchboard.core.errors import (
    ProviderDisconnected,
    ProviderLineBusy,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    SwitchboardError,
)
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.providers.base import InstanceStatus, ProviderCall, ProviderClient, ProviderTarget

if TYPE_CHECKING:
    from switchboard.catalog.events import ProviderEvent
    from switchboard.connection_state.domain import Check

REDIAL_WINDOW = timedelta(minutes=2)
BATCH_SIZE = 10  # SendMessageBatch's maximum
# A period's reconciliations reach each provider server at this rate at most (one reconciliation
# is a few provider reads), spread over `SPREAD_SECONDS`, which stays inside the default 5-minute
# schedule so a period is over before the next one starts. A server with more instances than
# rate x spread wraps around: its rate grows by the rate again per lap.
PER_SERVER_RATE = 5
SPREAD_SECONDS = 240


class Records(StrayStore, Protocol):
    def live_calls(self, tenant: str, instance: str) -> list[CallRecord]: ...
    def pending_attempts(self, tenant: str, instance: str) -> list[DialAttempt]: ...
    def release(self, attempt: DialAttempt, reason: str) -> bool: ...


class ReconcileReport(Model):
    instance: str
    limit: int | None = None
    active: int = 0
    ended: int = 0
    unknown_to_provider: int = 0
    reservations_bound: int = 0
    reservations_released: int = 0
    reservations_kept: int = 0
    adopted: int = 0
    strays_released: int = 0
    outbox: dict[str, Any] | None = None  # the outbox drain's result (messaging instances)
    health: str | None = None  # the instance's health state now (None: not read)
    state: str | None = None  # the connection state the provider's status read gave (None: not read)
    state_changed: bool = False  # that read moved the stored state


class Reconciler:
    def __init__(
        self,
        instances: Instances,
        records: Records,
        calls: CallService,
        targets: Targets,
        *,
        read_status: Callable[[Instance], tuple[Check, InstanceStatus | None]],
        apply_limit: Callable[[Instance, InstanceStatus], Any],
        drain_outbox: Callable[[str], BaseModel] | None = None,
        refresh_health: Callable[[Instance], Any] | None = None,
    ) -> None:
        """`read_status` reads and applies the instance's connection state (raising ProviderError
        when the provider cannot be read); `apply_limit` applies the calls config in that answer."""
        self._instances = instances
        self._records = records
        self._calls = calls
        self._targets = targets
        self._read_status = read_status
        self._apply_limit = apply_limit
        self._drain_outbox = drain_outbox
        self._refresh_health = refresh_health

    def reconcile_by_key(self, key: str) -> ReconcileReport | None:
        """The queue worker's entry (an `Instance.key`): an instance deleted since the fan-out is skipped."""
        instance = self._instances.find_instance(key)
        if instance is None:
            logger.info("reconcile skipped: instance gone", extra={"instance": key})
            return None
        return self.reconcile(instance)

    def reconcile_for(self, tenant: str, name: str) -> ReconcileReport:
        return self.reconcile(self._instances.get_instance(tenant, name))

    def reconcile(self, instance: Instance) -> ReconcileReport:
        """Raises ProviderError when the provider cannot be read (the queue retries the message)."""
        report = ReconcileReport(instance=instance.name)
        report.health = self._health(instance)
        if instance.kind != "calls":
            try:
                self._connection(instance, report)
            except SwitchboardError as error:  # a provider down or gone: the outbox still expires its old replies
                logger.warning("instance status not read", extra={"instance": instance.key, "error": error.code})
            if self._drain_outbox is not None:
                report.outbox = self._drain_outbox(instance.key).model_dump()
            return report
        status = self._connection(instance, report)
        line = self._apply_limit(instance, status) if status is not None else None
        report.limit = getattr(line, "limit", None)
        client, target = self._targets.target_for(instance)
        active = client.active_calls(target)
        report.active = len(active)
        for call in active:
            self._calls.apply_provider_call(instance, call, "reconcile")
        self._settle_missing(instance, client, target, {call.call_id for call in active}, report)
        for attempt in self._records.pending_attempts(instance.tenant, instance.name):
            self._resolve(instance, client, target, attempt, report)
        self._adopt_orphans(instance, report)
        self._release_strays(instance, report)
        logger.info("instance reconciled", extra=report.model_dump())
        return report

    def _connection(self, instance: Instance, report: ReconcileReport) -> InstanceStatus | None:
        check, status = self._read_status(instance)
        report.state, report.state_changed = check.state, check.changed
        return status

    def _health(self, instance: Instance) -> str | None:
        """Best effort: the health check never holds back the provider's reconciliation (and is
        not retried with it: the next period reads again)."""
        if self._refresh_health is None:
            return None
        try:
            return str(self._refresh_health(instance))
        except Exception:
            logger.exception("health not refreshed", extra={"instance": instance.key})
            return None

    def _settle_missing(
        self,
        instance: Instance,
        client: ProviderClient,
        target: ProviderTarget,
        active_ids: set[str],
        report: ReconcileReport,
    ) -> None:
        missing = [
            record
            for record in self._records.live_calls(instance.tenant, instance.name)
            if record.call_id not in active_ids
        ]
        history: list[ProviderCall] | None = None
        for record in missing:
            call = client.get_call(target, record.call_id)
            if call is None:
                history = client.call_history(target) if history is None else history
                call = next((item for item in history if item.call_id == record.call_id), None)
            if call is None:
                report.unknown_to_provider += 1
                logger.warning(
                    "live call unknown to the provider: left as is",
                    extra={"instance": instance.key, "call_id": record.call_id},
                )
                continue
            if self._calls.apply_provider_call(instance, call, "reconcile").ended:
                report.ended += 1

    def _resolve(
        self,
        instance: Instance,
        client: ProviderClient,
        target: ProviderTarget,
        attempt: DialAttempt,
        report: ReconcileReport,
    ) -> None:
        if attempt.age_seconds(utcnow()) > REDIAL_WINDOW.total_seconds():
            if self._records.release(attempt, "unresolved"):
                report.reservations_released += 1
                self._calls.line_changed(attempt.tenant, attempt.instance)
                logger.warning(
                    "old unresolved reservation released",
                    extra={"instance": instance.key, "reservation": attempt.id},
                )
            return
        try:
            answer = client.dial(target, attempt.to, attempt.video, attempt.id)
        except ProviderTimeout:
            report.reservations_kept += 1
            return
        except (ProviderLineBusy, ProviderDisconnected, ProviderRejected, ProviderUnavailable) as refused:
            if self._records.release(attempt, refused.code):
                report.reservations_released += 1
                self._calls.line_changed(attempt.tenant, attempt.instance)
            return
        self._calls.bind_dial(instance, attempt, answer.call_id)
        report.reservations_bound += 1

    def _adopt_orphans(self, instance: Instance, report: ReconcileReport) -> None:
        pending_peers = {
            digits(attempt.to) for attempt in self._records.pending_attempts(instance.tenant, instance.name)
        }
        for record in self._records.live_calls(instance.tenant, instance.name):
            if record.holds_slot is False and digits(record.peer) not in pending_peers:
                self._calls.adopt(instance, record)
                report.adopted += 1

    def _release_strays(self, instance: Instance, report: ReconcileReport) -> None:
        report.strays_released = release_strays(self._records, instance.tenant, instance.name, utcnow(), REDIAL_WINDOW)
        if report.strays_released:
            self._calls.line_changed(instance.tenant, instance.name)


# --- the scheduled fan-out -----------------------------------------------------------------


class TenantCatalog(Protocol):
    def list_tenants(self) -> list[Tenant]: ...
    def list_instances(self, tenant: str) -> list[Instance]: ...


class Queue(Protocol):
    def send_batch(self, instance_keys: list[str], delays: list[int] | None = None) -> int: ...


def every_instance(catalog: TenantCatalog) -> Iterator[Instance]:
    """Every instance of every tenant, through the tenant listing and each tenant's instance index."""
    for tenant in catalog.list_tenants():
        yield from catalog.list_instances(tenant.owner_tag)


def fan_out(
    instances: Iterable[Instance],
    queue: Queue,
    *,
    per_server_rate: int = PER_SERVER_RATE,
    spread_seconds: int = SPREAD_SECONDS,
) -> int:
    """One reconcile message per instance, each delayed by `spread_delay` of its rank among its
    provider server's instances."""
    sent = 0
    batch: list[str] = []
    delays: list[int] = []
    per_server: Counter[str] = Counter()
    for instance in instances:
        batch.append(instance.key)
        delays.append(spread_delay(per_server[instance.provider_id], per_server_rate, spread_seconds))
        per_server[instance.provider_id] += 1
        if len(batch) == BATCH_SIZE:
            sent += queue.send_batch(batch, delays)
            batch, delays = [], []
    if batch:
        sent += queue.send_batch(batch, delays)
    logger.info("reconciliation fanned out", extra={"instances": sent, "provider_servers": len(per_server)})
    return sent


def spread_delay(rank: int, per_second: int, spread_seconds: int) -> int:
    """Seconds to delay a server's `rank`-th instance: `per_second` of them each second, from 0 up to
    `spread_seconds`, then again from 0 (the listing streams, so a server's total is not known)."""
    return (rank // max(1, per_second)) % max(1, spread_seconds)


class ReconcileOnReconnect:
    """`connection` effect: a calls instance that (re)connected is reconciled soon.

    Calls may have started or ended while its session (or our receiver) was away; the provider's
    reads tell, so the instance goes to the reconcile queue instead of waiting for the schedule.
    """

    def __init__(self, queue: ReconcileRequests) -> None:
        self._queue = queue

    def __call__(self, event: ProviderEvent) -> None:
        if event.instance.kind == "calls" and event.data.get("connected") is True:
            self._queue.request(event.instance.key)

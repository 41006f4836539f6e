"""The ban watch's use cases: what the send worker, receipts and connection events tell it, what
the pool reads before choosing a number, and what the API shows.

Sends are counted in batches: `sent` records a send in this container's buffer and `flush`
writes each instance's sends since the last flush in one UpdateItem, then judges the counts it
answers as each send was judged alone. The send worker flushes at the end of every invocation
(and whenever `buffered_sends` are waiting); a watch built with the default of one writes each
send at once.

Every observation is best effort for the caller (a failure here never fails a send); a change of
state is committed first (conditional write on the item's version, re-read on a lost race), then
published as `number.health.changed` on the bus and to the instance's events webhook.

A pause that expires changes the state without any write; the scheduled reconciliation calls
`refresh` for every instance each period, so that change is announced within a period even when
the instance sends nothing.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from switchboard.catalog.domain import Instance
from switchboard.core.clock import utcnow
from switchboard.core.observability import logger, metrics
from switchboard.health.domain import (
    LOGGED_OUT,
    Health,
    HealthChanged,
    HealthState,
    Reason,
    SampleEntry,
    Thresholds,
    after_send,
    fingerprints,
    is_standing,
    lapsed_at,
    provider_signal,
    pruned,
    standing_reasons,
    view,
    window_ratio,
    with_reason,
    with_standing,
    without,
)

HEALTH_CHANGED = "number.health.changed"
SAVE_ATTEMPTS = 3


class HealthStore(Protocol):
    def get(self, instance_key: str) -> Health: ...
    def get_many(self, instance_keys: Collection[str]) -> dict[str, Health]: ...
    def count_send(
        self, instance_key: str, now: datetime, samples: Sequence[SampleEntry] = (), *, sends: int = 1
    ) -> Health: ...
    def count_failure(self, instance_key: str, provider_code: str) -> Health: ...
    def count_delivery(self, instance_key: str) -> None: ...
    def save_reasons(
        self,
        health: Health,
        reasons: dict[str, Reason],
        state: HealthState,
        since: datetime | None,
        *,
        close_window: tuple[int, int, float] | None = None,
    ) -> Health: ...


class Publisher(Protocol):
    def publish(self, detail_type: str, detail: dict[str, Any]) -> bool: ...


class EventsWebhook(Protocol):
    def instance_event(self, instance: Instance, event: str, data: dict[str, Any]) -> None:
        """Queue `event` for the instance's `eventsWebhookUrl` (nothing when it has none)."""
        ...


Change = Callable[[Health], tuple[dict[str, Reason], tuple[int, int, float] | None]]


@dataclass
class _Sends:
    """An instance's sends not yet written: how many, and the sample entries of those that had one."""

    instance: Instance
    first_slot: int
    count: int = 0
    samples: list[SampleEntry] = field(default_factory=list)


class BanWatch:
    def __init__(
        self,
        store: HealthStore,
        *,
        limits: Thresholds,
        publisher: Publisher | None = None,
        events_webhook: EventsWebhook | None = None,
        cache_seconds: float = 5.0,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        buffered_sends: int = 1,
    ) -> None:
        """`buffered_sends`: how many sends `sent` keeps before it writes them (1: each at once)."""
        if buffered_sends < 1:
            raise ValueError("buffered_sends must be at least 1")
        self._store = store
        self._limits = limits
        self._publisher = publisher
        self._events_webhook = events_webhook
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._cache: dict[str, tuple[float, Health]] = {}
        self._lock = threading.Lock()
        self._buffered_sends = buffered_sends
        self._pending: dict[str, _Sends] = {}

    @property
    def now(self) -> datetime:
        return self._clock()

    @property
    def limits(self) -> Thresholds:
        return self._limits

    # --- what the pool reads -------------------------------------------------------------

    def health_of(self, instance_keys: Collection[str]) -> dict[str, Health]:
        """The instances' health, from this container's copy when younger than `cache_seconds`
        (every observation this container makes refreshes it), else one batch read."""
        now = self._monotonic()
        with self._lock:
            fresh = {
                key: cached[1]
                for key in instance_keys
                if (cached := self._cache.get(key)) is not None and now - cached[0] < self._cache_seconds
            }
        missing = [key for key in instance_keys if key not in fresh]
        if missing:
            read = self._store.get_many(missing)
            for health in read.values():
                self._remember(health)
            fresh.update(read)
        return fresh

    def read(self, instance: Instance) -> Health:
        health = self._store.get(instance.key)
        self._remember(health)
        return health

    # --- what the send worker, receipts and connections say ------------------------------

    def sent(self, instance: Instance, recipient: str | None = None, text: str | None = None) -> None:
        """A successful send: counted, and (given its recipient and text) sampled for diversity, at
        the next `flush` (at once when `buffered_sends` are waiting)."""
        with self._lock:
            sends = self._pending.get(instance.key)
            if sends is None:
                sends = self._pending[instance.key] = _Sends(instance, self._first_slot(instance.key))
            sends.instance = instance
            if recipient is not None and text is not None:
                slot = (sends.first_slot + sends.count) % self._limits.diversity_sample
                sends.samples.append((slot, *fingerprints(instance.key, recipient, text)))
            sends.count += 1
            full = sum(waiting.count for waiting in self._pending.values()) >= self._buffered_sends
        if full:
            self.flush()

    def flush(self) -> None:
        """Write the sends `sent` recorded, one UpdateItem per instance, and judge each instance's
        counts after them (velocity, delivery window, diversity). A write that fails is logged and
        loses that instance's sends since the last flush, never another's."""
        with self._lock:
            batches, self._pending = self._pending, {}
        for sends in batches.values():
            try:
                self._count(sends)
            except Exception:  # the ban watch never fails a send
                logger.exception(
                    "sends not counted by the ban watch", extra={"instance": sends.instance.name, "sends": sends.count}
                )

    def _count(self, sends: _Sends) -> None:
        now = self._clock()
        health = self._store.count_send(sends.instance.key, now, sends.samples, sends=sends.count)
        self._remember(health)

        def change(current: Health) -> tuple[dict[str, Reason], tuple[int, int, float] | None]:
            ratio = window_ratio(current, self._limits)
            window = (current.window_sent, current.window_delivered, ratio) if ratio is not None else None
            return after_send(current, now, self._limits), window

        self._change(sends.instance, health, change, now)

    def refused(self, instance: Instance, provider_code: str | None) -> None:
        """A send refused by the provider: counted by code; a code that speaks of the number
        (463, 130429, 131056, 131049) adds its reason."""
        if not provider_code:
            return
        now = self._clock()
        health = self._store.count_failure(instance.key, provider_code)
        self._remember(health)
        reason = provider_signal(provider_code, now, self._limits)
        if reason is None:
            return
        metrics.add_metric(name="HealthSignals", unit="Count", value=1)
        self._change(
            instance, health, lambda current: (with_reason(pruned(current.reasons, now), reason, now), None), now
        )

    def delivered(self, instance: Instance) -> None:
        self._store.count_delivery(instance.key)

    def connection(self, instance: Instance, *, connected: bool, reason: str | None) -> None:
        """A logged-out disconnection pauses the instance; connecting again lifts that pause."""
        now = self._clock()
        if connected:
            current = self._store.get(instance.key)
            if LOGGED_OUT in current.reasons:
                self._change(
                    instance, current, lambda health: (without(pruned(health.reasons, now), LOGGED_OUT), None), now
                )
            return
        if reason is None or not reason.startswith(LOGGED_OUT):
            return
        logged_out = Reason(code=LOGGED_OUT, state=HealthState.PAUSED, since=now)
        current = self._store.get(instance.key)
        self._change(
            instance, current, lambda health: (with_reason(pruned(health.reasons, now), logged_out, now), None), now
        )

    def standing(self, instance: Instance, status: str | None, quality_rating: str | None) -> None:
        """What the provider says of the number itself (a Meta number's phone number node): its
        reasons replace those of the last read. Written only when they changed; the health comes
        from this container's copy when fresh (the reconciliation has just read it)."""
        now = self._clock()
        wanted = standing_reasons(status, quality_rating, now)
        current = self.health_of([instance.key])[instance.key]
        if not wanted and not any(is_standing(code) for code in current.reasons):
            return
        if wanted:
            metrics.add_metric(name="HealthSignals", unit="Count", value=1)
        self._change(instance, current, lambda health: (with_standing(pruned(health.reasons, now), wanted), None), now)

    # --- what the scheduled reconciliation asks -----------------------------------------

    def refresh(self, instance: Instance) -> HealthState:
        """The state now, written and announced when it moved since the last write (a pause that
        expired): one read, and a write only then. Returns the state now."""
        now = self._clock()
        health = self._store.get(instance.key)
        self._remember(health)
        state = health.state_at(now)
        if state is not health.state:
            lapsed = lapsed_at(health, now)
            self._change(instance, health, lambda current: (pruned(current.reasons, now), None), now, since=lapsed)
        return state

    # --- steps ---------------------------------------------------------------------------

    def _first_slot(self, instance_key: str) -> int:
        """The diversity slot of the first send of a batch (the next ones follow it): after the last
        `send_seq` this container saw of the instance (however old: it is only a hint), at random
        when it saw none. Called under the lock."""
        cached = self._cache.get(instance_key)
        if cached is None:
            return secrets.randbelow(self._limits.diversity_sample)
        return cached[1].send_seq % self._limits.diversity_sample

    def _change(
        self, instance: Instance, health: Health, change: Change, now: datetime, *, since: datetime | None = None
    ) -> None:
        """Save `change(health)`; a state that moves is dated `since` (default `now`) and announced."""
        changed_at = since if since is not None else now
        for attempt in range(SAVE_ATTEMPTS):
            reasons, window = change(health)
            state = _state_of(reasons, now)
            if reasons == health.reasons and state is health.state and window is None:
                return
            dated = changed_at if state is not health.state or health.since is None else health.since
            try:
                saved = self._store.save_reasons(health, reasons, state, dated, close_window=window)
            except HealthChanged:
                if attempt == SAVE_ATTEMPTS - 1:
                    logger.warning("health not updated: too many concurrent writers", extra={"instance": instance.name})
                    return
                health = self._store.get(instance.key)
                continue
            self._remember(saved)
            if state is not health.state:
                self._announce(instance, saved, health.state, now)
            return

    def _announce(self, instance: Instance, health: Health, previous: HealthState, now: datetime) -> None:
        detail = {
            "tenant": instance.tenant,
            "instance": instance.name,
            "numberId": instance.number_id,
            "previousState": str(previous),
            **view(health, now, self._limits),
            "at": now.isoformat(),
        }
        logger.info(
            "instance health changed",
            extra={"instance": instance.name, "state": detail["state"], "previous": str(previous)},
        )
        metrics.add_metric(name="HealthChanges", unit="Count", value=1)
        if self._publisher is not None:
            self._publisher.publish(HEALTH_CHANGED, detail)
        if self._events_webhook is not None:
            try:
                self._events_webhook.instance_event(instance, HEALTH_CHANGED, detail)
            except Exception:  # the events webhook never fails the observation
                logger.exception("events webhook not queued", extra={"instance": instance.name})

    def _remember(self, health: Health) -> None:
        with self._lock:
            if len(self._cache) >= 4096:
                self._cache.clear()
            self._cache[health.instance_key] = (self._monotonic(), health)


def _state_of(reasons: dict[str, Reason], now: datetime) -> HealthState:
    return Health(instance_key="", reasons=reasons).state_at(now)

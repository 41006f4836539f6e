"""Pacing: how fast one number may send, shared by every replica.

Two rules per number (not per instance: WhatsApp judges the number), both DynamoDB conditional
writes so that replicas never overspend them together:

- a token bucket of `per_minute` messages a minute holding at most `burst` (the quotas' GCRA
  bucket: one conditional UpdateItem per message, whose refusal answers the bucket's state);
- a budget of new contacts per UTC day (a recipient not attached to the number, see the pool's
  affinity), which grows with the number's age: `new_contacts_first_day` on its first day, then
  `new_contacts_step` more each day up to `new_contacts_max` (the warm-up ramp). A number's age
  counts from the registration of its oldest instance. Replies to attached recipients are never
  counted or held back by it.

A number over either rule is passed over (the next pool number may send); when none can, the
message goes back to SendQueue as a fresh delayed job for when the first one frees up: never a
busy loop, never a lost message. `per_minute = 0` turns pacing off (the default).

The limits come from the deployment's settings, and a number may override any of them (the
catalog's `Number.pacing`, carried on `NumberRoutes`): its own rate, burst or ramp, or pacing
on for it alone (a rate above 0 while the default is off) or off for it alone (a rate of 0).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from pydantic import ConfigDict

from switchboard.catalog.domain import PacingLimits, PacingOverride
from switchboard.core.buckets import US, Bucket, BucketMoved, Claim, Rate
from switchboard.core.clock import utcnow
from switchboard.core.model import Model
from switchboard.pool.domain import NumberRoutes

PACING_RATE = "pacing_rate"
PACING_NEW_CONTACTS = "pacing_new_contacts"
TAKE_ATTEMPTS = 3
# Distinct limits a container keeps buckets for; past it the caches start over (an operator
# editing overrides again and again must not grow a long-lived container without end).
MAX_CACHED_LIMITS = 256


def new_contact_budget(age_days: int, limits: PacingLimits) -> int:
    """New contacts a number may reach on day `age_days` of its life (0: its first day)."""
    return min(limits.new_contacts_max, limits.new_contacts_first_day + limits.new_contacts_step * max(0, age_days))


def seconds_to_next_day(now: datetime) -> int:
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return max(1, math.ceil((midnight - now).total_seconds()))


class Held(Model):
    """Why a number may not send now, and in how many seconds it may."""

    model_config = ConfigDict(frozen=True)

    reason: str
    wait_seconds: int


class PaceStore(Protocol):
    def take(self, number_id: str, claim: Claim, expires_at: int) -> int: ...
    def count_new_contact(self, number_id: str, day: date, budget: int) -> bool: ...


class Pacer:
    def __init__(self, store: PaceStore, limits: PacingLimits, clock: Callable[[], datetime] = utcnow) -> None:
        self._store = store
        self._defaults = limits
        self._clock = clock
        self._seen: dict[str, int | None] = {}  # number id -> its bucket's last known `tat`
        # One merge per distinct override and one bucket per distinct limits, not one per send.
        self._limits: dict[PacingOverride, PacingLimits] = {}
        self._buckets: dict[PacingLimits, Bucket] = {}
        self._lock = threading.Lock()

    @property
    def defaults(self) -> PacingLimits:
        return self._defaults

    def limits_for(self, number: NumberRoutes) -> PacingLimits:
        """The number's limits: its override over the deployment's defaults."""
        if number.pacing is None:
            return self._defaults
        with self._lock:
            limits = self._limits.get(number.pacing)
            if limits is None:
                if len(self._limits) >= MAX_CACHED_LIMITS:
                    self._limits.clear()
                limits = self._limits[number.pacing] = self._defaults.overridden_by(number.pacing)
        return limits

    def _bucket(self, limits: PacingLimits) -> Bucket:
        with self._lock:
            bucket = self._buckets.get(limits)
            if bucket is None:
                if len(self._buckets) >= MAX_CACHED_LIMITS:
                    self._buckets.clear()
                rate = Rate(per_second=max(limits.per_minute, 1e-6) / 60, burst=limits.burst)
                bucket = self._buckets[limits] = Bucket.of(rate)
        return bucket

    def admit(self, number: NumberRoutes, *, new_contact: bool) -> Held | None:
        """Take one message from the number's bucket and, for a new contact, one from its day's
        budget; the reason and the wait when it may not send now."""
        limits = self.limits_for(number)
        if not limits.enabled:
            return None
        now = self._clock()
        held = self._take_token(number.number_id, self._bucket(limits), now)
        if held is not None or not new_contact:
            return held
        budget = new_contact_budget(_age_days(number, now), limits)
        if budget > 0 and self._store.count_new_contact(number.number_id, now.date(), budget):
            return None
        return Held(reason=PACING_NEW_CONTACTS, wait_seconds=seconds_to_next_day(now))

    def _take_token(self, number_id: str, bucket: Bucket, now: datetime) -> Held | None:
        at = int(now.timestamp() * US)
        with self._lock:
            tat = self._seen.get(number_id)
        for _ in range(TAKE_ATTEMPTS):
            claim = bucket.claim(tat, at, 1)
            if claim is None:
                return Held(reason=PACING_RATE, wait_seconds=max(1, math.ceil(bucket.wait(tat, at, 1))))
            try:
                tat = self._store.take(number_id, claim, bucket.expires(at))
            except BucketMoved as moved:
                tat = moved.current
                continue
            finally:
                with self._lock:
                    self._seen[number_id] = tat
            return None
        # Lost every race to other replicas: the bucket is busy; try again in one interval.
        return Held(reason=PACING_RATE, wait_seconds=max(1, math.ceil(bucket.interval / US)))


def _age_days(number: NumberRoutes, now: datetime) -> int:
    registered = [route.source.created_at for route in number.routes if route.source is not None]
    return (now - min(registered)).days if registered else 0

"""Quotas: a tenant's request rate (per tenant and per API key) and its messages per day.

Request rate is a token bucket shared by every replica: one stored item per bucket holds one
timestamp from which the tokens left are computed, and every take is one conditional UpdateItem
(see core/buckets.py). A container takes a batch of tokens in one write and
spends it from memory (an `Allowance`) until it is spent or stale, so most requests cost no
DynamoDB request at all. Tokens in an allowance were taken from the shared bucket, so a tenant
never gets more than the bucket gives out: at most `burst + rate x t` in any `t` seconds, plus
what the containers held when the window opened (one allowance each).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pydantic import ConfigDict

from switchboard.core.buckets import Bucket, Rate
from switchboard.core.model import Model


class QuotaOverrides(Model):
    """What the platform set for one tenant; a field left `None` takes the default."""

    model_config = ConfigDict(frozen=True)

    requests_per_second: float | None = None
    burst: int | None = None
    key_requests_per_second: float | None = None
    key_burst: int | None = None
    messages_per_day: int | None = None

    def set_fields(self) -> list[str]:
        return [name for name, value in self.model_dump().items() if value is not None]


class Quotas(Model):
    """A tenant's effective quotas: its overrides over the defaults."""

    model_config = ConfigDict(frozen=True)

    requests_per_second: float
    burst: int
    key_requests_per_second: float
    key_burst: int
    messages_per_day: int

    def with_overrides(self, overrides: QuotaOverrides) -> Quotas:
        return self.model_copy(update={name: getattr(overrides, name) for name in overrides.set_fields()})

    @property
    def tenant_rate(self) -> Rate:
        return Rate(per_second=self.requests_per_second, burst=self.burst)

    @property
    def key_rate(self) -> Rate:
        return Rate(per_second=self.key_requests_per_second, burst=self.key_burst)


class TenantQuotas(Model):
    """A tenant's stored overrides (the audited record)."""

    tenant: str
    overrides: QuotaOverrides


# --- what one container holds ------------------------------------------------------------


@dataclass
class Allowance:
    """Tokens one container took from a shared bucket and spends from memory.

    The batch follows the container's own traffic: it doubles when an allowance is spent before
    it goes stale, and otherwise becomes what the container spent in one allowance period, so a
    quiet container takes one token per write, a busy one a full batch, and little is stranded.
    While the bucket is empty the container refuses from memory until a batch could be back
    (`recheck_pause`): a flood costs a few writes a second, not one per request.
    """

    tokens: int = 0
    taken: int = 0  # the size of the current allowance
    taken_at: float = 0.0
    expires_at: float = 0.0
    batch: int = 1
    refused_until: float = 0.0
    known: int | None = None  # the bucket's `tat` as this container last saw it

    def spend(self, now: float) -> bool:
        if self.tokens > 0 and now < self.expires_at:
            self.tokens -= 1
            return True
        return False

    def wait(self, now: float) -> float | None:
        """Seconds left while the bucket is known to be empty, else None (ask the bucket)."""
        return self.refused_until - now if now < self.refused_until else None

    def next_batch(self, now: float, cap: int, allowance_seconds: float) -> int:
        if self.taken:
            if self.tokens == 0 and now < self.expires_at + _GRACE:
                self.batch = self.batch * 2
            else:
                spent = self.taken - self.tokens
                self.batch = int(spent * allowance_seconds / max(allowance_seconds, now - self.taken_at))
            self.taken = 0
        self.batch = max(1, min(cap, self.batch))
        return self.batch

    def granted(self, tokens: int, now: float, allowance_seconds: float) -> None:
        """`tokens` taken from the bucket, one of them spent on the request at hand."""
        self.taken = tokens
        self.tokens = tokens - 1
        self.taken_at = now
        self.expires_at = now + allowance_seconds
        self.refused_until = 0.0

    def empty(self, now: float, pause: float) -> float:
        """The bucket gave nothing: refuse from memory for `pause` seconds; returns it."""
        self.tokens = 0
        self.taken = 0
        self.expires_at = 0.0
        self.refused_until = now + pause
        return pause


def recheck_pause(bucket: Bucket, tat: int | None, now: int, batch: int, *, lost: bool = False) -> float:
    """How long a container refused by a bucket last seen at `tat` waits before asking it again.

    Until a whole batch could be back, so a flood costs about one write per batch like steady
    traffic; `MAX_RECHECK_SECONDS` when other containers took the tokens this one had counted on
    (`lost`): they are flooding too and will take the next ones as well. Never before one token is
    back, nor sooner than `MIN_RECHECK_SECONDS`.
    """
    for_batch = MAX_RECHECK_SECONDS if lost else min(MAX_RECHECK_SECONDS, bucket.wait(tat, now, batch))
    return max(bucket.wait(tat, now, 1), MIN_RECHECK_SECONDS, for_batch)


# An allowance spent a little after it went stale still counts as busy (the next request came late).
_GRACE = 0.25
MIN_RECHECK_SECONDS = 0.1
MAX_RECHECK_SECONDS = 1.0


def retry_after_seconds(wait: float) -> int:
    """Retry-After is whole seconds, and never 0 (a client would retry at once)."""
    return max(1, math.ceil(wait))


# --- messages per day -----------------------------------------------------------------------


def utc_day(now: datetime) -> date:
    return now.astimezone(UTC).date()


def seconds_to_next_day(now: datetime) -> int:
    """Seconds until the next UTC midnight, when the daily counter starts again."""
    current = now.astimezone(UTC)
    midnight = datetime.combine(current.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return max(1, math.ceil((midnight - current).total_seconds()))

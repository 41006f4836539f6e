"""The token bucket shared by every replica, as values: its rule (`Rate`), that rule in the stored
units (`Bucket`), one conditional take (`Claim`) and the refusal of one (`BucketMoved`).

The quotas (a tenant's request rate) and the pacing of a number both spend such buckets; the
DynamoDB write that takes from one is the quotas' (`quotas/dynamo.py`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import ConfigDict

from switchboard.core.model import Model


class Rate(Model):
    """A token bucket's rule: `per_second` tokens added each second, never more than `burst` held."""

    model_config = ConfigDict(frozen=True)

    per_second: float
    burst: int

    def batch_cap(self, allowance_seconds: float) -> int:
        """The most tokens one container holds at once: one allowance's worth of the rate, and
        never more than a tenth of the burst, so ten busy containers cannot strand the bucket."""
        return max(1, min(math.ceil(self.per_second * allowance_seconds), self.burst // 10))


# --- the shared bucket --------------------------------------------------------------------
#
# A bucket is stored as one timestamp, `tat` (epoch microseconds): the moment it would be full
# again if nothing more were taken. Taking n tokens moves it n intervals later; the bucket holds
# what lies between `tat` and `now + capacity`. This is a token bucket (the refill is computed
# from the stored timestamp) whose every take is one conditional UpdateItem that needs no prior
# read: a busy bucket is `SET tat = tat + n x interval` under `tat <= now + capacity - n x
# interval`, so containers taking at once do not invalidate each other's writes.

US = 1_000_000


@dataclass(frozen=True)
class Bucket:
    """A rate in the bucket's units: one token every `interval` us, at most `capacity` us ahead."""

    interval: int
    capacity: int

    @classmethod
    def of(cls, rate: Rate) -> Bucket:
        interval = max(1, round(US / rate.per_second))
        return cls(interval=interval, capacity=rate.burst * interval)

    @property
    def burst(self) -> int:
        return self.capacity // self.interval

    def available(self, tat: int | None, now: int) -> int:
        """Whole tokens held at `now`; a missing bucket, or one idle since `tat`, is full."""
        if tat is None or tat <= now:
            return self.burst
        return max(0, (now + self.capacity - tat) // self.interval)

    def wait(self, tat: int | None, now: int, tokens: int) -> float:
        """Seconds until the bucket holds `tokens` (0 when it already does)."""
        if tat is None:
            return 0.0
        return max(0, tat + tokens * self.interval - self.capacity - now) / US

    def claim(self, tat: int | None, now: int, wanted: int) -> Claim | None:
        """Up to `wanted` tokens, as the bucket last seen at `tat` holds them; None if none."""
        count = min(wanted, self.available(tat, now))
        if count < 1:
            return None
        add = count * self.interval
        return Claim(count=count, now=now, idle=tat is None or tat <= now, add=add, limit=now + self.capacity - add)

    def expires(self, now: int) -> int:
        """Epoch seconds after which the bucket is full again, whatever is taken now."""
        return (now + self.capacity) // US + 1


@dataclass(frozen=True)
class Claim:
    """One conditional take of `count` tokens at `now`. An idle bucket (`tat <= now`, or none)
    restarts at `now + add`; a busy one moves on to `tat + add`, if `tat <= limit`."""

    count: int
    now: int
    idle: bool
    add: int
    limit: int


class BucketMoved(Exception):
    """The bucket was not as the claim assumed (idle, or with enough tokens): `current` is its `tat`."""

    def __init__(self, current: int | None) -> None:
        super().__init__("bucket moved")
        self.current = current

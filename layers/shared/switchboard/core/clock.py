"""The time every record is stamped with, the random ids records are named by, and the deadline
work of one invocation must end by."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


@dataclass(frozen=True)
class Deadline:
    """A moment on a monotonic clock by which some work must stop: what is left of a Lambda
    invocation (`LambdaContext.get_remaining_time_in_millis`), less what must still run after it.
    `clock` is the monotonic clock it is read on (a test's own)."""

    at: float
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def after(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> Deadline:
        return cls(clock() + seconds, clock)

    def left(self) -> float:
        """Seconds until the deadline; zero or less once it passed."""
        return self.at - self.clock()

    def passed(self) -> bool:
        return self.left() <= 0

    def sooner(self, seconds: float) -> Deadline:
        """The deadline `seconds` earlier: what is kept for the work after."""
        return Deadline(self.at - seconds, self.clock)

"""A server whose file trickles in, one byte a (fake) second: what an overall deadline must stop."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx


def _seconds() -> Callable[[], float]:
    seconds = itertools.count()
    return lambda: float(next(seconds))


@dataclass
class Trickle:
    """`transport` answers 200 with up to 1,000 one-byte chunks; `clock` moves a second per call
    (one per byte read); `sent` counts the bytes the server has handed over."""

    sent: list[int] = field(default_factory=list)
    clock: Callable[[], float] = field(default_factory=_seconds)

    @property
    def transport(self) -> httpx.MockTransport:
        def chunks() -> Iterator[bytes]:
            for _ in range(1000):
                self.sent.append(1)
                yield b"%"

        return httpx.MockTransport(lambda request: httpx.Response(200, content=chunks()))

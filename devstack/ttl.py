"""DynamoDB's Time to Live, locally: items past their expiry are deleted, as AWS deletes them.

moto records a table's TTL specification but never deletes anything, so the local stack's tables
kept every expired lease, replay mark, rate bucket and idempotency record for as long as it ran:
a store that only grows, where AWS's stays the size of what is alive. `ExpiringItems` sweeps
every table whose TTL is enabled, every `interval` seconds, under the endpoint's lock (so a sweep
is one more serialised request to moto), with AWS's rules: the TTL attribute must be a Number of
epoch seconds in the past; any other type, or no attribute, never expires. AWS deletes within
days of the expiry, usually much sooner; sweeping promptly is the harsher of the two for code that
wrongly relies on an expired item still being there, which is the side a test should be on.
A deletion goes to the table's stream, as AWS's service deletions do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager
from decimal import Decimal, InvalidOperation
from typing import Any

from moto.dynamodb.models import dynamodb_backends

from devstack.background import Background

log = logging.getLogger("devstack.ttl")

SWEEP_SECONDS = 30.0


def expire(now: float, tables: Collection[str]) -> int:
    """Delete every item whose TTL attribute is a Number below `now` (epoch seconds) in the named
    `tables` (in any account and region moto serves: processes that run several stacks share one
    moto, and each sweeps its own). Returns how many went. The caller holds the endpoint's lock."""
    expired = 0
    for table in _tables_with_ttl(tables):
        attribute = table.ttl["AttributeName"]
        for item in list(_items(table)):
            stored = item.attrs.get(attribute)
            if stored is None or stored.type != "N" or not _before(stored.value, now):
                continue
            table.delete_item(item.hash_key, item.range_key)
            expired += 1
    return expired


class ExpiringItems:
    """A background sweep of `expire`, each under `exclusive()` (the endpoint's one-request lock)."""

    def __init__(
        self,
        exclusive: Callable[[], AbstractContextManager[object]],
        tables: Callable[[], Collection[str]],
        interval: float = SWEEP_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`tables`: the names swept, read at each sweep (a stack creates its tables after it starts this)."""
        self._exclusive = exclusive
        self._tables = tables
        self._interval = interval
        self._clock = clock
        self._threads = Background()
        self._threads.add(self._loop, name="dynamodb-ttl")
        self.expired = 0

    def start(self) -> ExpiringItems:
        self._threads.start()
        return self

    def stop(self, timeout: float = 1.0) -> None:
        self._threads.stop(timeout)

    def sweep(self) -> int:
        with self._exclusive():
            count = expire(self._clock(), self._tables())
        self.expired += count
        return count

    def _loop(self) -> None:
        while not self._threads.stopping.wait(self._interval):
            try:
                self.sweep()
            except Exception:  # a failed sweep is retried at the next one; the stack goes on
                log.exception("expired items not swept")


def _tables_with_ttl(names: Collection[str]) -> Iterator[Any]:
    for account in list(dynamodb_backends.values()):
        for backend in list(account.values()):
            for name, table in list(backend.tables.items()):
                if name not in names:
                    continue
                if table.ttl.get("TimeToLiveStatus") == "ENABLED" and table.ttl.get("AttributeName"):
                    yield table


def _items(table: Any) -> Iterator[Any]:
    for stored in table.items.values():
        if table.range_key_attr:
            yield from list(stored.values())
        else:
            yield stored


def _before(value: str, now: float) -> bool:
    try:
        return Decimal(value) < Decimal(str(now))
    except InvalidOperation:
        return False

"""Reconciliation on demand (an attendant opening or reloading the calls panel), rate-limited per
connection: at most one real reconciliation per `WINDOW_SECONDS`, shared by every replica through
one conditional write. A request inside the window is refused with 429 `rate_limited` and
`Retry-After`: the reconciliation that opened the window is that recent, so the panel reads the
connection's calls view instead. A failed reconciliation keeps its window, so a provider that is
down is not asked again by every open panel.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol

from switchboard.calls.reconcile import Reconciler, ReconcileReport
from switchboard.catalog.ports import Instances
from switchboard.core.errors import RateLimited
from switchboard.core.identity import Principal
from switchboard.core.observability import logger

WINDOW_SECONDS = 10.0


class Gate(Protocol):
    def enter(self, tenant: str, instance: str, now: float, window_seconds: float) -> float | None: ...


class ReconcileOnDemand:
    def __init__(
        self,
        instances: Instances,
        reconciler: Reconciler,
        gate: Gate,
        *,
        window_seconds: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._instances = instances
        self._reconciler = reconciler
        self._gate = gate
        self._window = window_seconds
        self._clock = clock

    def reconcile(self, principal: Principal, instance_name: str) -> ReconcileReport:
        """Raises NotFound, RateLimited (429, `Retry-After`) and the provider's failures."""
        instance = self._instances.get_instance(principal.tenant, instance_name)
        left = self._gate.enter(instance.tenant, instance.name, self._clock(), self._window)
        if left is not None:
            logger.info("reconcile refused: window open", extra={"instance": instance.key, "left": round(left, 1)})
            raise RateLimited(
                f"this connection was reconciled less than {self._window:g} s ago; read its calls view",
                retry_after_seconds=math.ceil(left),
            )
        return self._reconciler.reconcile(instance)

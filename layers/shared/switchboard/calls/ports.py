"""Ports of the calls capability that more than one of its services uses."""

from __future__ import annotations

from typing import Protocol


class ReconcileRequests(Protocol):
    """Asks for one instance's reconciliation, now or after `delay_seconds`."""

    def request(self, instance: str, delay_seconds: int = 0) -> None: ...

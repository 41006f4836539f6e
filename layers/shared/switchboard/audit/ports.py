"""The audit log as the capabilities that change configuration see it."""

from __future__ import annotations

from typing import Any, Protocol

from switchboard.core.identity import Principal


class Audit(Protocol):
    def record(
        self, principal: Principal | None, action: str, target: str, before: Any = None, after: Any = None
    ) -> None: ...

"""An audit entry as the API shows it (it never holds a secret)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from switchboard.audit.domain import AuditEntry
from switchboard.core.wire import View


class AuditView(View):
    id: str
    at: datetime
    actor_key_id: str | None
    action: str
    target: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditView:
        return cls.model_validate(entry.model_dump(exclude={"tenant"}))

"""The audit log's record: one configuration change, who made it, and the record before and after."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from switchboard.core.model import Model


class AuditEntry(Model):
    tenant: str
    id: str
    at: datetime
    actor_key_id: str | None = None  # None for changes made by the system itself
    action: str
    target: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None

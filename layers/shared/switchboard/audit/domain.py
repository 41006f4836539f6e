"""The audit log's record: one configuration change, who made it, and the record before and after."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from switchboard.core.model import Model


class AuditEntry(Model):
    tenant: str
    id: str
    at: datetime
    actor_key_id: str | None = None  # the key that made it; None for a person or the system itself
    actor_user: str | None = None  # the person (the user pool's `sub`) who made it
    actor: str | None = None  # who, in words: the person's email, else the key id; None: the system
    action: str
    target: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None

"""An audit entry as the API shows it (it never holds a secret)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from switchboard.audit.domain import AuditEntry
from switchboard.core.wire import View


class AuditView(View):
    id: str
    at: datetime
    actor_key_id: str | None = Field(description="The API key that made the change; null for a person or the system.")
    actor_user: str | None = Field(default=None, description="The person (user pool `sub`) who made the change.")
    actor: str | None = Field(default=None, description="Who made it: the person's email, else the key id.")
    action: str
    target: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditView:
        return cls.model_validate(entry.model_dump(exclude={"tenant"}))

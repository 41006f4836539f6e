"""Audit log: one item per configuration change, listed per tenant, newest first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from boto3.dynamodb.conditions import Key
from pydantic import BaseModel

from switchboard.core.clock import new_id
from switchboard.core.dynamo import from_item, to_item
from switchboard.core.identity import PLATFORM_TENANT, Principal
from switchboard.core.model import Model

_SECRET_FIELDS = {"token", "api_token", "downstream_api_token", "webhook_secret", "admin_token", "digest", "secret"}


class AuditEntry(Model):
    tenant: str
    id: str
    at: datetime
    actor_key_id: str | None = None  # None for changes made by the system itself
    action: str
    target: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


class AuditLog:
    def __init__(self, table: Any) -> None:
        self._table = table

    def record(
        self, principal: Principal | None, action: str, target: str, before: Any = None, after: Any = None
    ) -> None:
        snapshot_after = _snapshot(after)
        tenant = (snapshot_after or _snapshot(before) or {}).get("tenant") or (
            principal.tenant if principal else PLATFORM_TENANT
        )
        entry = AuditEntry(
            tenant=tenant,
            id=new_id("aud"),
            at=datetime.now(UTC),
            actor_key_id=principal.key_id if principal else None,
            action=action,
            target=target,
            before=_snapshot(before),
            after=snapshot_after,
        )
        self._table.put_item(Item=to_item(entry, {"pk": f"AUDIT#{tenant}", "sk": f"{entry.at.isoformat()}#{entry.id}"}))

    def list(self, tenant: str, limit: int = 100) -> list[AuditEntry]:
        page = self._table.query(
            KeyConditionExpression=Key("pk").eq(f"AUDIT#{tenant}"), ScanIndexForward=False, Limit=limit
        )
        return [from_item(AuditEntry, item) for item in page.get("Items", [])]


def _snapshot(value: Any) -> dict[str, Any] | None:
    """A JSON-safe copy of a record with every secret-bearing field removed."""
    if value is None:
        return None
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)
    return {name: field for name, field in data.items() if name not in _SECRET_FIELDS}

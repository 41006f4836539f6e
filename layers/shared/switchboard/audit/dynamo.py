"""Audit log: one item per configuration change, listed per tenant, newest first.

AUDIT#<tenant>   / <at ISO>#<id>   one change: who (the key or the person), what (action, target), the
                                   record before and after it without its secrets
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from pynamodb.attributes import UnicodeAttribute

from switchboard.audit.domain import AuditEntry
from switchboard.core import store
from switchboard.core.clock import new_id
from switchboard.core.identity import PLATFORM_TENANT, Principal
from switchboard.core.store import DocumentAttribute, IsoDateTimeAttribute, TableItem

_SECRET_FIELDS = {"token", "api_token", "downstream_api_token", "webhook_secret", "admin_token", "digest", "secret"}


class AuditItem(TableItem):
    PREFIX = "AUDIT"
    SORT_PREFIX = ""  # the sort key is the moment and the id: a Query lists the newest first

    tenant = UnicodeAttribute()
    id = UnicodeAttribute()
    at = IsoDateTimeAttribute()
    actor_key_id = UnicodeAttribute(null=True)
    actor_user = UnicodeAttribute(null=True)
    actor = UnicodeAttribute(null=True)
    action = UnicodeAttribute()
    target = UnicodeAttribute()
    before = DocumentAttribute(null=True)
    after = DocumentAttribute(null=True)


class AuditLog:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
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
            actor_key_id=principal.key_id if principal and not principal.user else None,
            actor_user=principal.user if principal else None,
            actor=principal.actor if principal else None,
            action=action,
            target=target,
            before=_snapshot(before),
            after=snapshot_after,
        )
        store.put(
            AuditItem(
                AuditItem.pk_for(tenant),
                AuditItem.sk_for(entry.at.isoformat(), entry.id),
                **entry.model_dump(exclude_none=True),
            )
        )

    def list(self, tenant: str, limit: int = 100) -> list[AuditEntry]:
        items = AuditItem.query(AuditItem.pk_for(tenant), scan_index_forward=False, limit=limit)
        return [_entry(item) for item in items]


def _entry(item: AuditItem) -> AuditEntry:
    return AuditEntry(
        tenant=item.tenant,
        id=item.id,
        at=item.at,
        actor_key_id=item.actor_key_id,
        actor_user=item.actor_user,
        # Entries written before people signed in name only their key.
        actor=item.actor or item.actor_key_id,
        action=item.action,
        target=item.target,
        before=item.before,
        after=item.after,
    )


def _snapshot(value: Any) -> dict[str, Any] | None:
    """A JSON-safe copy of a record with every secret-bearing field removed."""
    if value is None:
        return None
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)
    return {name: field for name, field in data.items() if name not in _SECRET_FIELDS}

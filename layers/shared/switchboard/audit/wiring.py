"""Builds the audit log once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.components import component
from switchboard.core.wiring import table

if TYPE_CHECKING:
    from switchboard.audit.dynamo import AuditLog


@component
def audit_log() -> AuditLog:
    from switchboard.audit.dynamo import AuditLog

    return AuditLog(table())

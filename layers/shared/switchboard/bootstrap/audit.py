"""Builds the audit log once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import table

if TYPE_CHECKING:
    from switchboard.audit.dynamo import AuditLog


@component
def audit_log(c: Components) -> AuditLog:
    from switchboard.audit.dynamo import AuditLog

    return AuditLog(table(c))

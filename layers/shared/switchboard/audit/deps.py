"""What the audit routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.audit.dynamo import AuditLog


def audit_log() -> AuditLog:
    """The audit log of configuration changes."""
    raise NotProvided(audit_log)

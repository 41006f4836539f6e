"""The audit log of configuration changes: who changed what, when."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.audit import deps
from switchboard.audit.schemas import AuditView
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import PLATFORM_TENANT, Principal, Scope
from switchboard.core.wire import OwnerTag

if TYPE_CHECKING:
    # The function serving these routes serves others too: each service is imported by the
    # composition root when a route that takes it first runs.
    from switchboard.audit.dynamo import AuditLog
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    AuditLog = Any

router = APIGatewayHttpRouter()
Audit = Annotated[AuditLog, Depends(deps.audit_log)]
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
ERRORS = documented(400, 401, 403, 422)


@router.get("/api/audit", tags=["audit"], responses=ERRORS)
def audit_log(
    audit: Audit,
    principal: PlatformOrAdmin,
    tenant: Annotated[OwnerTag | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[AuditView]:
    """Configuration changes, newest first, without secrets. An admin reads its own tenant's log;
    the platform reads `?tenant=<owner_tag>` (default: the platform's own changes)."""
    scope = (tenant or PLATFORM_TENANT) if principal.has(Scope.PLATFORM) else principal.tenant
    return [AuditView.of(entry) for entry in audit.list(scope, limit)]

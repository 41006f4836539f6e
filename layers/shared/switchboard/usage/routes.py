"""Usage per (owner_tag, month) for billing, and the audit log of configuration changes."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard import bootstrap
from switchboard.catalog.domain import PLATFORM_TENANT, Principal, Scope
from switchboard.catalog.schemas import OwnerTag
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.routing.schemas import AuditView, Month, UsageView

router = APIGatewayHttpRouter()
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
ERRORS = documented(400, 401, 403, 422)


@router.get("/api/usage/summary", tags=["usage"], responses=ERRORS)
def usage_summary(month: Annotated[Month, Query()], principal: PlatformOrAdmin) -> list[UsageView]:
    """Messages in and out per (owner_tag, month): the platform sees every tenant (and instances
    without an owner tag, as `ownerTag: null`), an admin only its own tag."""
    tags = [tenant.owner_tag for tenant in bootstrap.catalog_service().list_tenants()]
    return [UsageView.of(usage) for usage in bootstrap.usage_recorder().summary(principal, month, tags)]


@router.get("/api/audit", tags=["audit"], responses=ERRORS)
def audit_log(
    principal: PlatformOrAdmin,
    tenant: Annotated[OwnerTag | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[AuditView]:
    """Configuration changes, newest first, without secrets. An admin reads its own tenant's log;
    the platform reads `?tenant=<owner_tag>` (default: the platform's own changes)."""
    scope = (tenant or PLATFORM_TENANT) if principal.has(Scope.PLATFORM) else principal.tenant
    return [AuditView.of(entry) for entry in bootstrap.audit_log().list(scope, limit)]

"""Usage per (owner_tag, month), for billing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.catalog.deps import catalog_service
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.usage.deps import usage_recorder
from switchboard.usage.schemas import Month, UsageView

if TYPE_CHECKING:
    # The function serving these routes serves others too: each service is imported by the
    # composition root when a route that takes it first runs.
    from switchboard.catalog.service import CatalogService
    from switchboard.usage.service import UsageRecorder
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    CatalogService = Any
    UsageRecorder = Any

router = APIGatewayHttpRouter()
Catalog = Annotated[CatalogService, Depends(catalog_service)]
Usage = Annotated[UsageRecorder, Depends(usage_recorder)]
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
ERRORS = documented(400, 401, 403, 422)


@router.get("/api/usage/summary", tags=["usage"], responses=ERRORS)
def usage_summary(
    catalog: Catalog, usage: Usage, month: Annotated[Month, Query()], principal: PlatformOrAdmin
) -> list[UsageView]:
    """Messages in and out per (owner_tag, month): the platform sees every tenant (and instances
    without an owner tag, as `ownerTag: null`), an admin only its own tag."""
    tags = [tenant.owner_tag for tenant in catalog.list_tenants()]
    return [UsageView.of(summary) for summary in usage.summary(principal, month, tags)]

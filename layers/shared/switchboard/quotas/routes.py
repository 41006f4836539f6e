"""A tenant's quotas: the platform sets them; the tenant's admin reads its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import OwnerTag
from switchboard.quotas import deps
from switchboard.quotas.schemas import PutQuotas, QuotasView

if TYPE_CHECKING:
    # The function serving these routes serves others too: each service is imported by the
    # composition root when a route that takes it first runs.
    from switchboard.quotas.service import QuotaService
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    QuotaService = Any

router = APIGatewayHttpRouter()
Quotas = Annotated[QuotaService, Depends(deps.quota_service)]
Platform = Annotated[Principal, Depends(requires(router, Scope.PLATFORM))]
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
ERRORS = documented(400, 401, 403, 404, 422)


@router.get("/api/tenants/<owner_tag>/quotas", tags=["tenants"], responses=ERRORS)
def get_quotas(quotas: Quotas, owner_tag: Annotated[OwnerTag, Path()], principal: PlatformOrAdmin) -> QuotasView:
    """The tenant's effective quotas, which of them the platform set, and its messages today."""
    return QuotasView.of(quotas.get(principal, owner_tag))


@router.put("/api/tenants/<owner_tag>/quotas", tags=["tenants"], responses=ERRORS)
def put_quotas(
    quotas: Quotas, owner_tag: Annotated[OwnerTag, Path()], body: PutQuotas, principal: Platform
) -> QuotasView:
    """Replace the tenant's overrides of the default quotas (absent or null: the default). Audited;
    every container applies them within `QUOTA_CONFIG_CACHE_SECONDS`."""
    return QuotasView.of(quotas.put(principal, owner_tag, body.overrides()))

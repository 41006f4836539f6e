"""Tenant routes: the operator (`platform`) creates and lists tenants; an admin reads its own.

The platform or the tenant's own admin manages its downstream mapping (PUT/DELETE)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.catalog.deps import catalog_service
from switchboard.catalog.schemas import (
    ApiKeyView,
    CreatedApiKeyView,
    CreatedTenantView,
    CreateTenant,
    TenantView,
)
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import OwnerTag
from switchboard.routing.deps import routing_service
from switchboard.routing.schemas import PutDownstream, TenantRoutingView

if TYPE_CHECKING:
    # The function serving these routes serves others too: each service is imported by the
    # composition root when a route that takes it first runs.
    from switchboard.catalog.service import CatalogService
    from switchboard.routing.service import RoutingService
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    CatalogService = Any
    RoutingService = Any

router = APIGatewayHttpRouter()
Catalog = Annotated[CatalogService, Depends(catalog_service)]
Routing = Annotated[RoutingService, Depends(routing_service)]
Platform = Annotated[Principal, Depends(requires(router, Scope.PLATFORM))]
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
ERRORS = documented(400, 401, 403, 404, 409, 422)


@router.post("/api/tenants", status_code=201, tags=["tenants"], responses=ERRORS)
def create_tenant(catalog: Catalog, body: CreateTenant, principal: Platform) -> CreatedTenantView:
    """Create a tenant and its first `admin` key (shown once)."""
    tenant, admin = catalog.create_tenant(principal, body.owner_tag, body.name)
    admin_view = CreatedApiKeyView.model_validate({**ApiKeyView.of(admin.key).model_dump(), "key": admin.plaintext})
    return CreatedTenantView(tenant=TenantView.of(tenant), admin_key=admin_view)


@router.get("/api/tenants", tags=["tenants"], responses=ERRORS)
def list_tenants(catalog: Catalog, routing: Routing, principal: Platform) -> list[TenantRoutingView]:
    """Every tenant with its downstream mapping (never a token: only whether one is set, and a hint)."""
    mappings = routing.mappings()
    return [TenantRoutingView.with_mapping(tenant, mappings.get(tenant.owner_tag)) for tenant in catalog.list_tenants()]


@router.get("/api/tenants/<owner_tag>", tags=["tenants"], responses=ERRORS)
def get_tenant(
    catalog: Catalog, routing: Routing, owner_tag: Annotated[OwnerTag, Path()], principal: PlatformOrAdmin
) -> TenantRoutingView:
    tenant = catalog.get_tenant(principal, owner_tag)
    return TenantRoutingView.with_mapping(tenant, routing.get_mapping(principal, owner_tag))


@router.put("/api/tenants/<owner_tag>", tags=["tenants"], responses=ERRORS)
def put_tenant_downstream(
    catalog: Catalog,
    routing: Routing,
    owner_tag: Annotated[OwnerTag, Path()],
    body: PutDownstream,
    principal: PlatformOrAdmin,
) -> TenantRoutingView:
    """Upsert the tenant's downstream (Chatwoot-style base URL, account, inbox, write-only token).

    Effective for the very next event in every container. The URL must be https to a public
    address (checked now and on every call); omit the token to keep the current one.
    """
    tenant = catalog.get_tenant(principal, owner_tag)
    mapping = routing.put_mapping(
        principal,
        owner_tag,
        base_url=body.downstream_base_url,
        account_id=body.downstream_account_id,
        inbox_id=body.downstream_inbox_id,
        api_token=body.downstream_api_token,
    )
    return TenantRoutingView.with_mapping(tenant, mapping)


@router.delete("/api/tenants/<owner_tag>", tags=["tenants"], responses=ERRORS)
def delete_tenant_downstream(
    routing: Routing, owner_tag: Annotated[OwnerTag, Path()], principal: PlatformOrAdmin
) -> Response[None]:
    """Remove the tenant's downstream mapping: its instances fall back to the global downstream."""
    routing.delete_mapping(principal, owner_tag)
    return Response(status_code=204, content_type=content_types.APPLICATION_JSON)

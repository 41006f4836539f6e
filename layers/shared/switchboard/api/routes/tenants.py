"""Tenant routes: the operator (`platform`) creates and lists tenants; an admin reads its own."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard import bootstrap
from switchboard.api.auth import requires
from switchboard.api.errors import documented
from switchboard.api.schemas.catalog import (
    ApiKeyView,
    CreatedApiKeyView,
    CreatedTenantView,
    CreateTenant,
    OwnerTag,
    TenantView,
)
from switchboard.domain.catalog import Principal, Scope

router = APIGatewayHttpRouter()
Platform = Annotated[Principal, Depends(requires(router, Scope.PLATFORM))]
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
ERRORS = documented(400, 401, 403, 404, 409, 422)


@router.post("/api/tenants", status_code=201, tags=["tenants"], responses=ERRORS)
def create_tenant(body: CreateTenant, principal: Platform) -> CreatedTenantView:
    """Create a tenant and its first `admin` key (shown once)."""
    tenant, admin = bootstrap.catalog_service().create_tenant(principal, body.owner_tag, body.name)
    admin_view = CreatedApiKeyView.model_validate({**ApiKeyView.of(admin.key).model_dump(), "key": admin.plaintext})
    return CreatedTenantView(tenant=TenantView.of(tenant), admin_key=admin_view)


@router.get("/api/tenants", tags=["tenants"], responses=ERRORS)
def list_tenants(principal: Platform) -> list[TenantView]:
    return [TenantView.of(tenant) for tenant in bootstrap.catalog_service().list_tenants()]


@router.get("/api/tenants/<owner_tag>", tags=["tenants"], responses=ERRORS)
def get_tenant(owner_tag: Annotated[OwnerTag, Path()], principal: PlatformOrAdmin) -> TenantView:
    return TenantView.of(bootstrap.catalog_service().get_tenant(principal, owner_tag))

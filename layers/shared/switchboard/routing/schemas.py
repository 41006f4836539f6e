"""Bodies of the tenants' downstream mappings (camelCase); the replies' are in reply_schemas.py."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, StringConstraints

from switchboard.catalog.domain import Tenant
from switchboard.catalog.schemas import TenantView
from switchboard.core.wire import Body, Secret, View
from switchboard.routing.domain import DownstreamMapping

# Printable ASCII only: an internationalised host must come as punycode (xn--...).
DownstreamUrl = Annotated[str, StringConstraints(pattern=r"^https?://[!-~]+$", max_length=2048)]


class PutDownstream(Body):
    """Upsert of a tenant's downstream. The token is write-only; omit it to keep the current one."""

    downstream_base_url: DownstreamUrl
    downstream_api_token: Secret | None = None
    downstream_account_id: int = Field(ge=1, lt=2**53)
    downstream_inbox_id: int = Field(ge=1, lt=2**53)


class DownstreamView(View):
    downstream_base_url: str
    downstream_account_id: int
    downstream_inbox_id: int
    downstream_api_token_set: bool = True
    downstream_api_token_hint: str
    updated_at: datetime

    @classmethod
    def of(cls, mapping: DownstreamMapping) -> DownstreamView:
        return cls(
            downstream_base_url=mapping.base_url,
            downstream_account_id=mapping.account_id,
            downstream_inbox_id=mapping.inbox_id,
            downstream_api_token_hint=mapping.token_hint,
            updated_at=mapping.updated_at,
        )


class TenantRoutingView(TenantView):
    downstream: DownstreamView | None = Field(
        default=None, description="The tenant's own downstream; null: its instances use the global fallback."
    )

    @classmethod
    def with_mapping(cls, tenant: Tenant, mapping: DownstreamMapping | None) -> TenantRoutingView:
        return cls(
            **TenantView.of(tenant).model_dump(),
            downstream=DownstreamView.of(mapping) if mapping else None,
        )

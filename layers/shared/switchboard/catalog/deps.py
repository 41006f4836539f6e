"""What the catalog routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.catalog.service import CatalogService


def catalog_service() -> CatalogService:
    """Tenants, API keys, numbers, provider servers and instances."""
    raise NotProvided(catalog_service)

"""Builds the catalog's repository and service once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.audit.wiring import audit_log
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import secrets, table

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance
    from switchboard.catalog.dynamo import CatalogRepository
    from switchboard.catalog.ports import GrantChanges, KeyAttachment
    from switchboard.catalog.service import CatalogService


@component
def catalog_repository() -> CatalogRepository:
    from switchboard.catalog.dynamo import CatalogRepository

    return CatalogRepository(table())


@component
def catalog_service() -> CatalogService:
    from switchboard.catalog.service import CatalogService

    def status_read(instance: Instance) -> Instance:
        # Imported on the first save: the connection state's wiring reaches the providers.
        from switchboard.connection_state.wiring import status_reads

        return status_reads().after_save(instance)

    settings = get_settings()
    return CatalogService(
        catalog_repository(),
        secrets(),
        audit_log(),
        local_mode=settings.local_mode,
        status_read=status_read,
        grant_changes=_live_access() if settings.live_management_url else None,
        key_attachments=[_key_pool()],
    )


def _key_pool() -> KeyAttachment:
    """A key's number pool goes with the key (the pool's wiring builds on the catalog's)."""
    from switchboard.pool.wiring import pool_repository

    return pool_repository()


def _live_access() -> GrantChanges:
    """Live connections are closed when their key is revoked or changed (a deployment without a
    live WebSocket API has none)."""
    from switchboard.live.wiring import live_access

    return live_access()

"""Builds the pool's repository, its service and the per-container cache of a key's pool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.audit.wiring import audit_log
from switchboard.catalog.wiring import catalog_repository, catalog_service
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import event_publisher, table

if TYPE_CHECKING:
    from switchboard.pool.dynamo import PoolRepository
    from switchboard.pool.service import PoolService, SendingConfigSource


@component
def pool_repository() -> PoolRepository:
    from switchboard.pool.dynamo import PoolRepository

    return PoolRepository(table(), shards=get_settings().pool_ticket_shards)


@component
def pool_service() -> PoolService:
    from switchboard.pool.service import PoolService

    return PoolService(catalog_repository(), pool_repository(), catalog_service(), audit_log(), event_publisher())


@component
def sending_config_source() -> SendingConfigSource:
    """A key's pool and numbers, cached per container for `POOL_CONFIG_CACHE_SECONDS`."""
    from switchboard.pool.service import SendingConfigSource

    ttl = get_settings().pool_config_cache_seconds
    return SendingConfigSource(catalog_repository(), pool_repository(), ttl_seconds=ttl)

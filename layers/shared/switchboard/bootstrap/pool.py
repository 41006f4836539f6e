"""Builds the pool's repository, its service and the per-container cache of a key's pool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.catalog import catalog_repository, catalog_service
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import event_publisher, table

if TYPE_CHECKING:
    from switchboard.pool.dynamo import PoolRepository
    from switchboard.pool.service import PoolService, SendingConfigSource


@component
def pool_repository(c: Components) -> PoolRepository:
    from switchboard.pool.dynamo import PoolRepository

    return PoolRepository(table(c), shards=c.settings.pool_ticket_shards)


@component
def pool_service(c: Components) -> PoolService:
    from switchboard.pool.service import PoolService

    return PoolService(catalog_repository(c), pool_repository(c), catalog_service(c), audit_log(c), event_publisher(c))


@component
def sending_config_source(c: Components) -> SendingConfigSource:
    """A key's pool and numbers, cached per container for `POOL_CONFIG_CACHE_SECONDS`."""
    from switchboard.pool.service import SendingConfigSource

    ttl = c.settings.pool_config_cache_seconds
    return SendingConfigSource(catalog_repository(c), pool_repository(c), ttl_seconds=ttl)

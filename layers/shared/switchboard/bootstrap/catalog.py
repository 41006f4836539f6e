"""Builds the catalog's repository and service once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import secrets, table

if TYPE_CHECKING:
    from switchboard.catalog.authentication import Authenticator, KeyAuthenticator
    from switchboard.catalog.domain import Instance
    from switchboard.catalog.dynamo import CatalogRepository
    from switchboard.catalog.ports import GrantChanges, KeyAttachment
    from switchboard.catalog.service import CatalogService


@component
def catalog_repository(c: Components) -> CatalogRepository:
    from switchboard.catalog.dynamo import CatalogRepository

    return CatalogRepository(table(c))


@component
def key_authenticator(c: Components) -> KeyAuthenticator:
    """The authorizer's key lookups, cached per container for `KEY_CACHE_SECONDS`."""
    from switchboard.catalog.authentication import KeyAuthenticator

    return KeyAuthenticator(catalog_repository(c), ttl_seconds=c.settings.key_cache_seconds)


@component
def authenticator(c: Components) -> Authenticator:
    """Every request's credential: API keys, and people's tokens when a user pool is configured."""
    from switchboard.bootstrap.people import user_authenticator, user_pool_configured
    from switchboard.catalog.authentication import Authenticator

    return Authenticator(key_authenticator(c), user_authenticator(c) if user_pool_configured(c) else None)


@component
def catalog_service(c: Components) -> CatalogService:
    from switchboard.catalog.service import CatalogService

    def status_read(instance: Instance) -> Instance:
        # Imported on the first save: the connection state's components reach the providers.
        from switchboard.bootstrap.connection_state import status_reads

        return status_reads(c).after_save(instance)

    settings = c.settings
    return CatalogService(
        catalog_repository(c),
        secrets(c),
        audit_log(c),
        local_mode=settings.local_mode,
        status_read=status_read,
        grant_changes=_live_access(c) if settings.live_management_url else None,
        key_attachments=[_key_pool(c)],
    )


def _key_pool(c: Components) -> KeyAttachment:
    """A key's number pool goes with the key (the pool's components build on the catalog's)."""
    from switchboard.bootstrap.pool import pool_repository

    return pool_repository(c)


def _live_access(c: Components) -> GrantChanges:
    """Live connections are closed when their key is revoked or changed (a deployment without a
    live WebSocket API has none)."""
    from switchboard.bootstrap.live import live_access

    return live_access(c)

"""Builds the call limit's repository, the capabilities cache and its services once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.audit.wiring import audit_log
from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.wiring import event_publisher, table
from switchboard.providers.wiring import targets

if TYPE_CHECKING:
    from switchboard.call_limit.dynamo import LineRepository
    from switchboard.call_limit.service import CallsConfigService, CapabilitiesCache
    from switchboard.call_limit.subscriptions import SubscriptionService


@component
def line_repository() -> LineRepository:
    from switchboard.call_limit.dynamo import LineRepository

    return LineRepository(table())


@component
def capabilities_cache() -> CapabilitiesCache:
    from switchboard.call_limit.service import CapabilitiesCache

    return CapabilitiesCache()


@component
def calls_config_service() -> CallsConfigService:
    """Also used by reconciliation: `refresh_from_status(instance) -> Line`."""
    from switchboard.call_limit.service import CallsConfigService

    return CallsConfigService(
        catalog_repository(),
        line_repository(),
        targets(),
        capabilities=capabilities_cache(),
        publisher=event_publisher(),
        audit=audit_log(),
    )


@component
def subscription_service() -> SubscriptionService:
    from switchboard.call_limit.subscriptions import SubscriptionService

    return SubscriptionService(catalog_repository(), targets(), calls_config_service(), audit_log())

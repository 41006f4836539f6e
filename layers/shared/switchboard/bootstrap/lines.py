"""Builds the call limit's repository, the capabilities cache and its services once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import event_publisher, table
from switchboard.bootstrap.providers import targets

if TYPE_CHECKING:
    from switchboard.lines.dynamo import LineRepository
    from switchboard.lines.service import CallsConfigService, CapabilitiesCache
    from switchboard.lines.subscriptions import SubscriptionService


@component
def line_repository(c: Components) -> LineRepository:
    from switchboard.lines.dynamo import LineRepository

    return LineRepository(table(c))


@component
def capabilities_cache(c: Components) -> CapabilitiesCache:
    from switchboard.lines.service import CapabilitiesCache

    return CapabilitiesCache()


@component
def calls_config_service(c: Components) -> CallsConfigService:
    """Also used by reconciliation: `refresh_from_status(instance) -> Line`."""
    from switchboard.lines.service import CallsConfigService

    return CallsConfigService(
        catalog_repository(c),
        line_repository(c),
        targets(c),
        capabilities=capabilities_cache(c),
        publisher=event_publisher(c),
        audit=audit_log(c),
    )


@component
def subscription_service(c: Components) -> SubscriptionService:
    from switchboard.lines.subscriptions import SubscriptionService

    return SubscriptionService(catalog_repository(c), targets(c), calls_config_service(c), audit_log(c))

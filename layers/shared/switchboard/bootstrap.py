"""Composition root: the only place that builds real adapters, once per container, on first use.

Handlers call these functions; tests reset them with `reset()` after changing the environment.
`AWS_ENDPOINT_URL` (read by boto3 itself) points every client at the local stack or moto.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

import boto3

from switchboard.adapters.dynamo.audit import AuditLog
from switchboard.adapters.dynamo.catalog import CatalogRepository
from switchboard.adapters.dynamo.lines import LineRepository
from switchboard.adapters.events import EventPublisher
from switchboard.adapters.secrets import SecretStore
from switchboard.domain.events import EffectHandler
from switchboard.services.calls_config import CallsConfigService, CapabilitiesCache
from switchboard.services.catalog import CatalogService
from switchboard.services.subscriptions import SubscriptionService
from switchboard.services.targets import ProviderKind, TargetResolver
from switchboard.settings import get_settings

if TYPE_CHECKING:
    from switchboard.domain.provider import ProviderClient

T = TypeVar("T")
_built: list[Any] = []


def component(factory: Callable[..., T]) -> Callable[..., T]:
    """Build once per container; `reset()` forgets it."""
    cached = cache(factory)
    _built.append(cached)
    return cached


@component
def session() -> boto3.session.Session:
    return boto3.session.Session()


@component
def table() -> Any:
    return session().resource("dynamodb").Table(get_settings().table_name)


@component
def client(service: str) -> Any:
    return session().client(service)


@component
def secrets() -> SecretStore:
    settings = get_settings()
    return SecretStore(client("ssm"), settings.secrets_prefix, settings.secret_cache_seconds)


@component
def audit_log() -> AuditLog:
    return AuditLog(table())


@component
def catalog_repository() -> CatalogRepository:
    return CatalogRepository(table())


@component
def catalog_service() -> CatalogService:
    return CatalogService(catalog_repository(), secrets(), audit_log(), local_mode=get_settings().local_mode)


# --- calls (issue 6): the versioned limit ---------------------------------------------------


@component
def provider_client(kind: ProviderKind) -> ProviderClient:
    """One pooled client per provider kind, shared by every target of that kind.

    Imported here so that functions that never reach a provider do not load httpx at cold start.
    """
    from switchboard.adapters.providers import provider_client_for  # noqa: PLC0415

    settings = get_settings()
    return provider_client_for(kind, local_mode=settings.local_mode, read_timeout=settings.provider_timeout_seconds)


@component
def targets() -> TargetResolver:
    return TargetResolver(catalog_repository(), secrets(), provider_client)


@component
def line_repository() -> LineRepository:
    return LineRepository(table())


@component
def event_publisher() -> EventPublisher:
    return EventPublisher(client("events"), get_settings().event_bus_name)


@component
def capabilities_cache() -> CapabilitiesCache:
    return CapabilitiesCache()


@component
def calls_config_service() -> CallsConfigService:
    """Also used by reconciliation: `refresh_from_status(instance) -> Line`."""
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
    return SubscriptionService(catalog_repository(), targets(), calls_config_service(), audit_log())


@component
def event_handlers() -> dict[str, list[EffectHandler]]:
    """The effects of each provider webhook event, in order; the ingest runs them all."""
    handlers: dict[str, list[EffectHandler]] = {
        name: [] for name in ("message", "receipt", "connection", "call", "call_settings")
    }
    handlers["call_settings"].append(lambda event: calls_config_service().on_call_settings(event))
    handlers["connection"].append(lambda event: calls_config_service().on_connection(event))
    return handlers


def reset() -> None:
    """Forget every built adapter and the settings (tests, after changing the environment)."""
    get_settings.cache_clear()
    for built in _built:
        built.cache_clear()

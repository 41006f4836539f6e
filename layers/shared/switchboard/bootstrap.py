"""Composition root: the only place that builds real adapters, once per container, on first use.

Handlers call these functions; tests reset them with `reset()` after changing the environment.
`AWS_ENDPOINT_URL` (read by boto3 itself) points every client at the local stack or moto.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import boto3

from switchboard.adapters.dynamo.audit import AuditLog
from switchboard.adapters.dynamo.catalog import CatalogRepository
from switchboard.adapters.secrets import SecretStore
from switchboard.domain.events import EffectHandler
from switchboard.services.catalog import CatalogService
from switchboard.settings import get_settings

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


@component
def event_handlers() -> dict[str, list[EffectHandler]]:
    """The effects of each provider webhook event, in order; the ingest runs them all."""
    handlers: dict[str, list[EffectHandler]] = {
        name: [] for name in ("message", "receipt", "connection", "call", "call_settings")
    }
    return handlers


def reset() -> None:
    """Forget every built adapter and the settings (tests, after changing the environment)."""
    get_settings.cache_clear()
    for built in _built:
        built.cache_clear()

"""Builds one pooled client per provider kind and the resolver of an instance's target."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import secrets

if TYPE_CHECKING:
    from switchboard.catalog.targets import TargetResolver
    from switchboard.catalog.webhook_setup import WebhookSetup
    from switchboard.providers.base import ProviderClient
    from switchboard.providers.kinds import ProviderKind


@component
def provider_client(kind: ProviderKind) -> ProviderClient:
    """One pooled client per provider kind, shared by every target of that kind.

    Imported here so that functions that never reach a provider do not load httpx at cold start.
    """
    from switchboard.providers.registry import provider_client_for

    settings = get_settings()
    return provider_client_for(
        kind,
        local_mode=settings.local_mode,
        read_timeout=settings.provider_timeout_seconds,
        # The Graph API is the one provider API with its version in its paths; the other kinds ignore it.
        api_version=settings.meta_graph_version,
    )


@component
def targets() -> TargetResolver:
    from switchboard.catalog.targets import TargetResolver

    return TargetResolver(catalog_repository(), secrets(), provider_client)


@component
def webhook_setup() -> WebhookSetup:
    from switchboard.catalog.webhook_setup import WebhookSetup

    return WebhookSetup(targets(), secrets(), get_settings().public_base_url)

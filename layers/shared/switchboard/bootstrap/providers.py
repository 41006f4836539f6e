"""Builds one pooled client per provider kind and the resolver of an instance's target."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import secrets

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance
    from switchboard.catalog.pairing import PairingService
    from switchboard.catalog.ports import TestMessages
    from switchboard.catalog.targets import TargetResolver
    from switchboard.catalog.webhook_setup import WebhookSetup
    from switchboard.core.identity import Principal
    from switchboard.providers.base import ProviderClient
    from switchboard.providers.kinds import ProviderKind


@component
def provider_client(c: Components) -> Callable[[ProviderKind], ProviderClient]:
    """One pooled client per provider kind, shared by every target of that kind.

    Imported on first use so that functions that never reach a provider do not load httpx at
    cold start.
    """

    @cache
    def client_for(kind: ProviderKind) -> ProviderClient:
        from switchboard.providers.registry import provider_client_for

        settings = c.settings
        return provider_client_for(
            kind,
            local_mode=settings.local_mode,
            read_timeout=settings.provider_timeout_seconds,
            # The Graph API is the one provider API with its version in its paths; the other kinds ignore it.
            api_version=settings.meta_graph_version,
        )

    return client_for


@component
def targets(c: Components) -> TargetResolver:
    from switchboard.catalog.targets import TargetResolver

    return TargetResolver(catalog_repository(c), secrets(c), provider_client(c))


@component
def webhook_setup(c: Components) -> WebhookSetup:
    from switchboard.catalog.webhook_setup import WebhookSetup

    return WebhookSetup(targets(c), secrets(c), c.settings.public_base_url)


@component
def pairing_service(c: Components) -> PairingService:
    from switchboard.bootstrap.audit import audit_log
    from switchboard.catalog.pairing import PairingService

    def status_read(instance: Instance) -> Instance:
        from switchboard.bootstrap.connection_state import status_reads

        return status_reads(c).after_save(instance)

    def test_messages() -> TestMessages:
        # Built on the first test message: only then does the catalog function reach the send queue.
        from switchboard.bootstrap.messages import pinned_messages

        return pinned_messages(c)

    return PairingService(
        catalog_repository(c),
        targets(c),
        webhook_setup(c),
        audit_log(c),
        status_read=status_read,
        test_messages=_Deferred(test_messages),
    )


class _Deferred:
    """`TestMessages` built on its first use."""

    def __init__(self, build: Callable[[], TestMessages]) -> None:
        self._build = build

    def submit(self, principal: Principal, instance: str, to: str, text: str) -> str:
        return self._build().submit(principal, instance, to, text)

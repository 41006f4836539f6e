"""How to reach one of our instances at its provider: the client for its kind and a target with its secrets.

Shared by the call limit, calls and the outbox. Tokens come from the secret store (cached per
container); the target holds them and must never be logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from switchboard.catalog.domain import Instance, Provider
from switchboard.core.errors import NotFound
from switchboard.core.ports import Secrets
from switchboard.core.secrets import instance_token_name, provider_secret_name
from switchboard.providers.base import ProviderClient, ProviderTarget
from switchboard.providers.kinds import ProviderKind


class Providers(Protocol):
    def find_provider(self, provider_id: str) -> Provider | None: ...


class TargetResolver:
    def __init__(
        self, providers: Providers, secrets: Secrets, client_for: Callable[[ProviderKind], ProviderClient]
    ) -> None:
        self._providers = providers
        self._secrets = secrets
        self._client_for = client_for

    def provider_of(self, instance: Instance) -> Provider:
        provider = self._providers.find_provider(instance.provider_id)
        if provider is None or provider.tenant != instance.tenant:
            raise NotFound("the instance's provider server is not registered")
        return provider

    def target_for(self, instance: Instance) -> tuple[ProviderClient, ProviderTarget]:
        """The client for the instance's provider kind and its target (instance token, admin token if set)."""
        provider = self.provider_of(instance)
        admin_token = None
        if provider.admin_token_hint:
            admin_token = self._secrets.get(provider_secret_name(self._secrets, provider.id, "admin-token"))
        target = ProviderTarget(
            kind=provider.kind,
            base_url=provider.base_url,
            provider_instance_id=instance.provider_instance_id,
            instance_token=self._secrets.get(instance_token_name(self._secrets, instance.tenant, instance.name)),
            admin_token=admin_token,
            webhook_scheme=provider.webhook_scheme,
        )
        return self._client_for(provider.kind), target

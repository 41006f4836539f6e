"""What a container keeps of each provider's catalog between webhooks, valid while its stamp is.

A webhook is checked against its provider (kind, tenant) and the provider's secrets, then bound
to one of our instances by the provider's instance id or a Meta phone number id. A container
keeps all of it per provider with the revision of the provider's stamp it was read at (a
`ProviderView`), and the transaction storing an event checks that the stamp still holds that
revision (`guard`, refused with ProviderChanged). Every catalog write that could change the
answer bumps the stamp, so a view is never acted on after a change: the check fails, nothing is
stored, and the ingest reads the view again (secrets included) and authenticates and binds the delivery again.

Only what exists is kept: an unknown binding is looked up again on every delivery, so an
instance created later is found at once (with the stamp, so that a kept view never answers
404 where a fresh one would answer 401). Secrets are read from the store when a view first
needs them, never from an older cache: a secret is written before the stamp that announces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from switchboard.catalog.domain import Instance, Provider
from switchboard.core.ports import Secrets

BindingField = str  # `InboundEvent.binding_field`: "provider_instance_id", "meta_phone_id" or "waba_id"

if TYPE_CHECKING:
    from switchboard.core.store import UnitOfWork


class ProviderCatalog(Protocol):
    def provider_and_rev(self, provider_id: str) -> tuple[Provider | None, int]: ...
    def check_provider_unchanged(self, uow: UnitOfWork, provider_id: str, rev: int) -> None: ...
    def settle_webhook_scheme(self, provider_id: str, scheme: str) -> bool: ...
    def instance_for_binding(self, provider_id: str, provider_instance_id: str) -> Instance | None: ...
    def instance_for_meta_phone(self, provider_id: str, meta_phone_id: str) -> Instance | None: ...
    def instance_for_waba(self, provider_id: str, waba_id: str) -> Instance | None: ...
    def find_instance(self, key: str) -> Instance | None: ...


@dataclass
class ProviderView:
    provider: Provider
    rev: int  # the stamp's revision everything here was read at (or after)
    instances: dict[tuple[BindingField, str], Instance] = field(default_factory=dict)
    secrets: dict[str, str | None] = field(default_factory=dict)


class ProviderViews:
    def __init__(self, catalog: ProviderCatalog, secrets: Secrets) -> None:
        self._catalog = catalog
        self._secrets = secrets
        self._views: dict[str, ProviderView] = {}

    @property
    def catalog(self) -> ProviderCatalog:
        return self._catalog

    def cached(self, provider_id: str) -> ProviderView | None:
        return self._views.get(provider_id)

    def load(self, provider_id: str) -> ProviderView | None:
        """Read the provider and its stamp again (one request); None when there is no such provider."""
        self._views.pop(provider_id, None)
        provider, rev = self._catalog.provider_and_rev(provider_id)
        if provider is None:
            return None
        view = self._views[provider_id] = ProviderView(provider, rev)
        return view

    def current(self, view: ProviderView) -> bool:
        """Whether the view still holds (one read of the stamp; the view is kept either way)."""
        provider, rev = self._catalog.provider_and_rev(view.provider.id)
        return provider is not None and rev == view.rev

    def instance(self, view: ProviderView, binding_field: BindingField, binding: str) -> Instance | None:
        """The instance a binding names. Read after the view's stamp, so never older than it."""
        found = view.instances.get((binding_field, binding))
        if found is None:
            provider_id = view.provider.id
            if binding_field == "meta_phone_id":
                found = self._catalog.instance_for_meta_phone(provider_id, binding)
            elif binding_field == "waba_id":
                found = self._catalog.instance_for_waba(provider_id, binding)
            else:
                found = self._catalog.instance_for_binding(provider_id, binding)
            if found is not None:
                view.instances[(binding_field, binding)] = found
        return found

    def secret(self, view: ProviderView, name: str) -> str | None:
        """A secret as the secret store holds it now, read once per view (None when absent)."""
        if name not in view.secrets:
            try:
                view.secrets[name] = self._secrets.get(name, fresh=True)
            except Exception:  # an absent parameter: nothing to check against
                view.secrets[name] = None
        return view.secrets[name]

    def guard(self, uow: UnitOfWork, view: ProviderView) -> None:
        """Join `uow` with a check that holds only while the view is current (ProviderChanged)."""
        self._catalog.check_provider_unchanged(uow, view.provider.id, view.rev)

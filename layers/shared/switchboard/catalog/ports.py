"""The catalog as other capabilities read it, how they reach the provider behind one of its
instances, and the hook it calls when a grant changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from switchboard.catalog.domain import Instance

if TYPE_CHECKING:
    from switchboard.core.identity import Principal
    from switchboard.core.store import UnitOfWork
    from switchboard.providers.base import ProviderClient, ProviderTarget


class Instances(Protocol):
    def find_instance(self, key: str) -> Instance | None: ...
    def get_instance(self, tenant: str, name: str) -> Instance: ...


class Targets(Protocol):
    """The client for an instance's provider kind and its target (catalog/targets.py)."""

    def target_for(self, instance: Instance) -> tuple[ProviderClient, ProviderTarget]: ...


class GrantChanges(Protocol):
    def grant_changed(self, tenant: str, principal: str) -> None:
        """A principal's grant was revoked or changed (committed): whatever it holds on the strength
        of the old grant (live connections) is checked again. Never raises: the change stands."""
        ...


class KeyAttachment(Protocol):
    """What another capability keeps in an API key's name (the key's number pool), deleted in the
    transaction that revokes the key."""

    def record_key_deleted(self, uow: UnitOfWork, api_key_id: str) -> None: ...


class TestMessages(Protocol):
    """Messages pinned to one instance, sent the way every message is (the send worker's
    `messages.pinned.PinnedMessages`, provided by the composition root: messages sit above the
    catalog)."""

    def submit(self, principal: Principal, instance: str, to: str, text: str) -> str:
        """Accept and queue `text` to `to` through `instance` alone; the message's id."""
        ...

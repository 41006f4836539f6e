"""The provider events an instance's provider sent and the ingest acknowledged without applying
them (a group message, a message type or event switchboard does not map, our own echo...), with
the reason: listed per instance for as long as their records live (8 days)."""

from __future__ import annotations

from typing import Protocol

from switchboard.catalog.domain import Instance
from switchboard.core.identity import Principal
from switchboard.webhooks.events import IgnoredPage

MAX_IGNORED_PAGE = 100


class IgnoredEventStore(Protocol):
    def ignored(self, instance_key: str, limit: int, cursor: str | None = None) -> IgnoredPage: ...


class Instances(Protocol):
    def get_instance(self, tenant: str, name: str) -> Instance:
        """Raises NotFound (another tenant's instance too)."""
        ...


class IgnoredEvents:
    def __init__(self, instances: Instances, store: IgnoredEventStore) -> None:
        self._instances = instances
        self._store = store

    def of_instance(self, principal: Principal, name: str, limit: int, cursor: str | None = None) -> IgnoredPage:
        """The instance's ignored events, newest first. Raises NotFound."""
        instance = self._instances.get_instance(principal.tenant, name)
        return self._store.ignored(instance.key, limit, cursor)

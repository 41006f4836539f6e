"""How a capability reaches the provider behind one of its instances."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance
    from switchboard.providers.base import ProviderClient, ProviderTarget


class Targets(Protocol):
    def target_for(self, instance: Instance) -> tuple[ProviderClient, ProviderTarget]: ...

"""How a capability reaches the provider behind one of its instances."""

from __future__ import annotations

from typing import Protocol

from switchboard.catalog.domain import Instance
from switchboard.providers.base import ProviderClient, ProviderTarget


class Targets(Protocol):
    def target_for(self, instance: Instance) -> tuple[ProviderClient, ProviderTarget]: ...

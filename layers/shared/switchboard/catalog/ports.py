"""The catalog as other capabilities read it, and the hook it calls when a grant changes."""

from __future__ import annotations

from typing import Protocol

from switchboard.catalog.domain import Instance


class Instances(Protocol):
    def find_instance(self, key: str) -> Instance | None: ...
    def get_instance(self, tenant: str, name: str) -> Instance: ...


class GrantChanges(Protocol):
    def grant_changed(self, tenant: str, principal: str) -> None:
        """A principal's grant was revoked or changed (committed): whatever it holds on the strength
        of the old grant (live connections) is checked again. Never raises: the change stands."""
        ...

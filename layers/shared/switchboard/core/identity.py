"""Who calls: the scopes an API key grants, the principal the authorizer established, and the
platform's own tenant. Every capability reads these; the catalog stores the keys that grant them."""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict

from switchboard.core.model import Model

PLATFORM_TENANT = "_platform"


class Scope(StrEnum):
    PLATFORM = "platform"
    ADMIN = "admin"
    AGENT = "agent"
    SEND = "send"


def key_principal(key_id: str) -> str:
    """The principal id of an API key. A principal id names whoever holds a grant, of any kind
    (`key:<key id>` today; a person signed in through the user pool would be `user:<sub>`), so
    what reacts to a revoked grant (live connections) is not tied to API keys."""
    return f"key:{key_id}"


def key_of_principal(principal: str) -> str | None:
    """The key id of an API key's principal id; None for a principal of another kind."""
    kind, _, identifier = principal.partition(":")
    return identifier if kind == "key" and identifier else None


class Principal(Model):
    """Who is calling, as the authorizer established it."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    key_id: str
    scopes: frozenset[Scope]
    attendant_id: str | None = None

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    @property
    def principal_id(self) -> str:
        return key_principal(self.key_id)

"""Who calls: the scopes an API key or a person's role grants, the principal the authorizer
established, and the platform's own tenant. Every capability reads these; the catalog stores the
keys that grant them, the people directory the persons."""

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
    (`key:<key id>`, or `user:<sub>` for a person signed in through the user pool), so what
    reacts to a revoked grant (live connections) is not tied to API keys."""
    return f"key:{key_id}"


def user_principal(user: str) -> str:
    """The principal id of a person of the user pool (`user` is the pool's `sub`)."""
    return f"user:{user}"


def user_of_principal(principal: str) -> str | None:
    """The `sub` of a person's principal id; None for a principal of another kind."""
    kind, _, identifier = principal.partition(":")
    return identifier if kind == "user" and identifier else None


def key_of_principal(principal: str) -> str | None:
    """The key id of an API key's principal id; None for a principal of another kind."""
    kind, _, identifier = principal.partition(":")
    return identifier if kind == "key" and identifier else None


class Principal(Model):
    """Who is calling, as the authorizer established it.

    `key_id` is the grant the request is counted and recorded under: an API key's id, or for a
    person the principal id `user:<sub>` (their requests have their own rate, and what they do
    is recorded under them, never under a key). `user` and `email` name the person; an attendant
    signed in as a person is its `sub`."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    key_id: str
    scopes: frozenset[Scope]
    attendant_id: str | None = None
    user: str | None = None
    email: str | None = None

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    @property
    def principal_id(self) -> str:
        return user_principal(self.user) if self.user else key_principal(self.key_id)

    @property
    def actor(self) -> str:
        """Who did it, as the audit log names it: the person's email (or sub), else the key."""
        if self.user:
            return self.email or user_principal(self.user)
        return self.key_id

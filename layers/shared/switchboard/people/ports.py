"""What the users service needs from elsewhere: the user pool, the directory, the audit log and
whatever holds a grant open (live connections)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from switchboard.people.domain import Role, User


class UserPool(Protocol):
    """The identity provider (Cognito): passwords, groups, sign-in sessions."""

    def create_user(self, email: str, temporary_password: str | None) -> str:
        """Create the person (their email is their username) and return their `sub`. Without a
        password the pool emails its invitation. Raises AlreadyExists for a known email."""
        ...

    def set_group(self, user: str, tenant: str, role: Role, previous: Role | None) -> None: ...
    def set_enabled(self, user: str, enabled: bool) -> None:
        """Disabling also ends their sessions (refresh tokens), so no new access token comes."""
        ...

    def delete_user(self, user: str) -> None: ...
    def sign_out(self, email: str) -> None:
        """End every session of theirs (refresh tokens): no new access token comes from them."""
        ...


class Directory(Protocol):
    def add_user(self, user: User) -> None:
        """Raises AlreadyExists when the person is already in the directory."""
        ...

    def get_user(self, tenant: str, user: str, *, consistent: bool = False) -> User | None: ...
    def get_users(self, tenant: str, users: Collection[str]) -> dict[str, User]: ...
    def list_users(self, tenant: str) -> list[User]: ...
    def record_sign_out(self, tenant: str, user: str, at: datetime) -> None:
        """Refuse their tokens issued until `at`; raises NotFound."""
        ...

    def save_user(self, user: User, expected: User) -> None:
        """Replace `expected` with `user`; raises Conflict when it changed in between."""
        ...


class GrantChanges(Protocol):
    def grant_changed(self, tenant: str, principal: str) -> None:
        """A principal's grant was revoked or changed: what it holds on the old grant (live
        connections) is checked again. Never raises."""
        ...


class AuthenticatorApps(Protocol):
    """A person's authenticator app at the user pool, through their own access token."""

    def enabled(self, access_token: str) -> bool:
        """Whether the pool asks them for an app's code after their password."""
        ...

    def new_secret(self, access_token: str) -> str:
        """A new pending secret (base32) for their app."""
        ...

    def verify(self, access_token: str, code: str) -> None:
        """Raises CodeNotConfirmed when `code` is not the pending secret's current one."""
        ...

    def set_enabled(self, access_token: str, enabled: bool) -> None:
        """Make the app their sign-in step (a verified secret), or stop asking for it."""
        ...


class FactorProof(Protocol):
    """Proof that whoever holds a person's access token also knows their password and holds their
    authenticator app: a sign-in for them at the user pool, whose tokens are dropped unread."""

    def prove(self, email: str, password: str, code: str | None) -> bool:
        """Sign `email` in with `password`, then, when the pool asks for their authenticator app's
        code, answer it with `code`. Returns whether the pool asked (their app is on). Raises
        ProofRefused (`field`: `password` or `code`, also for a code the pool asked for and none
        was given) and RateLimited once the pool locks their sign-in after repeated failures."""
        ...

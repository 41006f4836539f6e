"""What the users routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.people.authenticator import AuthenticatorService
    from switchboard.people.service import UsersService
    from switchboard.people.signin import PoolSignIn


def users_service() -> UsersService:
    """The users of a tenant (the user pool and the people directory)."""
    raise NotProvided(users_service)


def pool_sign_in() -> PoolSignIn:
    """The console's sign-in calls of the user pool."""
    raise NotProvided(pool_sign_in)


def authenticator_service() -> AuthenticatorService:
    """The signed-in person's authenticator app at the user pool."""
    raise NotProvided(authenticator_service)

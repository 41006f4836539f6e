"""Builds the people directory, the user pool adapter, the token check and the users service once
per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import table

if TYPE_CHECKING:
    from switchboard.people.authentication import UserAuthenticator
    from switchboard.people.authenticator import AuthenticatorService
    from switchboard.people.cognito import CognitoUserPool
    from switchboard.people.dynamo import PeopleDirectory
    from switchboard.people.ports import GrantChanges
    from switchboard.people.service import UsersService
    from switchboard.people.signin import PoolSignIn


def user_pool_configured(c: Components) -> bool:
    return bool(c.settings.user_pool_id and c.settings.user_pool_client_id)


def _issuer(c: Components) -> str:
    settings = c.settings
    if settings.user_pool_issuer:
        return settings.user_pool_issuer
    if not settings.user_pool_id:
        raise RuntimeError("USER_POOL_ID is not configured")
    region = settings.user_pool_id.partition("_")[0] or settings.aws_region
    return f"https://cognito-idp.{region}.amazonaws.com/{settings.user_pool_id}"


@component
def people_directory(c: Components) -> PeopleDirectory:
    from switchboard.people.dynamo import PeopleDirectory

    return PeopleDirectory(table(c))


@component
def user_pool(c: Components) -> CognitoUserPool:
    from switchboard.people.cognito import CognitoUserPool

    if not c.settings.user_pool_id:
        raise RuntimeError("USER_POOL_ID is not configured")
    return CognitoUserPool(c.client("cognito-idp"), c.settings.user_pool_id)


@component
def user_authenticator(c: Components) -> UserAuthenticator:
    """Access tokens of the user pool, checked against its JWKS and the people directory."""
    from switchboard.people.authentication import UserAuthenticator
    from switchboard.people.tokens import Jwks, TokenVerifier

    issuer = _issuer(c)
    jwks = Jwks(c.settings.user_pool_jwks_url or f"{issuer}/.well-known/jwks.json")
    verifier = TokenVerifier(issuer, [c.settings.user_pool_client_id or ""], jwks)
    return UserAuthenticator(verifier, people_directory(c))


@component
def users_service(c: Components) -> UsersService:
    from switchboard.people.service import UsersService

    return UsersService(
        user_pool(c), people_directory(c), audit_log(c), _live_access(c) if c.settings.live_management_url else None
    )


def _live_access(c: Components) -> GrantChanges:
    """A person's live connections are closed once they are disabled or their role changes."""
    from switchboard.bootstrap.live import live_access

    return live_access(c)


@component
def pool_sign_in(c: Components) -> PoolSignIn:
    from switchboard.people.signin import PoolSignIn

    if not c.settings.user_pool_client_id:
        raise RuntimeError("USER_POOL_CLIENT_ID is not configured")
    return PoolSignIn(c.client("cognito-idp"), c.settings.user_pool_client_id)


@component
def authenticator_service(c: Components) -> AuthenticatorService:
    """A person's authenticator app: the pool's calls that their own access token authorizes, each
    change after a sign-in of theirs through the console's app client proves them."""
    from switchboard.people.authenticator import AuthenticatorService
    from switchboard.people.cognito import CognitoAuthenticatorApps
    from switchboard.people.signin import PoolProof

    if not c.settings.user_pool_client_id:
        raise RuntimeError("USER_POOL_CLIENT_ID is not configured")
    client = c.client("cognito-idp")
    proof = PoolProof(client, c.settings.user_pool_client_id)
    return AuthenticatorService(CognitoAuthenticatorApps(client), proof, audit_log(c))

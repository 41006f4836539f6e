"""The users of a tenant: people who sign in to the console (admins and attendants)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import bearer_credential, requires
from switchboard.core.api.errors import NO_API_KEY, documented
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import OwnerTag
from switchboard.people import deps
from switchboard.people.domain import Role
from switchboard.people.schemas import (
    AnswerCode,
    AuthenticatorSecretView,
    AuthenticatorView,
    ConfirmAuthenticator,
    InvitedUserView,
    InviteUser,
    RefreshSession,
    SessionView,
    SetNewPassword,
    SignIn,
    StartAuthenticator,
    TurnOffAuthenticator,
    UpdateUser,
    UsersView,
    UserView,
)

if TYPE_CHECKING:
    from switchboard.people.authenticator import AuthenticatorService
    from switchboard.people.service import UsersService
    from switchboard.people.signin import PoolSignIn
else:
    AuthenticatorService = Any
    UsersService = Any
    PoolSignIn = Any

router = APIGatewayHttpRouter()
Users = Annotated[UsersService, Depends(deps.users_service)]
Authenticators = Annotated[AuthenticatorService, Depends(deps.authenticator_service)]
SignInCalls = Annotated[PoolSignIn, Depends(deps.pool_sign_in)]
PlatformOrAdmin = Annotated[Principal, Depends(requires(router, Scope.PLATFORM, Scope.ADMIN))]
UserId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9-]+$")]
Tenant = Annotated[OwnerTag | None, Query(alias="ownerTag")]


@router.get("/api/users", tags=["users"], responses=documented(401, 403, 404, 422))
def list_users(users: Users, principal: PlatformOrAdmin, owner_tag: Tenant = None) -> UsersView:
    """The tenant's people, by email. An admin lists its own tenant's; the platform names one."""
    return UsersView(users=[UserView.of(user) for user in users.list(principal, owner_tag)])


@router.post("/api/users", status_code=201, tags=["users"], responses=documented(400, 401, 403, 404, 409, 422))
def invite_user(users: Users, principal: PlatformOrAdmin, body: InviteUser) -> InvitedUserView:
    """Invite a person: created in the user pool in the tenant's group of the role, signing in by
    email with a temporary password (given here, or emailed by the pool) they replace at once."""
    invitation = users.invite(principal, body.email, Role(body.role), body.temporary_password, body.owner_tag)
    return InvitedUserView.of(invitation)


@router.patch("/api/users/<user_id>", tags=["users"], responses=documented(400, 401, 403, 404, 409, 422))
def update_user(
    users: Users, principal: PlatformOrAdmin, user_id: UserId, body: UpdateUser, owner_tag: Tenant = None
) -> UserView:
    """Change a person's role or disable (enable) them: refused at once on the API and on live
    updates, whatever tokens they hold. An admin cannot disable or demote themselves."""
    return UserView.of(
        users.update(
            principal, user_id, role=Role(body.role) if body.role else None, enabled=body.enabled, owner_tag=owner_tag
        )
    )


Person = Annotated[Principal, Depends(requires(router, Scope.ADMIN, Scope.AGENT))]


@router.post("/api/sign-out", status_code=204, tags=["users"], responses=documented(400, 401, 403))
def sign_out(users: Users, principal: Person) -> Response[None]:
    """The signed-in person signs out: every token of theirs issued until now is refused at once
    and their refresh tokens end, in every tab and on every device. 400 `not_a_person` for an API
    key (revoke a key instead)."""
    users.sign_out(principal)
    return Response(status_code=204, content_type=content_types.APPLICATION_JSON)


# --- the signed-in person's authenticator app ---------------------------------------------------
# The pool's calls about a person take their access token: the one this request came with.

AUTHENTICATOR_ERRORS = documented(400, 401, 403, 422, 429)


def access_token() -> str:
    return bearer_credential(router)


AccessToken = Annotated[str, Depends(access_token)]


@router.get("/api/me/authenticator", tags=["users"], responses=AUTHENTICATOR_ERRORS)
def get_authenticator(apps: Authenticators, principal: Person, token: AccessToken) -> AuthenticatorView:
    """Whether the signed-in person signs in with their authenticator app's code after the
    password. 400 `not_a_person` for an API key."""
    return AuthenticatorView(enabled=apps.enabled(principal, token))


@router.post("/api/me/authenticator", tags=["users"], responses=AUTHENTICATOR_ERRORS)
def start_authenticator(
    apps: Authenticators, principal: Person, token: AccessToken, body: StartAuthenticator
) -> AuthenticatorSecretView:
    """A new secret for an authenticator app (TOTP): as an `otpauth://` URI and as text. The
    person's password proves them first, and while an app is on its current code too (replacing
    it): 403 `proof_refused` (`field`: `password` or `code`), nothing changed; 429 once the user
    pool locks their sign-in after repeated failures. Sign-in does not change until the new app's
    first code confirms it (`/api/me/authenticator/confirm`)."""
    made = apps.start(principal, token, body.password, body.code)
    return AuthenticatorSecretView(secret=made.secret, uri=made.uri)


@router.post("/api/me/authenticator/confirm", tags=["users"], responses=AUTHENTICATOR_ERRORS)
def confirm_authenticator(
    apps: Authenticators, principal: Person, token: AccessToken, body: ConfirmAuthenticator
) -> AuthenticatorView:
    """The new app's current code: from now on signing in asks for the app's code after the
    password. 400 `mfa_code_refused` (`field`: `code`) for another code."""
    apps.confirm(principal, token, body.code)
    return AuthenticatorView(enabled=True)


@router.delete("/api/me/authenticator", tags=["users"], responses=AUTHENTICATOR_ERRORS)
def turn_off_authenticator(
    apps: Authenticators, principal: Person, token: AccessToken, body: TurnOffAuthenticator
) -> AuthenticatorView:
    """Sign in with the password alone again, once the person's password and their app's current
    code prove them: 403 `proof_refused` (`field`: `password` or `code`), nothing changed; 429
    once the user pool locks their sign-in after repeated failures."""
    apps.turn_off(principal, token, body.password, body.code)
    return AuthenticatorView(enabled=False)


# --- signing in (no key: these are how a person gets their token) ----------------------------

SIGN_IN_ERRORS = documented(400, 401, 422, 429)


@router.post("/api/sign-in", tags=["users"], responses=SIGN_IN_ERRORS, openapi_extensions=NO_API_KEY)
def sign_in(calls: SignInCalls, body: SignIn) -> SessionView:
    """A person's email and password for their tokens, or the `new_password_required` challenge
    of an invited person (answer it at /api/sign-in/new-password). 401 `sign_in_refused` for a
    wrong password, an unknown email or a disabled person alike."""
    return SessionView.of(calls.sign_in(body.email, body.password))


@router.post("/api/sign-in/new-password", tags=["users"], responses=SIGN_IN_ERRORS, openapi_extensions=NO_API_KEY)
def set_new_password(calls: SignInCalls, body: SetNewPassword) -> SessionView:
    """An invited person's own password, replacing the temporary one; answers their tokens.
    422 `password_refused` (`field`: `newPassword`) when the pool's policy refuses it."""
    return SessionView.of(calls.set_new_password(body.email, body.session, body.new_password))


@router.post("/api/sign-in/mfa", tags=["users"], responses=SIGN_IN_ERRORS, openapi_extensions=NO_API_KEY)
def answer_mfa_code(calls: SignInCalls, body: AnswerCode) -> SessionView:
    """The `software_token_mfa` challenge answered with the authenticator app's code; answers the
    tokens. 401 `mfa_code_refused` (`field`: `code`) for a code that is not the current one,
    `sign_in_refused` once the challenge's session has expired (start again)."""
    return SessionView.of(calls.answer_code(body.email, body.session, body.code))


@router.post("/api/sign-in/refresh", tags=["users"], responses=SIGN_IN_ERRORS, openapi_extensions=NO_API_KEY)
def refresh_session(calls: SignInCalls, body: RefreshSession) -> SessionView:
    """A new access token for a tab's session (the refresh token is refused once the person was
    disabled: their sessions end with it)."""
    return SessionView.of(calls.refresh(body.refresh_token))

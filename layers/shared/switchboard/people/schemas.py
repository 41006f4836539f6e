"""The users API's bodies (camelCase on the wire, strict)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from switchboard.core.wire import Body, OwnerTag, View
from switchboard.people.domain import Invitation, Role, User
from switchboard.people.signin import Session

Email = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        to_lower=True,
        max_length=254,
        pattern=r"^[^@\s\x00-\x1f]+@[^@\s\x00-\x1f]+\.[^@\s\x00-\x1f]+$",
    ),
]
# Cognito's own policy (template.yaml) is checked again by the pool; this only bounds the size.
TemporaryPassword = Annotated[str, StringConstraints(min_length=8, max_length=256)]


RoleName = Literal["admin", "attendant"]


class InviteUser(Body):
    email: Email
    role: RoleName
    temporary_password: TemporaryPassword | None = Field(
        default=None,
        description="Set it and hand it over yourself (the person sets their own at first sign-in); "
        "leave it out and the user pool emails the invitation.",
    )
    owner_tag: OwnerTag | None = Field(default=None, description="The tenant, for a platform key only.")


Password = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class SignIn(Body):
    email: Email
    password: Password


class SetNewPassword(Body):
    email: Email
    session: Annotated[str, StringConstraints(min_length=20, max_length=2048)]  # the pool's bounds
    new_password: Password


class AnswerCode(Body):
    email: Email
    session: Annotated[str, StringConstraints(min_length=20, max_length=2048)]
    code: Annotated[str, StringConstraints(pattern=r"^[0-9]{6}$")] = Field(
        description="The six digits the person's authenticator app shows now."
    )


class RefreshSession(Body):
    refresh_token: Annotated[str, StringConstraints(min_length=1, max_length=8192)]


class SessionView(View):
    access_token: str | None = Field(default=None, description="The bearer token of every API call (one hour).")
    refresh_token: str | None = Field(
        default=None, description="Trade it at /api/sign-in/refresh for a new access token."
    )
    expires_in: int | None = Field(default=None, description="Seconds the access token is valid.")
    challenge: str | None = Field(
        default=None,
        description="`new_password_required`: an invited person sets their own password first; "
        "`software_token_mfa`: a person who turned on an authenticator app types its code "
        "(`/api/sign-in/mfa`).",
    )
    session: str | None = Field(default=None, description="Answer the challenge with it (a few minutes).")

    @classmethod
    def of(cls, session: Session) -> SessionView:
        return cls.model_validate(session.model_dump())


AppCode = Annotated[str, StringConstraints(pattern=r"^[0-9]{6}$")]


class StartAuthenticator(Body):
    password: Password = Field(description="The person's current password: a token alone changes nothing.")
    code: AppCode | None = Field(
        default=None,
        description="While an authenticator app is on: the six digits it shows now (replacing it "
        "needs the old app). Leave it out when none is on.",
    )


class TurnOffAuthenticator(Body):
    password: Password = Field(description="The person's current password: a token alone changes nothing.")
    code: AppCode = Field(description="The six digits the authenticator app being turned off shows now.")


class ConfirmAuthenticator(Body):
    code: Annotated[str, StringConstraints(pattern=r"^[0-9]{6}$")] = Field(
        description="The six digits the new authenticator app shows now."
    )


class AuthenticatorView(View):
    enabled: bool = Field(description="Whether signing in asks for the authenticator app's code after the password.")


class AuthenticatorSecretView(View):
    secret: str = Field(description="The app's secret (base32), to type into an app by hand. Shown only here.")
    uri: str = Field(description="The same secret as an `otpauth://totp/...` URI: an app opens it, or a QR code of it.")


class UpdateUser(Body):
    role: RoleName | None = None
    enabled: bool | None = Field(default=None, description="false: refused at once, on the API and live updates.")


class UserView(View):
    id: str = Field(description="The user pool's `sub`: the attendant id of this person's calls.")
    tenant: str
    email: str
    role: Role
    enabled: bool
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, user: User) -> UserView:
        return cls(
            id=user.id,
            tenant=user.tenant,
            email=user.email,
            role=user.role,
            enabled=user.enabled,
            created_at=user.created_at,
            updated_at=user.updated_at,
        )


class InvitedUserView(View):
    user: UserView
    invitation: str = Field(description="`password`: the temporary password given; `email`: the pool emailed it.")

    @classmethod
    def of(cls, invitation: Invitation) -> InvitedUserView:
        return cls(
            user=UserView.of(invitation.user), invitation="password" if invitation.temporary_password else "email"
        )


class UsersView(View):
    users: list[UserView]

"""Signing a person in: the console's email and password traded for the pool's tokens, the
invited person's first password set, and a tab's session refreshed.

These are the user pool's public (unauthenticated) calls of the console's app client, relayed on
the API's own origin: the console page keeps its `connect-src 'self'` policy and needs no CORS,
and the same page works against the local stack's pool. The password passes through once, over
TLS, to the pool; it is never stored, logged or answered.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError, ParamValidationError

from switchboard.core.errors import InvalidInput, RateLimited, Unauthenticated
from switchboard.core.model import Model
from switchboard.core.observability import logger

NEW_PASSWORD_REQUIRED = "new_password_required"  # noqa: S105 - a challenge name, no password
# A person who turned on an authenticator app (TOTP, optional in the pool) types its code next.
SOFTWARE_TOKEN_MFA = "software_token_mfa"  # noqa: S105 - a challenge name, no token


class SignInRefused(Unauthenticated):
    code = "sign_in_refused"


class PasswordRefused(InvalidInput):
    code = "password_refused"


class CodeRefused(Unauthenticated):
    """The authenticator app's code is not the one the pool expects now (mistyped, or too old)."""

    code = "mfa_code_refused"


class Session(Model):
    """The pool's answer: tokens, or the challenge the person must answer first."""

    access_token: str | None = None
    refresh_token: str | None = None
    expires_in: int | None = None
    challenge: str | None = None
    session: str | None = None


class PoolSignIn:
    def __init__(self, client: Any, client_id: str) -> None:
        self._client = client
        self._client_id = client_id

    def sign_in(self, email: str, password: str) -> Session:
        answer = self._call(
            "initiate_auth",
            setting_password=False,
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": email, "PASSWORD": password},
        )
        return _session(answer)

    def set_new_password(self, email: str, session: str, new_password: str) -> Session:
        answer = self._call(
            "respond_to_auth_challenge",
            setting_password=True,
            ChallengeName="NEW_PASSWORD_REQUIRED",
            Session=session,
            ChallengeResponses={"USERNAME": email, "NEW_PASSWORD": new_password},
        )
        return _session(answer)

    def answer_code(self, email: str, session: str, code: str) -> Session:
        """The authenticator app's code for the `software_token_mfa` challenge of `sign_in`."""
        answer = self._call(
            "respond_to_auth_challenge",
            setting_password=False,
            answering_code=True,
            ChallengeName="SOFTWARE_TOKEN_MFA",
            Session=session,
            ChallengeResponses={"USERNAME": email, "SOFTWARE_TOKEN_MFA_CODE": code},
        )
        return _session(answer)

    def refresh(self, refresh_token: str) -> Session:
        answer = self._call(
            "initiate_auth",
            setting_password=False,
            AuthFlow="REFRESH_TOKEN_AUTH",
            AuthParameters={"REFRESH_TOKEN": refresh_token},
        )
        refreshed = _session(answer)
        # The pool answers a refresh without a new refresh token: the one given stays valid.
        return refreshed.model_copy(update={"refresh_token": refreshed.refresh_token or refresh_token})

    def _call(
        self, operation: str, *, setting_password: bool, answering_code: bool = False, **request: Any
    ) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = getattr(self._client, operation)(ClientId=self._client_id, **request)
        except ParamValidationError as error:
            # The pool's own bounds (a session's length, ...), checked before anything is sent.
            raise InvalidInput("the sign-in request is malformed: start again") from error
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            logger.info("sign-in refused", extra={"error": code})
            if setting_password and code in {"InvalidPasswordException", "InvalidParameterException"}:
                raise PasswordRefused(
                    "the new password does not follow the policy (12+ characters, upper and lower case, digits)",
                    field="newPassword",
                ) from error
            if answering_code and code == "CodeMismatchException":
                raise CodeRefused("the code is not the one the app shows now", field="code") from error
            if code in {"TooManyRequestsException", "LimitExceededException"}:
                raise RateLimited("too many attempts: wait a minute", retry_after_seconds=60) from error
            refused = {"NotAuthorizedException", "UserNotFoundException", "PasswordResetRequiredException"}
            if code in refused or code == "InvalidParameterException":
                raise SignInRefused("wrong email or password, or this user is disabled", field="password") from error
            # An unknown or expired challenge session (moto answers ResourceNotFound for it).
            expired = {"CodeMismatchException", "ExpiredCodeException"} | (
                {"ResourceNotFoundException"} if setting_password or answering_code else set()
            )
            if code in expired:
                raise SignInRefused("the sign-in took too long: start again") from error
            raise
        return answer


def _session(answer: dict[str, Any]) -> Session:
    result = answer.get("AuthenticationResult")
    if result:
        return Session(
            access_token=result["AccessToken"],
            refresh_token=result.get("RefreshToken"),
            expires_in=int(result.get("ExpiresIn") or 3600),
        )
    if answer.get("ChallengeName") == "NEW_PASSWORD_REQUIRED":
        return Session(challenge=NEW_PASSWORD_REQUIRED, session=answer.get("Session"))
    if answer.get("ChallengeName") == "SOFTWARE_TOKEN_MFA":
        return Session(challenge=SOFTWARE_TOKEN_MFA, session=answer.get("Session"))
    # SMS codes and other challenges are not enabled in the pool.
    raise SignInRefused(f"this account needs a sign-in step the console does not offer ({answer.get('ChallengeName')})")

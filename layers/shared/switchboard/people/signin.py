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
from switchboard.people.domain import ProofRefused

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
            if _locked(error):
                raise RateLimited(
                    "too many wrong passwords: the user pool refuses this account's sign-in for a while; "
                    "wait a minute or more and try again",
                    retry_after_seconds=60,
                ) from error
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


# Cognito's answer once a person's sign-in is locked after repeated wrong passwords: the same
# NotAuthorizedException as a wrong password, told apart by its message alone.
_LOCKED = "password attempts exceeded"


class PoolProof:
    """A sign-in for a signed-in person, run to prove they know their password (and hold their
    authenticator app) before their two-step verification changes: the console's own flow
    (`USER_PASSWORD_AUTH`, then the `SOFTWARE_TOKEN_MFA` challenge), so the pool's lockout after
    repeated failures applies to these proofs as to sign-in. The tokens it ends with are dropped
    unread: never kept, logged or answered. The password and the code pass through to the pool
    and nowhere else."""

    def __init__(self, client: Any, client_id: str) -> None:
        self._client = client
        self._client_id = client_id

    def prove(self, email: str, password: str, code: str | None) -> bool:
        answer = self._call(
            "initiate_auth",
            field="password",
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": email, "PASSWORD": password},
        )
        if answer.get("AuthenticationResult"):
            return False  # the password alone signs them in: no app is on
        if answer.get("ChallengeName") != "SOFTWARE_TOKEN_MFA":
            raise ProofRefused(
                f"your account needs a sign-in step the console does not offer ({answer.get('ChallengeName')})",
                field="password",
            )
        if code is None:
            raise ProofRefused("your authenticator app is on: type the code it shows now", field="code")
        self._call(
            "respond_to_auth_challenge",
            field="code",
            ChallengeName="SOFTWARE_TOKEN_MFA",
            Session=answer.get("Session"),
            ChallengeResponses={"USERNAME": email, "SOFTWARE_TOKEN_MFA_CODE": code},
        )
        return True

    def _call(self, operation: str, *, field: str, **request: Any) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = getattr(self._client, operation)(ClientId=self._client_id, **request)
        except ParamValidationError as error:
            raise InvalidInput("the password or the code is malformed", field=field) from error
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            logger.info("two-step verification proof refused", extra={"operation": operation, "error": code})
            if code in {"TooManyRequestsException", "LimitExceededException"} or _locked(error):
                raise RateLimited(
                    "too many wrong attempts: the user pool refuses this account's sign-in for a while; "
                    "wait a minute or more and try again",
                    retry_after_seconds=60,
                ) from error
            if field == "code" and code in {"CodeMismatchException", "ExpiredCodeException"}:
                raise ProofRefused("the code is not the one your authenticator app shows now", field="code") from error
            if field == "code" and code in {"NotAuthorizedException", "ResourceNotFoundException"}:
                # The challenge's session ended (a few minutes, or too many codes tried in it).
                raise ProofRefused("the code came too late: type the one the app shows now", field="code") from error
            refused = {"NotAuthorizedException", "UserNotFoundException", "PasswordResetRequiredException"}
            if code in refused:
                raise ProofRefused("the password is not your password", field="password") from error
            raise
        return answer


def _locked(error: ClientError) -> bool:
    details = error.response.get("Error", {})
    return details.get("Code") == "NotAuthorizedException" and _LOCKED in str(details.get("Message") or "").lower()


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

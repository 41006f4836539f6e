"""The user pool, through Cognito's admin API (`cognito-idp`).

The pool signs people in by email (its `UsernameAttributes`): the username Cognito gives a person
is their `sub`, which every call after the creation names them by. A tenant's groups
(`<owner tag>:admin`, `<owner tag>:attendant`) are created on the tenant's first invitation.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from switchboard.core.errors import AlreadyExists, InvalidInput, RateLimited, Unauthenticated
from switchboard.core.observability import logger
from switchboard.people.domain import CodeNotConfirmed, Role, group_name

_INVALID = {"InvalidPasswordException", "InvalidParameterException"}
# The name the pool keeps for a person's authenticator app (one per person).
ISSUER_DEVICE = "authenticator app"


class CognitoUserPool:
    def __init__(self, client: Any, user_pool_id: str) -> None:
        self._client = client
        self._pool = user_pool_id

    def create_user(self, email: str, temporary_password: str | None) -> str:
        request: dict[str, Any] = {
            "UserPoolId": self._pool,
            "Username": email,
            "UserAttributes": [{"Name": "email", "Value": email}, {"Name": "email_verified", "Value": "true"}],
        }
        if temporary_password is None:
            request["DesiredDeliveryMediums"] = ["EMAIL"]
        else:
            # The admin hands the password over themselves: no email from the pool.
            request["TemporaryPassword"] = temporary_password
            request["MessageAction"] = "SUPPRESS"
        try:
            answer = self._client.admin_create_user(**request)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code == "UsernameExistsException":
                raise AlreadyExists("a user with this email already exists") from error
            if code in _INVALID:
                raise InvalidInput(_pool_message(error, "the email or temporary password was refused")) from error
            raise
        user = answer["User"]
        attributes = {attribute["Name"]: attribute["Value"] for attribute in user.get("Attributes", [])}
        return str(attributes.get("sub") or user["Username"])

    def set_group(self, user: str, tenant: str, role: Role, previous: Role | None) -> None:
        group = group_name(tenant, role)
        try:
            self._client.create_group(GroupName=group, UserPoolId=self._pool)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "GroupExistsException":
                raise
        self._client.admin_add_user_to_group(UserPoolId=self._pool, Username=user, GroupName=group)
        if previous is not None and previous != role:
            self._client.admin_remove_user_from_group(
                UserPoolId=self._pool, Username=user, GroupName=group_name(tenant, previous)
            )

    def set_enabled(self, user: str, enabled: bool) -> None:
        if enabled:
            self._client.admin_enable_user(UserPoolId=self._pool, Username=user)
            return
        self._client.admin_disable_user(UserPoolId=self._pool, Username=user)
        try:
            # Ends their refresh tokens: no new access token after the ones already issued, which
            # the authorizer refuses anyway (it reads the directory).
            self._client.admin_user_global_sign_out(UserPoolId=self._pool, Username=user)
        except ClientError as error:
            logger.warning(
                "user sessions not ended", extra={"user": user, "error": error.response.get("Error", {}).get("Code")}
            )

    def sign_out(self, email: str) -> None:
        """Cognito's global sign-out: every refresh token of theirs stops working (the pool has
        `EnableTokenRevocation`); their access tokens are refused by the directory's sign-out time.
        Named by their email, the name they sign in with (the pool takes it for the `sub`; moto
        matches the sessions it keeps by that name alone)."""
        self._client.admin_user_global_sign_out(UserPoolId=self._pool, Username=email)

    def delete_user(self, user: str) -> None:
        try:
            self._client.admin_delete_user(UserPoolId=self._pool, Username=user)
        except ClientError:
            logger.exception("half-created user not deleted", extra={"user": user})


def _pool_message(error: ClientError, fallback: str) -> str:
    """Cognito's own explanation of a refused password (its policy), never a secret."""
    message = str(error.response.get("Error", {}).get("Message") or "")
    return message[:300] if message and "password" in message.lower() else fallback


class CognitoAuthenticatorApps:
    """A person's authenticator app through the pool's calls that take their access token
    (`AssociateSoftwareToken`, `VerifySoftwareToken`, `SetUserMFAPreference`, `GetUser`): the
    token is the authorization, no pool id and no admin permission is involved."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def enabled(self, access_token: str) -> bool:
        answer = self._call("get_user", AccessToken=access_token)
        return "SOFTWARE_TOKEN_MFA" in (answer.get("UserMFASettingList") or [])

    def new_secret(self, access_token: str) -> str:
        return str(self._call("associate_software_token", AccessToken=access_token)["SecretCode"])

    def verify(self, access_token: str, code: str) -> None:
        try:
            answer = self._call(
                "verify_software_token", AccessToken=access_token, UserCode=code, FriendlyDeviceName=ISSUER_DEVICE
            )
        except ClientError as error:
            # Cognito refuses a wrong first code with EnableSoftwareTokenMFAException (moto with
            # CodeMismatchException); without a pending secret there is nothing to verify.
            refused = {"EnableSoftwareTokenMFAException", "CodeMismatchException", "InvalidParameterException"}
            if error.response.get("Error", {}).get("Code") in refused:
                raise CodeNotConfirmed("the code is not the one the app shows now", field="code") from error
            raise
        if answer.get("Status") != "SUCCESS":
            raise CodeNotConfirmed("the code is not the one the app shows now", field="code")

    def set_enabled(self, access_token: str, enabled: bool) -> None:
        self._call(
            "set_user_mfa_preference",
            AccessToken=access_token,
            SoftwareTokenMfaSettings={"Enabled": enabled, "PreferredMfa": enabled},
        )

    def _call(self, operation: str, **request: Any) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = getattr(self._client, operation)(**request)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            logger.info("authenticator app call refused", extra={"operation": operation, "error": code})
            if code == "NotAuthorizedException":
                # The token the authorizer let through was ended at the pool meanwhile.
                raise Unauthenticated("your session has ended: sign in again") from error
            if code in {"TooManyRequestsException", "LimitExceededException"}:
                raise RateLimited("too many attempts: wait a minute", retry_after_seconds=60) from error
            raise
        return answer

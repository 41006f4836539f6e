"""The authorizer's check of a person's access token: the token verified as API Gateway's JWT
authorizer would (`tokens.py`), then the person read from the directory, consistently, on every
request. A JWT stays valid until it expires (an hour), so the directory is what makes a disabled
person, or a changed role, count at the very next request; nothing of it is cached.
"""

from __future__ import annotations

from typing import Protocol

from switchboard.core.identity import Principal
from switchboard.core.observability import logger
from switchboard.people.domain import User, tenant_of_groups
from switchboard.people.tokens import InvalidToken, TokenVerifier


class Users(Protocol):
    def get_user(self, tenant: str, user: str, *, consistent: bool = False) -> User | None: ...


class UserAuthenticator:
    def __init__(self, verifier: TokenVerifier, users: Users) -> None:
        self._verifier = verifier
        self._users = users

    def authenticate(self, token: str) -> Principal | None:
        """The principal of a valid token of an enabled person, with their role's scopes now."""
        try:
            claims = self._verifier.verify(token)
        except InvalidToken as error:
            logger.info("token refused", extra={"reason": str(error)})
            return None
        tenant = tenant_of_groups(claims.groups)
        if tenant is None:
            logger.info("token refused: no tenant group")
            return None
        user = self._users.get_user(tenant, claims.sub, consistent=True)
        if user is None or user.tenant != tenant:
            logger.info("token refused: not in the directory", extra={"tenant": tenant})
            return None
        if user.issued_before_sign_out(claims.iat):
            logger.info("token refused: issued before the person signed out", extra={"tenant": tenant})
            return None
        principal = user.principal()
        if principal is None:
            logger.info("token refused: user disabled", extra={"tenant": tenant})
        return principal

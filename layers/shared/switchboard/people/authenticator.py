"""A signed-in person's authenticator app (TOTP, the pool's optional second step): turned on from
the console, then asked for at every sign-in after the password; turned off again.

Turning it on takes three steps the pool splits the same way: a secret is made for the person
(`start`, shown as an `otpauth://` URI an app opens and as text to type), the app's first code
proves the app holds it (`confirm`, which also makes it the person's sign-in step), and from then
on the pool asks for a code after the password (`challenge: software_token_mfa`). The pool's calls
for this are the person's own: each takes the access token the request came with, which the
authorizer already checked. A key has no authenticator app: it is refused with `not_a_person`.

An access token alone changes nothing here: whoever stole one (it lives up to an hour) could
otherwise turn the person's second step off, or put their own app in its place, and keep the
account. A new secret (turning the app on, or replacing one that is on) and turning it off first
prove the person: a sign-in for them at the pool with their password and, while an app is on,
its current code (`FactorProof`); only then does anything change.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from switchboard.audit.ports import Audit
from switchboard.core.errors import InvalidInput
from switchboard.core.identity import Principal, user_principal
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.people.ports import AuthenticatorApps, FactorProof

# What the app shows above the code, and the URI's issuer: who the code is for.
ISSUER = "switchboard"


class AuthenticatorSecret(Model):
    """The secret of a new authenticator app: `uri` for an app to open (or a QR code to draw),
    `secret` (base32) to type into one by hand."""

    secret: str
    uri: str


def otpauth_uri(secret: str, account: str, issuer: str = ISSUER) -> str:
    """The key URI authenticator apps read: `otpauth://totp/<issuer>:<account>?secret=...`,
    with the pool's parameters spelled out (SHA-1, 6 digits, 30 s)."""
    label = quote(f"{issuer}:{account}", safe="@:")
    query = urlencode({"secret": secret, "issuer": issuer, "algorithm": "SHA1", "digits": 6, "period": 30})
    return f"otpauth://totp/{label}?{query}"


class AuthenticatorService:
    def __init__(self, apps: AuthenticatorApps, proof: FactorProof, audit: Audit) -> None:
        self._apps = apps
        self._proof = proof
        self._audit = audit

    def enabled(self, principal: Principal, access_token: str) -> bool:
        """Whether the person signs in with a code of their authenticator app."""
        _person(principal)
        return self._apps.enabled(access_token)

    def start(self, principal: Principal, access_token: str, password: str, code: str | None) -> AuthenticatorSecret:
        """A new secret for the person's app, once their password (and, while an app is on, its
        current code) proves them. Nothing changes at sign-in until `confirm`, and an app that is
        on keeps working until then; a second start replaces the first secret (the pool keeps one
        pending). Raises ProofRefused (`field`: `password` or `code`)."""
        user = _person(principal)
        replacing = self._proof.prove(_email(principal), password, code)
        secret = self._apps.new_secret(access_token)
        logger.info(
            "authenticator app secret made",
            extra={"tenant": principal.tenant, "user": user, "replacing": replacing},
        )
        return AuthenticatorSecret(secret=secret, uri=otpauth_uri(secret, principal.email or user))

    def confirm(self, principal: Principal, access_token: str, code: str) -> None:
        """The app's current code for the pending secret: from now on the person signs in with it.
        Raises CodeNotConfirmed (`field: code`) for another code, or when no secret is pending
        (only a proven `start` makes one)."""
        user = _person(principal)
        self._apps.verify(access_token, code)
        self._apps.set_enabled(access_token, True)
        self._audit.record(principal, "user.authenticator.enable", user_principal(user))
        logger.info("authenticator app turned on", extra={"tenant": principal.tenant, "user": user})

    def turn_off(self, principal: Principal, access_token: str, password: str, code: str) -> None:
        """The person signs in with their password alone again, once their password and their
        app's current code prove them. Raises ProofRefused (`field`: `password` or `code`); an app
        that was not on stays off, with nothing recorded."""
        user = _person(principal)
        if not self._proof.prove(_email(principal), password, code):
            return
        self._apps.set_enabled(access_token, False)
        self._audit.record(principal, "user.authenticator.disable", user_principal(user))
        logger.info("authenticator app turned off", extra={"tenant": principal.tenant, "user": user})


def _person(principal: Principal) -> str:
    if not principal.user:
        raise InvalidInput("only a person has an authenticator app: an API key has none", code="not_a_person")
    return principal.user


def _email(principal: Principal) -> str:
    """The name the person signs in with: the proof's sign-in is theirs."""
    if not principal.email:
        raise InvalidInput("only a person has an authenticator app: an API key has none", code="not_a_person")
    return principal.email

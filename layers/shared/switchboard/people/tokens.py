"""The user pool's access tokens, verified as API Gateway's JWT authorizer verifies them.

A token is accepted when its header names RS256 and a key of the pool's JWKS, its signature
verifies under that key, its issuer is the pool's, its `client_id` (an access token's) or `aud`
(an ID token's) is one of the app clients, it is an access token (`token_use`: the API takes
what Cognito issues for calling APIs, never the ID token meant for the client itself), and it is
not expired (nor used before `nbf`). Anything else is refused without saying which check failed.

RS256 is verified here with the standard library (PKCS#1 v1.5: the whole encoded message is
rebuilt and compared, never parsed), so the authorizer bundles no cryptography package. Keys are
public: nothing here is secret or timing-sensitive.

The JWKS is read once per container and read again when a token names a key it does not hold
(Cognito rotates keys by adding one first), at most once per `refresh_seconds`, so a flood of
tokens with made-up key ids does not turn into a flood of JWKS reads.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from switchboard.core.model import Model

# DER of DigestInfo{sha256} (RFC 8017, 9.2 note 1), which precedes the hash in the signed message.
_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
MAX_TOKEN_LENGTH = 8192


class InvalidToken(Exception):
    """The token is not one of the pool's, valid now, for one of its app clients."""


class RsaKey(Model):
    model_config = ConfigDict(frozen=True)

    n: int
    e: int

    @classmethod
    def of_jwk(cls, jwk: Mapping[str, Any]) -> RsaKey:
        return cls(n=int.from_bytes(_b64(str(jwk["n"])), "big"), e=int.from_bytes(_b64(str(jwk["e"])), "big"))

    def verifies(self, message: bytes, signature: bytes) -> bool:
        size = (self.n.bit_length() + 7) // 8
        if len(signature) != size:
            return False
        value = int.from_bytes(signature, "big")
        if value >= self.n:
            return False
        encoded = pow(value, self.e, self.n).to_bytes(size, "big")
        digest = _SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
        padding = size - len(digest) - 3
        if padding < 8:
            return False
        return encoded == b"\x00\x01" + b"\xff" * padding + b"\x00" + digest


class AccessClaims(Model):
    """What the API reads of a verified access token."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    sub: str = Field(min_length=1, max_length=128)
    groups: tuple[str, ...] = Field(default=(), alias="cognito:groups")
    exp: int
    iat: int | None = None


def parse_jwks(document: Mapping[str, Any]) -> dict[str, RsaKey]:
    """The RS256 signing keys of a JWKS document, by key id (others are ignored)."""
    keys: dict[str, RsaKey] = {}
    for jwk in document.get("keys") or []:
        if not isinstance(jwk, dict) or jwk.get("kty") != "RSA" or not jwk.get("kid"):
            continue
        if jwk.get("use", "sig") != "sig" or jwk.get("alg", "RS256") != "RS256":
            continue
        try:
            keys[str(jwk["kid"])] = RsaKey.of_jwk(jwk)
        except (KeyError, ValueError, binascii.Error):
            continue
    return keys


class Jwks:
    """The pool's signing keys, read from its JWKS URL and kept per container."""

    def __init__(
        self,
        url: str,
        *,
        fetch: Callable[[str], Mapping[str, Any]] | None = None,
        refresh_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = url
        self._fetch = fetch or _fetch_json
        self._refresh = refresh_seconds
        self._clock = clock
        self._keys: dict[str, RsaKey] = {}
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def key(self, kid: str) -> RsaKey | None:
        with self._lock:
            found = self._keys.get(kid)
            if found is not None:
                return found
            now = self._clock()
            if self._read_at is not None and now - self._read_at < self._refresh:
                return None
            self._read_at = now
            try:
                self._keys = parse_jwks(self._fetch(self._url))
            except Exception as error:  # any failure to read them refuses the token, never the process
                raise InvalidToken("the user pool's keys could not be read") from error
            return self._keys.get(kid)


def _fetch_json(url: str) -> Mapping[str, Any]:
    # Imported on the first read (once per container): it costs the key-only path nothing.
    import urllib.request  # noqa: PLC0415

    with urllib.request.urlopen(url, timeout=3) as response:  # noqa: S310 - the pool's own https URL
        document = json.loads(response.read())
    if not isinstance(document, dict):
        raise TypeError("a JWKS is a JSON object")
    return document


class TokenVerifier:
    def __init__(
        self,
        issuer: str,
        audiences: Collection[str],
        keys: Jwks,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._issuer = issuer
        self._audiences = frozenset(audiences)
        self._keys = keys
        self._clock = clock

    def verify(self, token: str) -> AccessClaims:
        """The claims of a valid access token. Raises InvalidToken for anything else."""
        if len(token) > MAX_TOKEN_LENGTH or token.count(".") != 2:
            raise InvalidToken("not a token")
        head, body, signature = token.split(".")
        try:
            header = json.loads(_b64(head))
            payload = json.loads(_b64(body))
            signed = _b64(signature)
        except (ValueError, binascii.Error) as error:
            raise InvalidToken("not a token") from error
        if not isinstance(header, dict) or not isinstance(payload, dict):
            raise InvalidToken("not a token")
        if header.get("alg") != "RS256" or not isinstance(header.get("kid"), str):
            raise InvalidToken("unsupported algorithm")
        key = self._keys.key(header["kid"])
        if key is None or not key.verifies(f"{head}.{body}".encode("ascii"), signed):
            raise InvalidToken("bad signature")
        if payload.get("iss") != self._issuer:
            raise InvalidToken("another issuer")
        audience = payload.get("client_id", payload.get("aud"))
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(isinstance(value, str) and value in self._audiences for value in audiences):
            raise InvalidToken("another audience")
        if payload.get("token_use") != "access":
            raise InvalidToken("not an access token")
        now = self._clock()
        exp, nbf = payload.get("exp"), payload.get("nbf")
        if not isinstance(exp, int) or isinstance(exp, bool) or exp <= now:
            raise InvalidToken("expired")
        if isinstance(nbf, int) and nbf > now:
            raise InvalidToken("not yet valid")
        try:
            return AccessClaims.model_validate(payload)
        except ValidationError as error:
            raise InvalidToken("unreadable claims") from error


def _b64(part: str) -> bytes:
    if not part or any(ch in part for ch in "+/= \n"):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def looks_like_token(bearer: str) -> bool:
    """Whether a bearer credential has the shape of a JWT (three dot-separated parts)."""
    return bearer.count(".") == 2 and len(bearer) <= MAX_TOKEN_LENGTH

"""The user pool's access tokens are verified as API Gateway's JWT authorizer verifies them:
issuer, audience (client_id), expiry, signature from the pool's JWKS, and a known key id."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from switchboard.people.tokens import InvalidToken, Jwks, TokenVerifier

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_pool"
CLIENT = "console-client"
NOW = 1_800_000_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int(value: int) -> str:
    return _b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, str]:
    numbers = key.public_key().public_numbers()
    return {"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig", "n": _int(numbers.n), "e": _int(numbers.e)}


def _token(claims: dict[str, Any], *, key: rsa.RSAPrivateKey = KEY, kid: str = "k1", alg: str = "RS256") -> str:
    head = _b64(json.dumps({"kid": kid, "alg": alg}).encode())
    body = _b64(json.dumps(claims).encode())
    signature = key.sign(f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{head}.{body}.{_b64(signature)}"


def _claims(**changes: Any) -> dict[str, Any]:
    claims = {
        "iss": ISSUER,
        "sub": "5f1c-user",
        "client_id": CLIENT,
        "token_use": "access",
        "exp": NOW + 600,
        "iat": NOW - 10,
        "cognito:groups": ["acme:admin"],
    }
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


class Reads:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.count = 0

    def __call__(self, url: str) -> dict[str, Any]:
        self.count += 1
        return self.document


def _verifier(reads: Reads | None = None) -> TokenVerifier:
    fetch = reads or Reads({"keys": [_jwk(KEY, "k1")]})
    return TokenVerifier(ISSUER, [CLIENT], Jwks("https://pool/jwks", fetch=fetch, clock=lambda: 0.0), clock=lambda: NOW)


def test_a_valid_access_token_gives_its_subject_and_groups() -> None:
    claims = _verifier().verify(_token(_claims()))
    assert claims.sub == "5f1c-user"
    assert claims.groups == ("acme:admin",)


@pytest.mark.parametrize(
    "claims",
    [
        _claims(iss="https://cognito-idp.us-east-1.amazonaws.com/us-east-1_other"),
        _claims(client_id="another-client"),
        _claims(exp=NOW),
        _claims(exp=NOW - 1),
        _claims(nbf=NOW + 60),
        _claims(token_use="id"),
        _claims(exp=None),
    ],
    ids=["issuer", "audience", "expires now", "expired", "not yet valid", "id token", "no expiry"],
)
def test_a_token_failing_one_check_is_refused(claims: dict[str, Any]) -> None:
    with pytest.raises(InvalidToken):
        _verifier().verify(_token(claims))


def test_an_id_token_audience_is_read_from_aud_but_only_access_tokens_pass() -> None:
    with pytest.raises(InvalidToken, match="access"):
        _verifier().verify(_token(_claims(client_id=None, aud=CLIENT, token_use="id")))


def test_a_token_signed_by_another_key_under_a_known_kid_is_refused() -> None:
    with pytest.raises(InvalidToken, match="signature"):
        _verifier().verify(_token(_claims(), key=OTHER_KEY))


def test_a_tampered_payload_is_refused() -> None:
    head, _, signature = _token(_claims()).split(".")
    forged = _b64(json.dumps(_claims(sub="someone-else")).encode())
    with pytest.raises(InvalidToken, match="signature"):
        _verifier().verify(f"{head}.{forged}.{signature}")


@pytest.mark.parametrize("alg", ["none", "HS256", "RS512"])
def test_another_algorithm_is_refused(alg: str) -> None:
    with pytest.raises(InvalidToken):
        _verifier().verify(_token(_claims(), alg=alg))


def test_an_unknown_kid_reads_the_jwks_again_once_then_is_refused() -> None:
    reads = Reads({"keys": [_jwk(KEY, "k1")]})
    verifier = _verifier(reads)
    verifier.verify(_token(_claims()))
    for _ in range(3):
        with pytest.raises(InvalidToken, match="signature"):
            verifier.verify(_token(_claims(), kid="unknown"))
    # One read at start; the unknown kid is looked for once within the refresh period, not per token.
    assert reads.count == 1


def test_a_rotated_key_is_found_by_reading_the_jwks_again() -> None:
    reads = Reads({"keys": [_jwk(KEY, "k1")]})
    now = [0.0]
    verifier = TokenVerifier(
        ISSUER, [CLIENT], Jwks("https://pool/jwks", fetch=reads, clock=lambda: now[0]), clock=lambda: NOW
    )
    verifier.verify(_token(_claims()))
    reads.document = {"keys": [_jwk(KEY, "k1"), _jwk(OTHER_KEY, "k2")]}
    now[0] = 61.0
    assert verifier.verify(_token(_claims(), key=OTHER_KEY, kid="k2")).sub == "5f1c-user"


@pytest.mark.parametrize("garbage", ["", "a.b", "a.b.c", "x" * 9000, "eyJ.eyJ.", "...."])
def test_garbage_is_refused(garbage: str) -> None:
    with pytest.raises(InvalidToken):
        _verifier().verify(garbage)

"""No delivery authentic under one signature scheme verifies under another, and every check compares
in constant time.

Three schemes MAC bytes with HMAC-SHA256 under a provider's webhook secret: the envelope signs
`timestamp + "." + body`, a plain wuzapi and the Cloud API the raw body, Evolution's JWT
`<base64url header>.<base64url claims>`. The same MAC can therefore be re-labelled (hex, `sha256=`,
base64url) and re-sent under another scheme: what stops it is that each scheme refuses signed bytes
not of its own shape. The properties run against the real kinds with generated secrets and bodies.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from switchboard.core.errors import Forbidden, Unauthenticated
from switchboard.providers import envelope
from switchboard.providers.base import WebhookRequest
from switchboard.providers.kinds import WebhookScheme, spec_for
from tools.support.fakes import FakeCredentials

NOW = 1_800_000_000
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

secrets_ = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=48)
stamps = st.integers(min_value=NOW - 300, max_value=NOW + 300).map(str)
# Bodies an attacker would pick: anything, JSON-looking, form-looking, base64url-looking.
bodies = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda text: ("{" + text).encode()),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz=&%", max_size=200).map(lambda text: ("instanceName=" + text).encode()),
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.", max_size=200).map(str.encode),
)


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def refused_everywhere_but(
    allowed: WebhookScheme, signed: bytes, mac: bytes, credentials: FakeCredentials, now: int
) -> None:
    """The MAC of `signed`, presented to every other scheme in the form it reads, is refused."""
    attempts: list[tuple[str, WebhookScheme, WebhookRequest]] = []
    digest = mac.hex()
    attempts.append(("wuzapi", "wuzapi-hmac", WebhookRequest(headers={"x-hmac-signature": digest}, body=signed)))
    meta = {"x-hub-signature-256": f"sha256={digest}"}
    attempts.append(("meta", "meta-signature", WebhookRequest(headers=meta, body=signed)))
    if b"." in signed:  # as an envelope: everything before the first dot is the timestamp
        stamp, _, rest = signed.partition(b".")
        headers = {"x-webhook-timestamp": stamp.decode("latin-1"), "x-webhook-signature": f"v1={digest}"}
        attempts.append(("wuzapi", "envelope", WebhookRequest(headers=headers, body=rest)))
        token = signed.decode("latin-1") + "." + b64url(mac)  # as a JWT whose signing input it is
        attempts.append(("evolution", "evolution-jwt", WebhookRequest(headers={"authorization": f"Bearer {token}"})))
    for kind, scheme, request in attempts:
        if scheme == allowed:
            continue
        with pytest.raises(Unauthenticated):
            spec_for(kind).authenticate(request, credentials, now, scheme)


@SETTINGS
@given(secret=secrets_, stamp=stamps, body=bodies)
def test_an_envelope_signature_verifies_under_no_other_scheme(secret: str, stamp: str, body: bytes) -> None:
    signed = stamp.encode() + b"." + body
    mac = hmac.new(secret.encode(), signed, hashlib.sha256).digest()

    refused_everywhere_but("envelope", signed, mac, FakeCredentials(webhook_secret=secret), NOW)


def accepted(kind: str, scheme: WebhookScheme, request: WebhookRequest, credentials: FakeCredentials) -> bool:
    try:
        spec_for(kind).authenticate(request, credentials, NOW, scheme)
    except Unauthenticated:
        return False
    return True


@SETTINGS
@given(secret=secrets_, body=bodies, scheme=st.sampled_from(["wuzapi-hmac", "meta-signature"]))
def test_a_raw_body_signature_that_verifies_verifies_as_no_envelope_nor_jwt(
    secret: str, body: bytes, scheme: WebhookScheme
) -> None:
    """A plain wuzapi's and the Cloud API's MAC is one construction: a provider has one kind, so
    they never meet; across providers they would only if two shared a secret."""
    mac = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    credentials = FakeCredentials(webhook_secret=secret)
    kind, header = ("wuzapi", "x-hmac-signature") if scheme == "wuzapi-hmac" else ("meta", "x-hub-signature-256")
    value = mac.hex() if scheme == "wuzapi-hmac" else f"sha256={mac.hex()}"
    assume(accepted(kind, scheme, WebhookRequest(headers={header: value}, body=body), credentials))

    stamp, _, rest = body.partition(b".")
    headers = {"x-webhook-timestamp": stamp.decode("latin-1"), "x-webhook-signature": f"v1={mac.hex()}"}
    assert not accepted("wuzapi", "envelope", WebhookRequest(headers=headers, body=rest), credentials)
    token = body.decode("latin-1") + "." + b64url(mac)
    jwt_request = WebhookRequest(headers={"authorization": f"Bearer {token}"})
    assert not accepted("evolution", "evolution-jwt", jwt_request, credentials)


@SETTINGS
@given(secret=secrets_, iat=st.integers(min_value=NOW - 600, max_value=NOW))
def test_an_evolution_jwt_signature_verifies_under_no_other_scheme(secret: str, iat: int) -> None:
    header = b64url(b'{"alg":"HS256","typ":"JWT"}')
    claims = b64url(f'{{"iat":{iat},"exp":{iat + 600},"app":"evolution","action":"webhook"}}'.encode())
    signed = f"{header}.{claims}".encode()
    mac = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
    credentials = FakeCredentials(webhook_secret=secret)
    token = f"{header}.{claims}.{b64url(mac)}"
    assert spec_for("evolution").authenticate(
        WebhookRequest(headers={"authorization": f"Bearer {token}"}), credentials, NOW, "evolution-jwt"
    )

    refused_everywhere_but("evolution-jwt", signed, mac, credentials, NOW)


# --- constant time ---------------------------------------------------------------------------


@pytest.fixture
def comparisons(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    """Every `hmac.compare_digest` call, with its arguments (the real comparison still decides)."""
    seen: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def recording(a: Any, b: Any) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    return seen


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


WRONG = "0" * 64


@pytest.mark.parametrize(
    ("kind", "scheme", "headers", "body"),
    [
        ("wuzapi", "envelope", {"x-webhook-timestamp": str(NOW), "x-webhook-signature": f"v1={WRONG}"}, b"{}"),
        ("wuzapi", "wuzapi-hmac", {"x-hmac-signature": WRONG}, b"{}"),
        ("meta", "meta-signature", {"x-hub-signature-256": f"sha256={WRONG}"}, b"{}"),
    ],
)
def test_every_hmac_scheme_decides_with_a_constant_time_comparison(
    comparisons: list[tuple[Any, Any]], kind: str, scheme: WebhookScheme, headers: dict[str, str], body: bytes
) -> None:
    with pytest.raises(Unauthenticated):
        spec_for(kind).authenticate(WebhookRequest(headers=headers, body=body), FakeCredentials("k"), NOW, scheme)

    assert any(WRONG in (_text(a), _text(b)) for a, b in comparisons)


def test_the_evolution_jwt_and_apikey_decide_with_constant_time_comparisons(
    comparisons: list[tuple[Any, Any]],
) -> None:
    forged = b64url(b'{"alg":"HS256","typ":"JWT"}') + "." + b64url(b'{"exp":1}') + "." + "A" * 43
    credentials = FakeCredentials("k", tokens={"inst": "the-instance-token"})
    jwt_request = WebhookRequest(headers={"authorization": f"Bearer {forged}"})
    apikey_request = WebhookRequest(body=b'{"instance": "inst", "apikey": "a-guessed-token"}')

    with pytest.raises(Unauthenticated):
        spec_for("evolution").authenticate(jwt_request, credentials, NOW, "evolution-jwt")
    with pytest.raises(Unauthenticated):
        spec_for("evolution").authenticate(apikey_request, credentials, NOW, "evolution-apikey")

    compared = {_text(value) for pair in comparisons for value in pair}
    assert "A" * 43 in compared and "a-guessed-token" in compared


def test_the_meta_verify_token_decides_with_a_constant_time_comparison(comparisons: list[tuple[Any, Any]]) -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": "a-guess", "hub.challenge": "123"}

    with pytest.raises(Forbidden):
        spec_for("meta").verify_subscription(query, FakeCredentials(verify_token="the-verify-token"))

    assert any("a-guess" in (_text(a), _text(b)) for a, b in comparisons)


def test_envelope_matches_compares_every_entry(comparisons: list[tuple[Any, Any]]) -> None:
    """No early exit: the position of the right entry among several cannot be timed."""
    right = envelope.sign("k", str(NOW), b"{}")

    assert envelope.matches("k", str(NOW), b"{}", [right, WRONG, WRONG])
    assert len(comparisons) == 3

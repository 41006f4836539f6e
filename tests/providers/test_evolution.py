"""Evolution API v2: webhook authentication and mapping, and the client, against the recorded contract.

The fixtures in tests/contracts/evolution are real-shaped Evolution 2.3.6 bodies and answers; they
are replayed byte for byte. JWTs are built here with an independent encoder (checked against the
token jsonwebtoken produced for the contract).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.core.errors import (
    InvalidInput,
    ProviderDisconnected,
    ProviderError,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    Unauthenticated,
)
from switchboard.providers.base import ContactDirectory, DeliveryToken, ProviderTarget, WebhookRequest
from switchboard.providers.evolution import KIND, EvolutionClient
from tools.support.fakes import FakeCredentials

CONTRACT = Path(__file__).resolve().parents[1] / "contracts" / "evolution"
SECRET = "evolution-webhook-test-secret"
INSTANCE = "switchboard-test"
INSTANCE_TOKEN = "B6A1E0F2-3C4D-4E5F-8A9B-0C1D2E3F4A5B"  # the `apikey` in every webhook fixture
API_KEY = "9C2D7E1A-0B3F-4A5C-8D6E-7F1A2B3C4D5E"
NOW = 1_761_057_700


def fixture(name: str) -> bytes:
    return (CONTRACT / name).read_bytes()


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def segment(value: dict[str, Any]) -> str:
    return b64url(json.dumps(value, separators=(",", ":")).encode())


def make_jwt(
    secret: str,
    claims: dict[str, Any] | None = None,
    header: dict[str, Any] | None = None,
    iat: int = NOW - 5,
) -> str:
    """What Evolution signs: `{alg: HS256, typ: JWT}` and `{iat, exp: iat + 600, app, action}`."""
    claims = {"iat": iat, "exp": iat + 600, "app": "evolution", "action": "webhook"} if claims is None else claims
    signing_input = segment(header or {"alg": "HS256", "typ": "JWT"}) + "." + segment(claims)
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def credentials_for(secret: str | None = SECRET, tokens: dict[str, str] | None = None) -> FakeCredentials:
    return FakeCredentials(webhook_secret=secret, tokens={INSTANCE: INSTANCE_TOKEN} if tokens is None else tokens)


def request(body: bytes, token: str | None = None, authorization: str | None = None) -> WebhookRequest:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    if authorization is not None:
        headers["authorization"] = authorization
    return WebhookRequest(headers=headers, body=body)


def without_apikey(body: bytes) -> bytes:
    """The same delivery from a server that does not expose instance tokens (`apikey: null`)."""
    payload = json.loads(body)
    payload["apikey"] = None
    return json.dumps(payload).encode()


def jwt_auth(delivery: WebhookRequest, credentials: FakeCredentials, now: float) -> DeliveryToken | None:
    """Authenticated as a provider saved with `evolution-jwt` checks it."""
    return KIND.authenticate(delivery, credentials, now, "evolution-jwt")


def apikey_auth(delivery: WebhookRequest, credentials: FakeCredentials, now: float) -> DeliveryToken | None:
    """Authenticated as a provider saved with `evolution-apikey` checks it."""
    return KIND.authenticate(delivery, credentials, now, "evolution-apikey")


def refused(call: Any) -> Unauthenticated:
    with pytest.raises(Unauthenticated) as caught:
        call()
    assert (caught.value.code, caught.value.message) == ("invalid_signature", "invalid webhook signature")
    return caught.value


# --- webhook fixtures: authentication --------------------------------------------------------

WEBHOOKS = sorted(path.name for path in CONTRACT.glob("webhook_*.json") if path.name != "webhook_jwt_example.json")


def test_every_webhook_fixture_is_covered() -> None:
    assert set(WEBHOOKS) == set(EXPECTED)


def test_the_test_encoder_reproduces_the_token_evolution_signed() -> None:
    example = json.loads(fixture("webhook_jwt_example.json"))

    token = make_jwt(example["jwt_secret"], example["jwt_claims"], example["jwt_header"])

    assert token == example["token"]
    assert example["sent_headers"]["Authorization"] == f"Bearer {token}"


def test_the_contract_token_is_accepted_until_its_expiry_plus_leeway() -> None:
    example = json.loads(fixture("webhook_jwt_example.json"))
    credentials = credentials_for(secret=example["jwt_secret"], tokens={})
    body = without_apikey(fixture("webhook_messages_upsert_conversation.json"))
    delivery = request(body, authorization=example["sent_headers"]["Authorization"])
    exp = example["jwt_claims"]["exp"]

    token = jwt_auth(delivery, credentials, example["jwt_claims"]["iat"])
    jwt_auth(delivery, credentials, exp + 30)
    refused(lambda: jwt_auth(delivery, credentials, exp + 31))
    # What the ingest remembers: the token's digest, never the token, for as long as it verifies.
    assert token == DeliveryToken(
        digest=hashlib.sha256(example["token"].encode()).hexdigest(), expires_at=exp + 30, new_bodies_for_seconds=60
    )


@pytest.mark.parametrize("name", WEBHOOKS)
def test_given_a_webhook_with_the_jwt_when_authenticated_then_accepted(name: str) -> None:
    credentials = credentials_for(tokens={})  # no instance token: only the JWT can pass

    token = jwt_auth(request(without_apikey(fixture(name)), make_jwt(SECRET)), credentials, NOW)

    assert token is not None and token.digest == hashlib.sha256(make_jwt(SECRET).encode()).hexdigest()
    assert credentials.secret_reads == 1


@pytest.mark.parametrize("name", WEBHOOKS)
def test_given_a_webhook_with_the_instance_apikey_when_authenticated_then_accepted(name: str) -> None:
    credentials = credentials_for(secret=None)  # no webhook secret: only the apikey can pass

    assert apikey_auth(request(fixture(name)), credentials, NOW) is None  # the apikey is no bearer token

    assert credentials.token_reads == [INSTANCE]
    assert credentials.secret_reads == 0  # no Authorization header: the secret is not read


@pytest.mark.parametrize("name", WEBHOOKS)
def test_given_a_webhook_with_neither_when_authenticated_then_refused(name: str) -> None:
    refused(lambda: jwt_auth(request(without_apikey(fixture(name))), credentials_for(), NOW))
    refused(lambda: apikey_auth(request(without_apikey(fixture(name))), credentials_for(), NOW))


BODY = fixture("webhook_messages_upsert_conversation.json")


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(make_jwt(SECRET, iat=NOW - 631), id="expired beyond the leeway"),
        pytest.param(make_jwt("another-secret"), id="wrong secret"),
        pytest.param(make_jwt(""), id="empty secret"),
        pytest.param(make_jwt(SECRET, header={"alg": "HS512", "typ": "JWT"}), id="alg HS512"),
        pytest.param(make_jwt(SECRET, header={"alg": "hs256", "typ": "JWT"}), id="alg lower case"),
        pytest.param(make_jwt(SECRET, header={"typ": "JWT"}), id="no alg"),
        pytest.param(make_jwt(SECRET, header={"alg": "HS256", "typ": "JWE"}), id="typ not JWT"),
        pytest.param(make_jwt(SECRET, header={"alg": "HS256", "crit": ["b64"]}), id="crit"),
        pytest.param(make_jwt(SECRET, header={"alg": "none", "typ": "JWT"}), id="alg none signed anyway"),
        pytest.param(
            segment({"alg": "none", "typ": "JWT"}) + "." + segment({"exp": NOW + 600}) + ".", id="alg none unsigned"
        ),
        pytest.param(make_jwt(SECRET, {"iat": NOW, "app": "evolution", "action": "webhook"}), id="no exp"),
        pytest.param(make_jwt(SECRET, {"exp": str(NOW + 600), "app": "evolution", "action": "webhook"}), id="exp str"),
        pytest.param(make_jwt(SECRET, {"exp": True, "app": "evolution", "action": "webhook"}), id="exp bool"),
        pytest.param(make_jwt(SECRET, {"exp": 10**400, "app": "evolution", "action": "webhook"}), id="exp huge"),
        pytest.param(make_jwt(SECRET, {"exp": float("inf"), "app": "evolution", "action": "webhook"}), id="exp inf"),
        pytest.param(make_jwt(SECRET, {"exp": NOW + 600, "app": "other", "action": "webhook"}), id="other app"),
        pytest.param(make_jwt(SECRET, {"exp": NOW + 600, "app": "evolution"}), id="no action"),
        pytest.param(
            make_jwt(SECRET, {"exp": NOW + 600, "nbf": NOW + 60, "app": "evolution", "action": "webhook"}),
            id="not yet valid",
        ),
        pytest.param(make_jwt(SECRET)[:-2], id="truncated signature"),
        pytest.param(make_jwt(SECRET) + "=", id="padded"),
        pytest.param(make_jwt(SECRET).replace(".", "..", 1), id="four segments"),
        pytest.param("not-a-jwt", id="garbage"),
        pytest.param("é" + make_jwt(SECRET), id="non ascii"),
        pytest.param("a" * 5000, id="oversized"),
    ],
)
def test_given_a_bad_jwt_and_no_apikey_when_authenticated_then_refused(token: str) -> None:
    credentials = credentials_for(tokens={})

    refused(lambda: jwt_auth(request(without_apikey(BODY), token), credentials, NOW))


def test_given_claims_changed_after_signing_when_authenticated_then_refused() -> None:
    header, _, signature = make_jwt(SECRET).split(".")
    forged = segment({"iat": NOW, "exp": NOW + 86_400, "app": "evolution", "action": "webhook"})

    refused(lambda: jwt_auth(request(BODY, f"{header}.{forged}.{signature}"), credentials_for(tokens={}), NOW))


@pytest.mark.parametrize("offset", [0, 600, 630])
def test_given_a_jwt_within_its_lifetime_plus_leeway_when_authenticated_then_accepted(offset: int) -> None:
    jwt_auth(request(BODY, make_jwt(SECRET, iat=NOW)), credentials_for(tokens={}), NOW + offset)


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_the_bearer_scheme_is_case_insensitive(scheme: str) -> None:
    jwt_auth(request(BODY, authorization=f"{scheme} {make_jwt(SECRET)}"), credentials_for(tokens={}), NOW)


@pytest.mark.parametrize("authorization", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer ", make_jwt(SECRET)])
def test_given_an_authorization_that_is_not_a_bearer_token_when_authenticated_then_refused(authorization: str) -> None:
    refused(lambda: jwt_auth(request(BODY, authorization=authorization), credentials_for(tokens={}), NOW))


def test_given_no_webhook_secret_when_a_jwt_arrives_then_refused() -> None:
    refused(lambda: jwt_auth(request(BODY, make_jwt(SECRET)), credentials_for(secret=None, tokens={}), NOW))


def test_given_a_jwt_provider_when_only_the_body_apikey_is_right_then_refused() -> None:
    """The body of a JWT delivery usually carries the instance token: if a JWT provider accepted it,
    one observed body would forge any other, for good, and the JWT would protect nothing."""
    refused(lambda: jwt_auth(request(BODY, make_jwt("another-secret")), credentials_for(), NOW))
    refused(lambda: jwt_auth(request(BODY), credentials_for(), NOW))


def test_given_an_apikey_provider_when_only_the_jwt_is_right_then_refused() -> None:
    refused(lambda: apikey_auth(request(without_apikey(BODY), make_jwt(SECRET)), credentials_for(), NOW))


def test_given_an_apikey_provider_when_a_custom_authorization_comes_with_the_right_apikey_then_accepted() -> None:
    """Evolution sends the webhook's own headers: one that is not a JWT of ours changes nothing."""
    apikey_auth(request(BODY, make_jwt("another-secret")), credentials_for(), NOW)


@pytest.mark.parametrize("scheme", ["envelope", "wuzapi-hmac", "meta-signature"])
def test_a_scheme_of_another_kind_authenticates_nothing(scheme: Any) -> None:
    refused(lambda: KIND.authenticate(request(BODY, make_jwt(SECRET)), credentials_for(), NOW, scheme))


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(BODY.replace(INSTANCE_TOKEN.encode(), b"B6A1E0F2-3C4D-4E5F-8A9B-0C1D2E3F4A5C"), id="wrong"),
        pytest.param(BODY.replace(INSTANCE_TOKEN.encode(), INSTANCE_TOKEN.lower().encode()), id="lower case"),
        pytest.param(BODY.replace(b'"instance": "switchboard-test"', b'"instance": "other"'), id="other instance"),
        pytest.param(BODY.replace(f'"{INSTANCE_TOKEN}"'.encode(), b'""'), id="empty"),
        pytest.param(BODY.replace(f'"{INSTANCE_TOKEN}"'.encode(), b"1"), id="not a string"),
        pytest.param(without_apikey(BODY), id="null"),
        pytest.param(BODY[:-3], id="invalid JSON"),
        pytest.param(b"", id="empty body"),
        pytest.param(b"\xff\xfe{", id="not UTF-8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deeply nested"),
        pytest.param(json.dumps([INSTANCE, INSTANCE_TOKEN]).encode(), id="not an object"),
        pytest.param(json.dumps({"instance": None, "apikey": INSTANCE_TOKEN}).encode(), id="no instance"),
        pytest.param(BODY.replace(INSTANCE_TOKEN.encode(), b"\\ud800"), id="lone surrogate"),
    ],
)
def test_given_a_wrong_or_unreadable_apikey_when_authenticated_then_refused(body: bytes) -> None:
    refused(lambda: apikey_auth(request(body), credentials_for(secret=None), NOW))


def test_given_an_instance_without_a_stored_token_when_its_apikey_arrives_then_refused() -> None:
    refused(lambda: apikey_auth(request(BODY), credentials_for(tokens={INSTANCE: ""}), NOW))


# --- webhook fixtures: events ---------------------------------------------------------------


def digest(name: str) -> str:
    return hashlib.sha256(fixture(name)).hexdigest()[:32]


EXPECTED: dict[str, dict[str, Any]] = {
    "webhook_messages_upsert_conversation.json": {
        "name": "message",
        "event_id": "AC5D2E9F7B31C0480E5A6F1D9B2C7E34",
        "seq": 1_761_057_639_000,
        "data": {
            "id": "AC5D2E9F7B31C0480E5A6F1D9B2C7E34",
            "from": "5511988887777",
            "lid": "104857600012345@lid",
            "content": {"type": "text", "body": "Oi, tudo bem? Quero confirmar meu horário."},
            "timestamp": "2025-10-21T14:40:39+00:00",
            "name": "Maria Souza",
        },
        "ignored": None,
    },
    "webhook_messages_upsert_extended_text.json": {  # LID chat: the phone number is in remoteJidAlt
        "name": "message",
        "event_id": "3A7F2C9B1D4E8A6C0B5F",
        "seq": 1_761_057_734_000,
        "data": {
            "id": "3A7F2C9B1D4E8A6C0B5F",
            "from": "5511988887777",
            "lid": "104857600012345@lid",
            "content": {"type": "text", "body": "Pode ser às 15h, veja https://example.com/agenda"},
            "replyTo": "3EB0C7A1F49E2D86B53A0F",
            "timestamp": "2025-10-21T14:42:14+00:00",
            "name": "Maria Souza",
        },
        "ignored": None,
    },
    "webhook_messages_upsert_lid_only.json": {  # LID chat without remoteJidAlt: the LID is all there is
        "name": "message",
        "event_id": "B7E3A1C9D5F2048E6A1B3C5D7E9F0A2B",
        "seq": 1_761_058_012_000,
        "data": {
            "id": "B7E3A1C9D5F2048E6A1B3C5D7E9F0A2B",
            "lid": "204857600054321@lid",
            "content": {"type": "text", "body": "Boa tarde, vocês abrem no sábado?"},
            "timestamp": "2025-10-21T14:46:52+00:00",
            "name": "Carlos Pereira",
        },
        "ignored": None,
    },
    "webhook_messages_upsert_from_me.json": {
        "name": "message",
        "event_id": "A3F09B8C7D6E5F4A3B2C1D0E9F8A7B6C",
        "seq": 1_761_057_819_000,
        "data": {"id": "A3F09B8C7D6E5F4A3B2C1D0E9F8A7B6C"},
        "ignored": "sent from the phone or the API",
    },
    "webhook_messages_upsert_group.json": {
        "name": "message",
        "event_id": "3AD8E1F0C2B4A6978563",
        "seq": 1_761_057_939_000,
        "data": {"id": "3AD8E1F0C2B4A6978563"},
        "ignored": "group message",
    },
    "webhook_messages_upsert_image.json": {
        "name": "message",
        "event_id": "9F1E2D3C4B5A69788796A5B4C3D2E1F0",
        "seq": 1_761_057_879_000,
        "data": {
            "id": "9F1E2D3C4B5A69788796A5B4C3D2E1F0",
            "from": "5511988887777",
            "lid": "104857600012345@lid",
            "content": {
                "type": "media",
                "media": {
                    "kind": "image",
                    "mime_type": "image/jpeg",
                    "file_name": None,
                    "caption": None,
                    "size": 184533,
                    "sha256": "623585c336648e5ebffbd7639407fcda3c9d18b32dc0029849cdbbdc7e40ab92",
                    "seconds": None,
                    "animated": False,
                    "inline": False,
                    "stored": None,
                    "unavailable": None,
                    # neither webhookBase64 nor S3: Evolution's route finds the message by its key
                    "source": {
                        "via": "provider_download",
                        "media_id": None,
                        "url": None,
                        "fields": {"message": {"key": {"id": "9F1E2D3C4B5A69788796A5B4C3D2E1F0"}}},
                    },
                },
            },
            "timestamp": "2025-10-21T14:44:39+00:00",
            "name": "Maria Souza",
        },
        "ignored": None,
    },
    "webhook_messages_update_delivered.json": {
        "name": "receipt",
        "event_id": "3EB0C7A1F49E2D86B53A0F:DELIVERY_ACK",
        "seq": None,
        "data": {"id": "3EB0C7A1F49E2D86B53A0F", "status": "delivered"},
        "ignored": None,
    },
    "webhook_messages_update_read.json": {
        "name": "receipt",
        "event_id": "3EB0C7A1F49E2D86B53A0F:READ",
        "seq": None,
        "data": {"id": "3EB0C7A1F49E2D86B53A0F", "status": "read"},
        "ignored": None,
    },
    "webhook_connection_update_open.json": {
        "name": "connection",
        "event_id": digest("webhook_connection_update_open.json"),
        "seq": None,
        "data": {"connected": True},
        "ignored": None,
    },
    "webhook_connection_update_close.json": {
        "name": "connection",
        "event_id": digest("webhook_connection_update_close.json"),
        "seq": None,
        "data": {"connected": False, "reason": "logged out (401)"},
        "ignored": None,
    },
    "webhook_connection_update_connecting.json": {
        "name": "connection",
        "event_id": digest("webhook_connection_update_connecting.json"),
        "seq": None,
        "data": {},
        "ignored": "connecting",
    },
}

# The same image from an instance keeping media in S3/MinIO: the same event, its file by the
# presigned GET Evolution posts (`message.mediaUrl`), fetched as it is.
EXPECTED["webhook_messages_upsert_image_media_url.json"] = copy.deepcopy(EXPECTED["webhook_messages_upsert_image.json"])
EXPECTED["webhook_messages_upsert_image_media_url.json"]["data"]["content"]["media"]["source"] = {
    "via": "url",
    "media_id": None,
    "url": json.loads(fixture("webhook_messages_upsert_image_media_url.json"))["data"]["message"]["mediaUrl"],
    "fields": {},
}


def mapped(body: bytes) -> dict[str, Any]:
    [event] = KIND.events(WebhookRequest(body=body), "evolution-jwt")
    assert (event.binding, event.binding_field, event.instance) == (INSTANCE, "provider_instance_id", None)
    return {key: getattr(event, key) for key in ("name", "event_id", "seq", "data", "ignored")}


@pytest.mark.parametrize("name", WEBHOOKS)
def test_given_a_webhook_fixture_when_mapped_then_it_gives_the_expected_event(name: str) -> None:
    assert mapped(fixture(name)) == EXPECTED[name]


def test_no_mapped_event_carries_the_apikey() -> None:
    for name in WEBHOOKS:
        assert INSTANCE_TOKEN not in json.dumps(mapped(fixture(name)))


def test_a_redelivered_connection_update_keeps_its_event_id_and_another_gets_a_new_one() -> None:
    body = fixture("webhook_connection_update_open.json")
    later = body.replace(b"2025-10-21T10:40:39.377Z", b"2025-10-21T10:55:01.002Z")

    assert mapped(body)["event_id"] == mapped(body)["event_id"] != mapped(later)["event_id"]


def edited(name: str, change: Any) -> bytes:
    payload = json.loads(fixture(name))
    change(payload)
    return json.dumps(payload).encode()


def set_path(payload: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        payload = payload[part]
    if value is DELETE:
        del payload[last]
    else:
        payload[last] = value


DELETE = object()
UPSERT = "webhook_messages_upsert_conversation.json"
UPDATE = "webhook_messages_update_delivered.json"
CONNECTION = "webhook_connection_update_close.json"


@pytest.mark.parametrize(
    ("status", "expected", "ignored"),
    [
        ("DELIVERY_ACK", "delivered", None),
        ("READ", "read", None),
        ("PLAYED", "read", None),
        ("ERROR", "failed", None),
        ("SERVER_ACK", None, "status SERVER_ACK"),
        ("PENDING", None, "status PENDING"),
        ("DELETED", None, "status DELETED"),
    ],
)
def test_receipt_statuses(status: str, expected: str | None, ignored: str | None) -> None:
    event = mapped(edited(UPDATE, lambda p: set_path(p, "data.status", status)))

    assert event["event_id"] == f"3EB0C7A1F49E2D86B53A0F:{status}"
    assert event["data"] == (
        {"id": "3EB0C7A1F49E2D86B53A0F", "status": expected} if expected else {"id": event["data"]["id"]}
    )
    assert event["ignored"] == ignored


def test_a_receipt_of_a_received_message_is_ignored() -> None:
    event = mapped(edited(UPDATE, lambda p: set_path(p, "data.fromMe", False)))

    assert event["ignored"] == "receipt of a received message"


def test_a_receipt_in_a_lid_chat_still_names_our_message_id() -> None:
    event = mapped(edited(UPDATE, lambda p: set_path(p, "data.remoteJid", "104857600012345@lid")))

    assert event["data"] == {"id": "3EB0C7A1F49E2D86B53A0F", "status": "delivered"}


def extended(payload: dict[str, Any]) -> None:
    message = payload["data"]["message"]
    message["extendedTextMessage"] = {"text": message.pop("conversation")}
    payload["data"]["messageType"] = "extendedTextMessage"


def ephemeral(payload: dict[str, Any]) -> None:
    text = payload["data"]["message"].pop("conversation")
    payload["data"]["message"]["ephemeralMessage"] = {"message": {"extendedTextMessage": {"text": text}}}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            extended,
            {"content": {"type": "text", "body": "Oi, tudo bem? Quero confirmar meu horário."}},
            id="extendedTextMessage",
        ),
        pytest.param(
            ephemeral,
            {"content": {"type": "text", "body": "Oi, tudo bem? Quero confirmar meu horário."}},
            id="ephemeral wrapper",
        ),
        pytest.param(
            lambda p: set_path(p, "data.messageTimestamp", "1761057639"),
            {"timestamp": "2025-10-21T14:40:39+00:00"},
            id="timestamp as a string",
        ),
        pytest.param(
            lambda p: set_path(p, "data.messageTimestamp", {"low": 1761057639, "high": 0, "unsigned": True}),
            {"timestamp": "2025-10-21T14:40:39+00:00"},
            id="timestamp as a Long",
        ),
        pytest.param(
            lambda p: set_path(p, "data.key.remoteJid", "5511988887777:12@s.whatsapp.net"),
            {"from": "5511988887777"},
            id="device suffix",
        ),
    ],
)
def test_message_variants(change: Any, expected: dict[str, Any]) -> None:
    event = mapped(edited(UPSERT, change))

    assert event["ignored"] is None
    assert event["data"] | expected == event["data"]


def test_a_message_without_a_timestamp_has_no_timestamp_and_no_seq() -> None:
    event = mapped(edited(UPSERT, lambda p: set_path(p, "data.messageTimestamp", DELETE)))

    assert (event["seq"], "timestamp" in event["data"], event["ignored"]) == (None, False, None)


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        ("data.key.remoteJid", "status@broadcast", "broadcast message"),
        ("data.key.remoteJid", "120363025246125486@newsletter", "newsletter message"),
        ("data.key.remoteJidAlt", DELETE, None),  # PN chat: the phone number is remoteJid
        ("data.key.remoteJid", "104857600012345@lid", None),  # both LIDs: the LID is what there is
    ],
)
def test_message_ignore_reasons(path: str, value: Any, reason: str | None) -> None:
    event = mapped(edited(UPSERT, lambda p: set_path(p, path, value)))

    assert event["ignored"] == reason


def test_a_chat_addressed_by_neither_a_phone_number_nor_a_lid_is_ignored() -> None:
    def unknown(payload: dict[str, Any]) -> None:
        payload["data"]["key"]["remoteJid"] = "somebody@c.us"
        del payload["data"]["key"]["remoteJidAlt"]

    assert mapped(edited(UPSERT, unknown))["ignored"] == "sender phone number unknown"


def test_a_lid_chat_from_an_older_evolution_takes_the_phone_number_from_sender_pn() -> None:
    """Evolution 2.3.1 to 2.3.4 put the other address in `key.senderPn` (and moved the LID to
    `previousRemoteJid` when it had the number): both spellings give the same event."""

    def older(payload: dict[str, Any]) -> None:
        payload["data"]["key"] = {
            "remoteJid": "104857600012345@lid",
            "senderPn": "5511988887777@s.whatsapp.net",
            "fromMe": False,
            "id": "3A7F2C9B1D4E8A6C0B5F",
        }

    event = mapped(edited(UPSERT, older))

    assert (event["data"]["from"], event["data"]["lid"], event["ignored"]) == (
        "5511988887777",
        "104857600012345@lid",
        None,
    )


@pytest.mark.parametrize(("push_name", "name"), [(None, None), ("", None), ("  Ana\n Paula ", "Ana Paula"), (7, None)])
def test_the_push_name_is_the_senders_name_when_there_is_one(push_name: Any, name: str | None) -> None:
    event = mapped(edited(UPSERT, lambda p: set_path(p, "data.pushName", push_name)))

    assert (event["ignored"], event["data"].get("name")) == (None, name)


def test_a_message_of_a_kind_not_mapped_is_ignored_with_its_type() -> None:
    def vote(payload: dict[str, Any]) -> None:
        payload["data"]["message"] = {"pollUpdateMessage": {"vote": {}}}
        payload["data"]["messageType"] = "pollUpdateMessage"

    def unknown(payload: dict[str, Any]) -> None:
        payload["data"]["message"] = {"messageContextInfo": {}, "callLogMesssage": {}}
        payload["data"]["messageType"] = "callLogMesssage"

    assert mapped(edited(UPSERT, vote))["ignored"] == "poll vote (encrypted)"
    assert mapped(edited(UPSERT, unknown))["ignored"] == "unsupported message callLogMesssage"


@pytest.mark.parametrize("event", ["MESSAGES_UPSERT", "messages-upsert", "Messages.Upsert"])
def test_event_names_in_other_spellings_are_accepted(event: str) -> None:
    assert mapped(edited(UPSERT, lambda p: set_path(p, "event", event)))["name"] == "message"


def test_an_unknown_event_is_returned_ignored() -> None:
    body = edited("webhook_messages_upsert_from_me.json", lambda p: set_path(p, "event", "send.message"))

    event = mapped(body)

    assert (event["name"], event["ignored"], event["data"]) == ("send.message", "unsupported event send.message", {})
    assert event["event_id"] == hashlib.sha256(body).hexdigest()[:32]


def test_an_unknown_event_whose_data_is_a_list_is_returned_ignored() -> None:
    body = json.dumps({"event": "contacts.upsert", "instance": INSTANCE, "data": [{"id": "x"}]}).encode()

    assert mapped(body)["ignored"] == "unsupported event contacts.upsert"


@pytest.mark.parametrize(
    ("state", "reason", "expected"),
    [
        ("close", 403, {"connected": False, "reason": "forbidden (403)"}),
        ("close", 406, {"connected": False, "reason": "closed (406)"}),
        ("close", DELETE, {"connected": False, "reason": "closed"}),
        ("refused", 428, {"connected": False, "reason": "qr code limit reached (428)"}),
    ],
)
def test_connection_closes(state: str, reason: Any, expected: dict[str, Any]) -> None:
    def change(payload: dict[str, Any]) -> None:
        set_path(payload, "data.state", state)
        set_path(payload, "data.statusReason", reason)

    event = mapped(edited(CONNECTION, change))

    assert (event["data"], event["ignored"]) == (expected, None)


def test_an_unknown_connection_state_is_ignored() -> None:
    assert mapped(edited(CONNECTION, lambda p: set_path(p, "data.state", "paused")))["ignored"] == "state paused"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{", id="invalid JSON"),
        pytest.param(b"\xff\xfe", id="not UTF-8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deeply nested"),
        pytest.param(b"[]", id="not an object"),
        pytest.param(edited(UPSERT, lambda p: set_path(p, "instance", DELETE)), id="no instance"),
        pytest.param(edited(UPSERT, lambda p: set_path(p, "instance", "")), id="empty instance"),
        pytest.param(edited(UPSERT, lambda p: set_path(p, "instance", "x" * 129)), id="long instance"),
        pytest.param(edited(UPSERT, lambda p: set_path(p, "event", 1)), id="event not a string"),
        pytest.param(BODY.replace(b'"switchboard-test"', b'"switch\\udc00"', 1), id="lone surrogate"),
        pytest.param(edited(UPSERT, lambda p: set_path(p, "data.key", DELETE)), id="upsert without key"),
        pytest.param(edited(UPSERT, lambda p: set_path(p, "data.key.id", "")), id="upsert with an empty id"),
        pytest.param(edited(UPSERT, lambda p: set_path(p, "data", None)), id="upsert without data"),
        pytest.param(edited(UPDATE, lambda p: set_path(p, "data.keyId", DELETE)), id="update without keyId"),
        pytest.param(edited(CONNECTION, lambda p: set_path(p, "data", [])), id="connection data a list"),
    ],
)
def test_a_body_not_in_evolution_format_is_invalid_input(body: bytes) -> None:
    with pytest.raises(InvalidInput) as caught:
        KIND.events(WebhookRequest(body=body), "evolution-jwt")
    assert caught.value.code == "invalid_envelope"


# --- client -------------------------------------------------------------------------------


class Replay:
    """A MockTransport answering with a fixture's exact bytes; records what it was sent."""

    def __init__(self, status: int, body: bytes | None = None, error: Exception | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self._status, self._body, self._error = status, body, error
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self._error is not None:
            raise self._error
        return httpx.Response(self._status, content=self._body, headers={"content-type": "application/json"})


def target(instance: str = INSTANCE) -> ProviderTarget:
    return ProviderTarget(
        kind="evolution", base_url="http://127.0.0.1:8080/", provider_instance_id=instance, instance_token=API_KEY
    )


def send(replay: Replay, instance: str = INSTANCE) -> str:
    text = json.loads(fixture("api_send_text_request.json"))["text"]
    client = EvolutionClient(local_mode=True, transport=replay.transport)
    return client.send_text(target(instance), "5511988887777", text, "msg-1").provider_message_id


def test_send_text_posts_the_documented_body_and_returns_the_key_id() -> None:
    replay = Replay(201, fixture("api_send_text_201_success.json"))

    assert send(replay) == "3EB0C7A1F49E2D86B53A0F"

    [sent] = replay.requests
    assert (sent.method, sent.url.raw_path) == ("POST", b"/message/sendText/switchboard-test")
    assert sent.headers["apikey"] == API_KEY
    assert "idempotency-key" not in sent.headers
    assert json.loads(sent.content) == json.loads(fixture("api_send_text_request.json"))


def test_send_text_quotes_the_instance_name_in_the_path() -> None:
    replay = Replay(201, fixture("api_send_text_201_success.json"))

    send(replay, "sales/team ?x")

    assert replay.requests[0].url.raw_path == b"/message/sendText/sales%2Fteam%20%3Fx"


def test_send_text_uses_the_admin_key_without_an_instance_token() -> None:
    replay = Replay(201, fixture("api_send_text_201_success.json"))
    client = EvolutionClient(local_mode=True, transport=replay.transport)
    admin = ProviderTarget(
        kind="evolution", base_url="http://127.0.0.1:8080", provider_instance_id=INSTANCE, admin_token="global-key"
    )

    client.send_text(admin, "5511988887777", "hi", "msg-1")

    assert replay.requests[0].headers["apikey"] == "global-key"


CONNECTION_CLOSED_500 = b'{"status":500,"error":"Internal Server Error","response":{"message":"Connection Closed"}}'
CONNECTION_CLOSED_400 = b'{"status":400,"error":"Bad Request","response":{"message":["Error: Connection Closed"]}}'
OBJECT_OBJECT_400 = b'{"status":400,"error":"Bad Request","response":{"message":["[object Object]"]}}'
TYPE_ERROR_500 = (
    b'{"status":500,"error":"Internal Server Error","response":{"message":"Cannot read properties of undefined"}}'
)


def _messages(body: bytes) -> list[object]:
    try:
        inner = json.loads(body).get("response") or {}
    except ValueError:
        return []
    message = inner.get("message")
    if not isinstance(message, list):
        return [message] if isinstance(message, str | dict) else []
    return [part for item in message for part in (item if isinstance(item, list) else [item])]


@pytest.mark.parametrize(
    ("status", "body", "error", "provider_code"),
    [
        (400, fixture("api_send_text_400_empty_text.json"), ProviderRejected, None),
        (400, fixture("api_send_text_400_validation_missing_text.json"), ProviderRejected, None),
        (400, fixture("api_send_text_400_number_not_on_whatsapp.json"), ProviderRejected, "not_on_whatsapp"),
        (400, OBJECT_OBJECT_400, ProviderRejected, None),
        (401, fixture("api_send_text_401_unauthorized.json"), ProviderRejected, "Unauthorized"),
        (404, fixture("api_send_text_404_instance_not_found.json"), ProviderRejected, "instance_not_found"),
        (400, CONNECTION_CLOSED_400, ProviderDisconnected, "connection_closed"),
        (500, CONNECTION_CLOSED_500, ProviderDisconnected, "connection_closed"),
        (500, TYPE_ERROR_500, ProviderUnavailable, None),
        (502, b"<html>bad gateway</html>", ProviderUnavailable, None),
        (429, b"", ProviderUnavailable, None),
    ],
)
def test_send_text_errors(status: int, body: bytes, error: type[ProviderError], provider_code: str | None) -> None:
    with pytest.raises(ProviderError) as caught:
        send(Replay(status, body))

    assert type(caught.value) is error
    details = {name: value for name, value in caught.value.details.items() if name != "provider_message"}
    assert details == {"status": status, "provider_code": provider_code}
    # Evolution's `response.message`, as it wrote it, for the operator (never in our own message)
    words = [m if isinstance(m, str) else json.dumps(m, separators=(",", ":")) for m in _messages(body)]
    assert caught.value.provider_message == ("; ".join(words) or None)
    said = str(caught.value) + caught.value.message
    for secret_or_text in (API_KEY, "Text is required", "5511900001111", "no-such-instance", "Connection Closed"):
        assert secret_or_text not in said


def test_send_text_timeout_is_an_unknown_outcome() -> None:
    with pytest.raises(ProviderTimeout):
        send(Replay(0, error=httpx.ReadTimeout("slow")))


def test_send_text_connect_failure_is_not_sent() -> None:
    with pytest.raises(ProviderUnavailable):
        send(Replay(0, error=httpx.ConnectError("refused")))


def test_a_201_without_a_key_id_is_an_unknown_outcome() -> None:
    with pytest.raises(ProviderTimeout):
        send(Replay(201, b'{"key":{"remoteJid":"5511988887777@s.whatsapp.net","fromMe":true},"status":"PENDING"}'))


@pytest.mark.parametrize(
    ("body", "connected"),
    [
        (fixture("api_connection_state_open.json"), True),
        (fixture("api_connection_state_close.json"), False),
        (b'{"instance":{"instanceName":"switchboard-test","state":"connecting"}}', False),
        (b'{"instance":{"instanceName":"switchboard-test"}}', False),  # stored, not loaded
    ],
)
def test_instance_status(body: bytes, connected: bool) -> None:
    replay = Replay(200, body)
    client = EvolutionClient(local_mode=True, transport=replay.transport)

    status = client.instance_status(target())

    assert (status.connected, status.kind) == (connected, "messages")
    [asked] = replay.requests
    assert (asked.method, asked.url.raw_path, asked.headers["apikey"]) == (
        "GET",
        b"/instance/connectionState/switchboard-test",
        API_KEY,
    )


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (404, fixture("api_send_text_404_instance_not_found.json"), ProviderRejected),
        (401, fixture("api_send_text_401_unauthorized.json"), ProviderRejected),
        (500, CONNECTION_CLOSED_500, ProviderUnavailable),
        (503, b"", ProviderUnavailable),
    ],
)
def test_instance_status_errors(status: int, body: bytes, error: type[ProviderError]) -> None:
    client = EvolutionClient(local_mode=True, transport=Replay(status, body).transport)

    with pytest.raises(error):
        client.instance_status(target())


# --- through the API: the real ingest on moto ---------------------------------------------


def evolution_provider_with(
    client: Any, make_tenant: Any, simulator: Simulator, control: SimulatorControl, scheme: str | None
) -> str:
    """Tenant `acme`'s number served by an Evolution provider whose instance is `switchboard-test`,
    on the simulator's Evolution server (which answers its connection state), connected."""
    control.create_instance(id=INSTANCE, token=INSTANCE_TOKEN, flavour="evolution", number="5511999990000")
    tenant = make_tenant("acme")
    number = client.post("/api/numbers", key=tenant.admin, json_body={"number": "5511999990000", "displayName": "M"})
    assert number.status == 201, number.body
    base_url = f"{simulator.base_url}/evolution"
    body = {"name": "evo", "kind": "evolution", "baseUrl": base_url, "webhookSecret": SECRET}
    if scheme is not None:
        body["webhookScheme"] = scheme
    provider = client.post("/api/providers", key=tenant.admin, json_body=body)
    assert provider.status == 201, provider.body
    assert provider.json()["webhookScheme"] == scheme  # left out: its first authentic delivery stores it
    instance = {
        "providerId": provider.json()["id"],
        "providerInstanceId": INSTANCE,
        "numberId": number.json()["id"],
        "token": INSTANCE_TOKEN,
        "kind": "messages",
    }
    put = client.put("/api/instances/acme-evo", key=tenant.admin, json_body=instance)
    assert put.status == 201, put.body
    provider_id: str = provider.json()["id"]
    return provider_id


@pytest.fixture
def evolution_provider(client: Any, make_tenant: Any, simulator: Simulator, control: SimulatorControl) -> str:
    """Saved without a scheme: its first delivery, under Evolution's JWT, stores `evolution-jwt`."""
    return evolution_provider_with(client, make_tenant, simulator, control, None)


@pytest.fixture
def apikey_provider(client: Any, make_tenant: Any, simulator: Simulator, control: SimulatorControl) -> str:
    """Saved with `evolution-apikey`: a server whose (global) webhook carries no JWT."""
    return evolution_provider_with(client, make_tenant, simulator, control, "evolution-apikey")


def post(client: Any, provider_id: str, body: bytes, headers: dict[str, str] | None = None) -> Any:
    headers = {"Content-Type": "application/json", **(headers or {})}
    return client.post(f"/webhooks/{provider_id}", body=body, headers=headers)


def test_through_the_api_a_jwt_delivery_is_applied_and_its_redelivery_is_a_duplicate(
    client: Any, aws: Any, evolution_provider: str
) -> None:
    body = without_apikey(fixture(UPSERT))
    headers = {"Authorization": f"Bearer {make_jwt(SECRET, iat=int(time.time()))}"}

    first = post(client, evolution_provider, body, headers)
    again = post(client, evolution_provider, body, headers)

    assert (first.status, first.json()["outcome"], first.json()["instance"]) == (200, "applied", "acme-evo")
    assert (again.status, again.json()["outcome"]) == (200, "duplicate")
    [job] = [json.loads(message["Body"]) for message in aws.queue_messages("ForwardQueue")]
    assert (job["instance"], job["sender"], job["text"]) == (
        "acme:acme-evo",
        "5511988887777",
        "Oi, tudo bem? Quero confirmar meu horário.",
    )


def test_through_the_api_the_apikey_path_and_ignored_events(client: Any, aws: Any, apikey_provider: str) -> None:
    answer = post(client, apikey_provider, fixture("webhook_messages_upsert_group.json"))

    assert answer.status == 200, answer.body
    assert (answer.json()["outcome"], answer.json()["reason"]) == ("ignored", "group message")


def test_through_the_api_an_unauthenticated_delivery_is_401(client: Any, aws: Any, evolution_provider: str) -> None:
    expired = make_jwt(SECRET, iat=int(time.time()) - 700)

    answer = post(client, evolution_provider, without_apikey(fixture(UPSERT)), {"Authorization": f"Bearer {expired}"})

    assert answer.status == 401


@pytest.mark.parametrize(
    "case",
    [
        ("webhook_connection_update_close.json", "applied", False),
        ("webhook_connection_update_open.json", "applied", True),
        ("webhook_connection_update_connecting.json", "ignored", True),
        ("webhook_messages_update_read.json", "applied", True),  # an unknown message id: applied as a no-op
    ],
)
def test_through_the_api_connection_and_receipt_events(
    client: Any, aws: Any, apikey_provider: str, control: SimulatorControl, case: tuple[str, str, bool]
) -> None:
    """`connection.update` carries no order: the state comes from the status read it triggers."""
    name, outcome, connected_at_the_provider = case
    control.set_connection(INSTANCE, connected_at_the_provider, notify=False)

    answer = post(client, apikey_provider, fixture(name))

    assert (answer.status, answer.json()["outcome"]) == (200, outcome), answer.body
    stored = bootstrap.catalog_repository().find_instance("acme:acme-evo")
    assert stored is not None
    assert stored.state == ("CONNECTED" if connected_at_the_provider else "DISCONNECTED")


def test_through_the_api_a_close_evolution_does_not_confirm_changes_nothing(
    client: Any, aws: Any, apikey_provider: str
) -> None:
    """A `close` replayed while the instance is open at the provider: refused by its status read."""
    answer = post(client, apikey_provider, fixture("webhook_connection_update_close.json"))

    assert (answer.status, answer.json()["outcome"]) == (200, "applied")
    stored = bootstrap.catalog_repository().find_instance("acme:acme-evo")
    assert stored is not None and stored.state == "CONNECTED"


# --- the phone number behind a LID ------------------------------------------------------------


def phone_for_lid(replay: Replay, lid: str = "104857600012345@lid") -> str | None:
    return EvolutionClient(local_mode=True, transport=replay.transport).phone_for_lid(target(), lid)


def test_a_lid_evolution_learned_the_number_of_resolves_to_it_through_whatsapp_numbers() -> None:
    replay = Replay(200, fixture("api_whatsapp_numbers_200_lid_known.json"))

    assert phone_for_lid(replay) == "5511988887777"

    [sent] = replay.requests
    assert (sent.method, sent.url.raw_path, sent.headers["apikey"]) == (
        "POST",
        b"/chat/whatsappNumbers/switchboard-test",
        API_KEY,
    )
    assert json.loads(sent.content) == json.loads(fixture("api_whatsapp_numbers_request.json"))


def test_a_lid_evolution_never_saw_with_a_number_comes_back_as_itself_and_stays_unresolved() -> None:
    assert (
        phone_for_lid(Replay(200, fixture("api_whatsapp_numbers_200_lid_unknown.json")), "204857600054321@lid") is None
    )


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (404, fixture("api_send_text_404_instance_not_found.json"), ProviderRejected),
        (401, fixture("api_send_text_401_unauthorized.json"), ProviderRejected),
        (500, b'{"status":500,"error":"Internal Server Error","response":{"message":"x"}}', ProviderUnavailable),
        (200, b"{}", ProviderUnavailable),
        (200, b"not json", ProviderUnavailable),
    ],
)
def test_a_lookup_the_server_cannot_answer_is_a_provider_error(
    status: int, body: bytes, error: type[ProviderError]
) -> None:
    with pytest.raises(error):
        phone_for_lid(Replay(status, body))


def test_the_evolution_client_is_a_contact_directory() -> None:
    assert isinstance(EvolutionClient(local_mode=True), ContactDirectory)


def test_through_the_api_a_lid_only_chat_is_forwarded_by_its_lid_with_the_senders_name(
    client: Any, aws: Any, evolution_provider: str
) -> None:
    answer = post(client, evolution_provider, fixture("webhook_messages_upsert_lid_only.json"))

    assert (answer.status, answer.json()["outcome"]) == (200, "applied")
    [job] = [json.loads(message["Body"]) for message in aws.queue_messages("ForwardQueue")]
    assert (job["sender"], job["sender_lid"], job["sender_name"], job["text"]) == (
        None,
        "204857600054321@lid",
        "Carlos Pereira",
        "Boa tarde, vocês abrem no sábado?",
    )


def test_events_emitted_within_one_second_and_their_retries_carry_one_token_that_authenticates_each() -> None:
    """Why the ingest lets a token bring several bodies (for a while): Evolution's token names no event."""
    contract = json.loads(fixture("jwt_one_second.json"))
    credentials = credentials_for(secret=contract["jwt_secret"], tokens={})
    posts = contract["posts"]

    assert len({post["authorization"] for post in posts}) == 1
    assert len({post["emitted_at_ms"] // 1000 for post in posts}) == 1
    issued = posts[0]["emitted_at_ms"] // 1000
    assert posts[0]["authorization"] == f"Bearer {make_jwt(contract['jwt_secret'], iat=issued)}"
    tokens = {
        jwt_auth(
            request(without_apikey(fixture(post["body_file"])), authorization=post["authorization"]),
            credentials,
            issued,
        )
        for post in posts
    }
    assert len(tokens) == 1 and None not in tokens

"""Plain wuzapi deliveries: the real fixtures' exact bytes, signed as wuzapi signs them, mapped to our events."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from switchboard.core.errors import InvalidInput, Unauthenticated
from switchboard.providers import envelope
from switchboard.providers.base import InboundEvent, WebhookRequest
from switchboard.providers.kinds import WebhookScheme
from switchboard.providers.wuzapi import KIND
from tools.support.fakes import FakeCredentials

FIXTURES = Path(__file__).resolve().parents[1] / "contracts" / "wuzapi"
VECTORS = json.loads((FIXTURES / "hmac_signature.json").read_text())
KEY: str = VECTORS["key"]
NOW = 1_800_000_000.0
BINDING = "atendimento-01"
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


SCHEME: WebhookScheme = "wuzapi-hmac"  # how the provider of these deliveries is saved


def credentials_for(secret: str | None = KEY) -> FakeCredentials:
    return FakeCredentials(webhook_secret=secret)


def reference_signature(key: str, body: bytes) -> str:
    """HMAC-SHA256 as wuzapi's generateHmacSignature computes it, written independently here."""
    mac = hmac.HMAC(key.encode("utf-8"), digestmod=hashlib.sha256)
    mac.update(body)
    return mac.hexdigest()


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def delivery(body: bytes, content_type: str, signature: str | None = "sign") -> WebhookRequest:
    headers = {"content-type": content_type, "user-agent": "go-resty/2.16.5 (https://github.com/go-resty/resty)"}
    if signature == "sign":
        headers["x-hmac-signature"] = reference_signature(KEY, body)
    elif signature is not None:
        headers["x-hmac-signature"] = signature
    return WebhookRequest(headers=headers, body=body)


def received(name: str) -> list[InboundEvent]:
    """Authenticate then map one fixture, sent with the content type of its format."""
    request = delivery(fixture(name), FORM if name.endswith(".txt") else JSON)
    KIND.authenticate(request, credentials_for(), NOW, SCHEME)
    return KIND.events(request, SCHEME)


def summary(event: InboundEvent) -> tuple[Any, ...]:
    return (event.name, event.binding, event.binding_field, event.event_id, event.seq, event.data, event.ignored)


MESSAGE_TEXT = (
    "message",
    BINDING,
    "provider_instance_id",
    "ACB5E3F1D2C4B6A8E0F2D4C6B8A0E2F4",
    1_779_282_930_000,
    {
        "id": "ACB5E3F1D2C4B6A8E0F2D4C6B8A0E2F4",
        "from": "5511987654321",
        "content": {"type": "text", "body": "Olá! Gostaria de agendar um horário para amanhã."},
        "timestamp": "2026-05-20T10:15:30-03:00",
        "lid": "123456789012345@lid",
        "name": "Maria Souza",
    },
    None,
)
READ_AT = 1_779_283_045_000
READ_RECEIPTS = [
    (
        "receipt",
        BINDING,
        "provider_instance_id",
        f"{message_id}:read",
        READ_AT,
        {"id": message_id, "status": "read"},
        None,
    )
    for message_id in ("3EB05D7A19C2E84F3B60C1", "3EB0C431E2A6F07B9D18AF")
]

EXPECTED: dict[str, list[tuple[Any, ...]]] = {
    "webhook_json_message_text.json": [MESSAGE_TEXT],
    "webhook_form_message_text.txt": [MESSAGE_TEXT],
    "webhook_json_message_extended_text.json": [
        (
            "message",
            BINDING,
            "provider_instance_id",
            "3AB4F2C19D8E7A6B5C40",
            1_779_283_050_000,
            {
                "id": "3AB4F2C19D8E7A6B5C40",
                "from": "5511987654321",
                "content": {"type": "text", "body": "Pode ser às 14h? Obrigada & até logo"},
                "replyTo": "3EB0C431E2A6F07B9D18AF",
                "timestamp": "2026-05-20T10:17:30-03:00",
                "lid": "123456789012345@lid",
                "name": "Maria Souza",
            },
            None,
        )
    ],
    "webhook_json_readreceipt_delivered.json": [
        (
            "receipt",
            BINDING,
            "provider_instance_id",
            "3EB0C431E2A6F07B9D18AF:delivered",
            1_779_283_002_000,
            {"id": "3EB0C431E2A6F07B9D18AF", "status": "delivered"},
            None,
        )
    ],
    "webhook_json_readreceipt_read.json": READ_RECEIPTS,
    "webhook_form_readreceipt_read.txt": READ_RECEIPTS,
    "webhook_json_unmappable_message_image.json": [
        (
            "message",
            BINDING,
            "provider_instance_id",
            "AC7F3D2E1B0A9C8D7E6F5A4B3C2D1E0F",
            1_779_283_230_000,
            {
                "id": "AC7F3D2E1B0A9C8D7E6F5A4B3C2D1E0F",
                "from": "5511987654321",
                "content": {
                    "type": "media",
                    "media": {
                        "kind": "image",
                        "mime_type": "image/jpeg",
                        "file_name": None,
                        "caption": "Segue o comprovante",
                        "size": 543,
                        "sha256": "0171178ae901e108f56305aff7e36268a690bc49933a24b1aaa587fda00f4d3b",
                        "seconds": None,
                        "animated": False,
                        "inline": True,
                        "stored": None,
                        "unavailable": None,
                        "source": None,
                    },
                },
                "timestamp": "2026-05-20T10:20:30-03:00",
                "lid": "123456789012345@lid",
                "name": "Maria Souza",
            },
            None,
        )
    ],
    "webhook_json_unmappable_message_group.json": [
        (
            "message",
            BINDING,
            "provider_instance_id",
            "AC12EF34AB56CD78EF90AB12CD34EF56",
            1_779_283_330_000,
            {"id": "AC12EF34AB56CD78EF90AB12CD34EF56"},
            "group message",
        )
    ],
}
CONNECTION = {
    "webhook_json_connected.json": {"connected": True},
    "webhook_json_disconnected.json": {"connected": False},
    "webhook_json_loggedout.json": {"connected": False, "reason": "logged_out:401"},
}
IGNORED_TYPES = {"webhook_json_unmappable_chatpresence.json": "unsupported event ChatPresence"}
WEBHOOK_FIXTURES = sorted(path.name for path in FIXTURES.glob("webhook_*"))


def test_every_webhook_fixture_has_an_expectation() -> None:
    assert set(WEBHOOK_FIXTURES) == set(EXPECTED) | set(CONNECTION) | set(IGNORED_TYPES)


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda vector: vector["body_file"])
def test_the_published_vectors_match_our_check_on_the_exact_fixture_bytes(vector: dict[str, str]) -> None:
    body = fixture(vector["body_file"])
    assert reference_signature(KEY, body) == vector["signature"]

    request = delivery(body, vector["content_type"], signature=vector["signature"])
    KIND.authenticate(request, credentials_for(), NOW, SCHEME)  # no error
    # What our shape check relies on: wuzapi's signed bytes start the way its code builds them.
    assert body.startswith(VECTORS["signed_bytes_start"][vector["mode"]].encode())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_signed_fixture_maps_to_the_expected_events(name: str) -> None:
    assert [summary(event) for event in received(name)] == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(CONNECTION))
def test_a_connection_fixture_maps_to_a_connection_event(name: str) -> None:
    [event] = received(name)

    assert (event.name, event.binding, event.data, event.seq, event.ignored) == (
        "connection",
        BINDING,
        CONNECTION[name],
        None,
        None,
    )
    assert event.event_id.startswith(hashlib.sha256(fixture(name)).hexdigest()[:32] + ":")


def test_every_reconnect_is_its_own_event_though_its_bytes_repeat() -> None:
    first, second = (received("webhook_json_connected.json")[0] for _ in range(2))

    assert first.event_id != second.event_id
    assert first.event_id.split(":")[0] == second.event_id.split(":")[0]


@pytest.mark.parametrize("name", sorted(IGNORED_TYPES))
def test_an_unsupported_event_is_ignored_with_its_type(name: str) -> None:
    [event] = received(name)

    assert (event.binding, event.ignored) == (BINDING, IGNORED_TYPES[name])
    assert event.event_id == hashlib.sha256(fixture(name)).hexdigest()[:32]


# --- authentication ------------------------------------------------------------------------


@pytest.mark.parametrize("name", WEBHOOK_FIXTURES)
def test_an_unsigned_delivery_is_refused(name: str) -> None:
    with pytest.raises(Unauthenticated) as refused:
        KIND.authenticate(delivery(fixture(name), JSON, signature=None), credentials_for(), NOW, SCHEME)
    assert refused.value.code == "invalid_signature"


@pytest.mark.parametrize("name", WEBHOOK_FIXTURES)
def test_a_delivery_signed_with_another_key_is_refused(name: str) -> None:
    body = fixture(name)
    forged = reference_signature("another-key-of-at-least-32-characters", body)

    with pytest.raises(Unauthenticated):
        KIND.authenticate(delivery(body, JSON, signature=forged), credentials_for(), NOW, SCHEME)


@pytest.mark.parametrize("position", [0, 100, -1])
def test_a_tampered_body_is_refused(position: int) -> None:
    body = fixture("webhook_json_message_text.json")
    signature = reference_signature(KEY, body)
    tampered = bytearray(body)
    tampered[position] ^= 0x01

    with pytest.raises(Unauthenticated):
        KIND.authenticate(delivery(bytes(tampered), JSON, signature=signature), credentials_for(), NOW, SCHEME)


@pytest.mark.parametrize("secret", [None, ""])
def test_without_a_secret_nothing_is_accepted(secret: str | None) -> None:
    with pytest.raises(Unauthenticated):
        KIND.authenticate(delivery(fixture("webhook_json_connected.json"), JSON), credentials_for(secret), NOW, SCHEME)


@pytest.mark.parametrize("signature", ["", "sha256=" + "0" * 64, "é" * 64, "v1=abc"])
def test_a_malformed_signature_is_refused(signature: str) -> None:
    with pytest.raises(Unauthenticated):
        KIND.authenticate(
            delivery(fixture("webhook_json_connected.json"), JSON, signature), credentials_for(), NOW, SCHEME
        )


def test_the_calls_capable_envelope_is_checked_and_mapped_only_for_an_envelope_provider() -> None:
    body = b'{"event":"connection","eventId":"e-1","instanceId":"inst-1","seq":7,"data":{"connected":true}}'
    stamp = str(int(NOW))
    headers = {
        "content-type": JSON,
        "x-webhook-timestamp": stamp,
        "x-webhook-signature": "v1=" + envelope.sign(KEY, stamp, body),
    }
    request = WebhookRequest(headers=headers, body=body)

    KIND.authenticate(request, credentials_for(), NOW, "envelope")
    [event] = KIND.events(request, "envelope")
    assert (event.name, event.binding, event.event_id, event.seq) == ("connection", "inst-1", "e-1", 7)

    forged = request.model_copy(update={"headers": {**headers, "x-webhook-signature": "v1=" + "0" * 64}})
    with pytest.raises(Unauthenticated):
        KIND.authenticate(forged, credentials_for(), NOW, "envelope")
    with pytest.raises(Unauthenticated):  # a plain wuzapi provider: its headers choose nothing
        KIND.authenticate(request, credentials_for(), NOW, SCHEME)


@pytest.mark.parametrize("name", ["webhook_json_message_text.json", "webhook_form_message_text.txt"])
def test_a_plain_wuzapi_delivery_authenticates_no_envelope_provider(name: str) -> None:
    request = delivery(fixture(name), FORM if name.endswith(".txt") else JSON)

    with pytest.raises(Unauthenticated):
        KIND.authenticate(request, credentials_for(), NOW, "envelope")


@pytest.mark.parametrize("scheme", ["evolution-jwt", "evolution-apikey", "meta-signature"])
def test_a_scheme_of_another_kind_authenticates_nothing(scheme: Any) -> None:
    with pytest.raises(Unauthenticated):
        KIND.authenticate(delivery(fixture("webhook_json_connected.json"), JSON), credentials_for(), NOW, scheme)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"1800000000." + fixture("webhook_form_message_text.txt"), id="an envelope's signed bytes"),
        pytest.param(b"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpYXQiOjE3NjEwNTc2Mzl9", id="a JWT's signed bytes"),
        pytest.param(b"not json at all", id="text"),
        pytest.param(b"[1, 2]", id="a JSON array"),
        pytest.param(b"\xff\xfe", id="not ASCII"),
        pytest.param(b" {}", id="JSON after a space"),
    ],
)
def test_a_signed_body_not_shaped_like_a_wuzapi_delivery_is_refused_before_any_hashing(body: bytes) -> None:
    """wuzapi's bodies start with `{` (JSON) or a form field name and `=` (`instanceName=` first,
    as `url.Values.Encode` sorts keys); the bytes other schemes sign never do."""
    credentials = credentials_for()

    with pytest.raises(Unauthenticated):
        KIND.authenticate(delivery(body, FORM), credentials, NOW, SCHEME)
    assert credentials.secret_reads == 0


# --- mapping variants (same fixtures, one field changed) -----------------------------------


def json_variant(name: str, change: Any) -> WebhookRequest:
    payload = json.loads(fixture(name))
    change(payload)
    return delivery(json.dumps(payload).encode(), JSON)


def mapped(request: WebhookRequest) -> list[InboundEvent]:
    KIND.authenticate(request, credentials_for(), NOW, SCHEME)
    return KIND.events(request, SCHEME)


def _info(payload: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = payload["event"]["Info"]
    return info


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda p: _info(p).update(IsFromMe=True), "sent from the phone"),
        (lambda p: _info(p).update(Sender="123456789012345@lid", SenderAlt=""), "sender has no phone number"),
        (lambda p: _info(p).update(Chat="status@broadcast", IsGroup=True), "broadcast message"),
        (lambda p: p["event"].update(Message={"reactionMessage": {"text": "👍"}}), "reaction without its message"),
        (lambda p: p["event"].update(Message={"locationMessage": {}}), "location without coordinates"),
        (lambda p: p["event"].update(Message={"conversation": ""}), "unsupported message conversation"),
        (lambda p: p["event"].update(Message={"pollUpdateMessage": {}}), "poll vote (encrypted)"),
        (lambda p: p["event"].update(Message=None), "message without content"),
    ],
)
def test_a_message_that_does_not_map_is_ignored_with_its_reason(change: Any, reason: str) -> None:
    [event] = mapped(json_variant("webhook_json_message_text.json", change))

    assert (event.name, event.event_id, event.ignored) == ("message", "ACB5E3F1D2C4B6A8E0F2D4C6B8A0E2F4", reason)
    assert "content" not in event.data


def test_a_sender_with_a_device_part_gives_the_digits_only() -> None:
    request = json_variant(
        "webhook_json_message_text.json", lambda p: _info(p).update(Sender="5511987654321:7@s.whatsapp.net")
    )

    [event] = mapped(request)

    assert event.data["from"] == "5511987654321"


@pytest.mark.parametrize(
    ("state", "from_me", "reason"),
    [
        ("ReadSelf", False, "read on another of our devices"),
        ("Read", True, "our own read of an incoming message"),
        ("Played", False, "unsupported receipt Played"),
    ],
)
def test_a_receipt_that_is_not_the_recipients_is_ignored(state: str, from_me: bool, reason: str) -> None:
    def change(payload: dict[str, Any]) -> None:
        payload["state"] = state
        payload["event"]["IsFromMe"] = from_me

    events = mapped(json_variant("webhook_json_readreceipt_read.json", change))

    assert [event.ignored for event in events] == [reason, reason]
    assert all("status" not in event.data for event in events)


def test_delivered_and_read_of_one_message_are_distinct_events() -> None:
    [delivered] = received("webhook_json_readreceipt_delivered.json")
    read_ids = {event.event_id for event in received("webhook_json_readreceipt_read.json")}

    assert delivered.data["id"] == "3EB0C431E2A6F07B9D18AF"
    assert delivered.event_id not in read_ids
    assert "3EB0C431E2A6F07B9D18AF:read" in read_ids


def test_without_an_instance_name_the_user_id_binds() -> None:
    [event] = mapped(json_variant("webhook_json_connected.json", lambda p: p.update(instanceName="")))

    assert event.binding == "a3f1c2d4e5b60718293a4b5c6d7e8f90"


def test_a_form_without_an_instance_name_binds_by_user_id() -> None:
    body = urlencode({"jsonData": '{"event":{},"type":"Disconnected"}', "userID": "a3f1c2d4"}).encode()

    [event] = mapped(delivery(body, FORM))

    assert (event.binding, event.data) == ("a3f1c2d4", {"connected": False})


def test_a_body_without_content_type_is_recognised_by_its_shape() -> None:
    json_body = fixture("webhook_json_connected.json")
    form_body = fixture("webhook_form_readreceipt_read.txt")

    assert mapped(delivery(json_body, ""))[0].name == "connection"
    assert [event.name for event in mapped(delivery(form_body, ""))] == ["receipt", "receipt"]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"not json at all", JSON),
        (b"[1, 2]", JSON),
        (b'{"event": {}}', JSON),
        (b'{"type": "Message", "instanceName": "x", "event": {"Info": {}}}', JSON),
        (b'{"type": "Connected", "event": {}}', JSON),
        (b"instanceName=x&userID=y", FORM),
        (b"instanceName=x&jsonData=not-json", FORM),
        (b"jsonData=%7B%7D&jsonData=%7B%7D", FORM),
        (b"\xff\xfe", FORM),
    ],
)
def test_a_body_that_is_not_a_wuzapi_event_is_invalid_input(body: bytes, content_type: str) -> None:
    with pytest.raises(InvalidInput) as invalid:
        KIND.events(delivery(body, content_type), SCHEME)
    assert invalid.value.code == "invalid_payload"


@pytest.mark.parametrize(
    ("push_name", "name"),
    [
        ("", None),
        ("   ", None),
        (" Zé\t Silva\n", "Zé Silva"),
        ("Família 👨\u200d👩\u200d👧", "Família 👨\u200d👩\u200d👧"),
    ],
)
def test_the_push_name_is_the_senders_name_when_whatsapp_sent_one(push_name: str, name: str | None) -> None:
    [event] = mapped(json_variant("webhook_json_message_text.json", lambda p: _info(p).update(PushName=push_name)))

    assert (event.ignored, event.data.get("name")) == (None, name)


def test_a_phone_addressed_sender_without_a_lid_has_none() -> None:
    [event] = mapped(json_variant("webhook_json_message_text.json", lambda p: _info(p).update(SenderAlt="")))

    assert (event.ignored, event.data["from"], "lid" in event.data) == (None, "5511987654321", False)

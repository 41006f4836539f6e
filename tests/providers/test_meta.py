"""The Meta Cloud API kind against the real-shaped fixtures in tests/contracts/meta.

Webhook bodies are read as raw bytes and never re-serialised (their signatures depend on them);
signatures are recomputed here with an HMAC written independently of `switchboard.providers.meta`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from switchboard.core.errors import (
    Forbidden,
    InvalidInput,
    ProviderRejected,
    ProviderThrottled,
    ProviderTimeout,
    ProviderUnavailable,
    Unauthenticated,
)
from switchboard.providers import envelope
from switchboard.providers.base import InboundEvent, ProviderTarget, WebhookRequest
from switchboard.providers.kinds import WebhookScheme, spec_for
from switchboard.providers.meta import DEFAULT_API_VERSION, KIND, MetaCloudClient
from tools.support.aws import REGION
from tools.support.fakes import FakeCredentials

CONTRACTS = Path(__file__).resolve().parents[1] / "contracts" / "meta"
INDEX = json.loads((CONTRACTS / "index.json").read_text())
APP_SECRET = INDEX["app_secret_for_signatures"]
VERIFY_TOKEN = INDEX["verify"]["verify_query.json"]["configured_verify_token"]
NOW = 1_800_000_000.0
TOKEN = "EAAG-meta-access-token-for-tests"
PHONE_ID = "106540352242922"


SCHEME: WebhookScheme = "meta-signature"  # how the provider of these deliveries is saved


def credentials_for(
    webhook_secret: str | None = APP_SECRET, verify_token: str | None = VERIFY_TOKEN
) -> FakeCredentials:
    return FakeCredentials(webhook_secret=webhook_secret, verify_token=verify_token)


def raw(name: str) -> bytes:
    return (CONTRACTS / name).read_bytes()


def reference_signature(secret: str, body: bytes) -> str:
    mac = hmac.HMAC(secret.encode("utf-8"), digestmod=hashlib.sha256)
    mac.update(body)
    return "sha256=" + mac.hexdigest()


def fixture_request(name: str) -> WebhookRequest:
    """The fixture as Meta would deliver it: raw bytes and the headers of index.json, lower-cased."""
    headers = {header.lower(): value for header, value in INDEX["webhooks"][name]["headers"].items()}
    return WebhookRequest(headers=headers, body=raw(name))


def signed(body: bytes, secret: str = APP_SECRET) -> WebhookRequest:
    return WebhookRequest(headers={"x-hub-signature-256": reference_signature(secret, body)}, body=body)


def receive(request: WebhookRequest) -> list[InboundEvent]:
    KIND.authenticate(request, credentials_for(), NOW, SCHEME)
    return KIND.events(request, SCHEME)


def summary(event: InboundEvent) -> tuple[Any, ...]:
    return (event.name, event.binding, event.binding_field, event.event_id, event.seq, event.data, event.ignored)


# --- the fixtures, end to end -------------------------------------------------------------

WAMID_TEXT = "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="
WAMID_SENT = "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA="
WAMID_FAILED = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI0QUQ2MjA4NEYyRkExNjMyREUA"
POOL_PHONE_ID = "1122334455667"
HEALTHY_ECOSYSTEM = "This message was not delivered to maintain healthy ecosystem engagement."
TEXT_BODY = "Does it come in another color?"
TEXT_DATA = {
    "id": WAMID_TEXT,
    "from": "16505551234",
    "content": {"type": "text", "body": TEXT_BODY},
    "timestamp": "2025-06-08T20:59:43+00:00",
    "name": "Sheena Nelson",
}

# pywa's image: a media id to fetch, and a `sha256` that is not 32 bytes of base64 (no claim).
IMAGE_DATA = {
    "id": "wamid.xyzxyz",
    "from": "972987654321",
    "content": {
        "type": "media",
        "media": {
            "kind": "image",
            "mime_type": "image/jpeg",
            "file_name": None,
            "caption": None,
            "size": None,
            "sha256": None,
            "seconds": None,
            "animated": False,
            "inline": False,
            "stored": None,
            "unavailable": None,
            "source": {"via": "meta_media_id", "media_id": "65463453", "url": None, "fields": {}},
        },
    },
    "timestamp": "2023-10-11T16:56:19+00:00",
    "name": "Test Name",
}

EXPECTED: dict[str, list[tuple[Any, ...]]] = {
    "webhook_text_message.json": [
        (
            "message",
            PHONE_ID,
            "meta_phone_id",
            WAMID_TEXT,
            1749416383000,
            TEXT_DATA,
            None,
        )
    ],
    # The same example with `timestamp` written as a JSON number, as Meta writes it elsewhere.
    "webhook_text_message_numeric_timestamp.json": [
        ("message", PHONE_ID, "meta_phone_id", WAMID_TEXT, 1749416383000, TEXT_DATA, None)
    ],
    # pywa's image beside Meta's text in one change: both mapped.
    "webhook_text_and_image_messages.json": [
        ("message", PHONE_ID, "meta_phone_id", "wamid.xyzxyz", 1697043379000, IMAGE_DATA, None),
        ("message", PHONE_ID, "meta_phone_id", WAMID_TEXT, 1749416383000, TEXT_DATA, None),
    ],
    "webhook_text_message_bsuid_only.json": [
        (
            "message",
            PHONE_ID,
            "meta_phone_id",
            "wamid.cloud-bsuid-only-message",
            1778579582000,
            {"id": "wamid.cloud-bsuid-only-message"},
            "sender has no phone number",
        )
    ],
    "webhook_image_message.json": [
        (
            "message",
            POOL_PHONE_ID,
            "meta_phone_id",
            "wamid.xyzxyz",
            1697043379000,
            IMAGE_DATA,
            None,
        )
    ],
    "webhook_unsupported_message.json": [
        (
            "message",
            POOL_PHONE_ID,
            "meta_phone_id",
            "wamid.xyzxyz",
            1697044706000,
            {"id": "wamid.xyzxyz"},
            "unsupported message (131051)",
        )
    ],
    "webhook_status_sent.json": [
        (
            "receipt",
            PHONE_ID,
            "meta_phone_id",
            f"{WAMID_SENT}:sent",
            1750030073000,
            {"id": WAMID_SENT, "status": "sent"},
            "sent status",
        )
    ],
    "webhook_status_sent_v24.json": [
        (
            "receipt",
            PHONE_ID,
            "meta_phone_id",
            f"{WAMID_SENT}:sent",
            1750030073000,
            {"id": WAMID_SENT, "status": "sent"},
            "sent status",
        )
    ],
    "webhook_status_delivered.json": [
        (
            "receipt",
            POOL_PHONE_ID,
            "meta_phone_id",
            "wamid.xyzxyz:delivered",
            1698266945000,
            {"id": "wamid.xyzxyz", "status": "delivered"},
            None,
        )
    ],
    "webhook_status_read.json": [
        (
            "receipt",
            POOL_PHONE_ID,
            "meta_phone_id",
            "wamid.xyzxyz:read",
            1689380458000,
            {"id": "wamid.xyzxyz", "status": "read"},
            None,
        )
    ],
    "webhook_status_failed_131049.json": [
        (
            "receipt",
            PHONE_ID,
            "meta_phone_id",
            f"{WAMID_FAILED}:failed",
            1751142888000,
            {"id": WAMID_FAILED, "status": "failed", "errors": [{"code": 131049, "title": HEALTHY_ECOSYSTEM}]},
            None,
        )
    ],
}


def test_every_webhook_fixture_has_an_expectation() -> None:
    assert set(EXPECTED) == set(INDEX["webhooks"])
    assert set(EXPECTED) == {path.name for path in CONTRACTS.glob("webhook_*.json")}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_index_signature_is_the_hmac_of_the_raw_fixture(name: str) -> None:
    assert INDEX["webhooks"][name]["headers"]["X-Hub-Signature-256"] == reference_signature(APP_SECRET, raw(name))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_signed_fixture_is_authenticated_and_mapped(name: str) -> None:
    events = receive(fixture_request(name))

    assert [summary(event) for event in events] == EXPECTED[name]


def test_the_kind_is_registered_and_always_connected() -> None:
    assert spec_for("meta") is KIND
    assert KIND.always_connected is True


# --- authentication ------------------------------------------------------------------------


def forged_requests() -> list[tuple[str, WebhookRequest, FakeCredentials]]:
    body = raw("webhook_text_message.json")
    good = reference_signature(APP_SECRET, body)
    tampered = bytearray(body)
    tampered[len(body) // 2] ^= 0x01

    def with_header(value: str, name: str = "x-hub-signature-256", payload: bytes = body) -> WebhookRequest:
        return WebhookRequest(headers={name: value}, body=payload)

    return [
        ("wrong secret", signed(body, "another-app-secret"), credentials_for()),
        ("tampered body", with_header(good, payload=bytes(tampered)), credentials_for()),
        ("no header", WebhookRequest(body=body), credentials_for()),
        ("no prefix", with_header(good.removeprefix("sha256=")), credentials_for()),
        ("sha1 prefix", with_header(good.replace("sha256=", "sha1=")), credentials_for()),
        ("truncated", with_header(good[:-2]), credentials_for()),
        ("two entries", with_header(f"{good},{good}"), credentials_for()),
        (
            "another body's",
            with_header(reference_signature(APP_SECRET, raw("webhook_status_read.json"))),
            credentials_for(),
        ),
        ("SHA-1 header only", with_header(good, name="x-hub-signature"), credentials_for()),
        ("no secret set", signed(body), credentials_for(webhook_secret=None)),
        ("empty secret", signed(body, ""), credentials_for(webhook_secret="")),
    ]


@pytest.mark.parametrize(("case", "request_", "credentials"), forged_requests(), ids=lambda value: str(value)[:20])
def test_a_forged_delivery_is_refused_with_the_one_answer(
    case: str, request_: WebhookRequest, credentials: FakeCredentials
) -> None:
    with pytest.raises(Unauthenticated) as refused:
        KIND.authenticate(request_, credentials, NOW, SCHEME)

    expected = envelope.refused()
    assert (refused.value.code, refused.value.message) == (expected.code, expected.message), case


def test_an_upper_case_hex_signature_is_accepted() -> None:
    body = raw("webhook_text_message.json")
    header = "sha256=" + reference_signature(APP_SECRET, body)[7:].upper()

    KIND.authenticate(
        WebhookRequest(headers={"x-hub-signature-256": header}, body=body), credentials_for(), NOW, SCHEME
    )


def test_the_signature_covers_the_raw_bytes_not_a_re_serialisation() -> None:
    # Meta signs its escaped-unicode serialisation: parsing and dumping again would change the bytes.
    body = (
        b'{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":'
        b'{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"'
        + PHONE_ID.encode()
        + b'"},"messages":[{"from":"+55 11 98888-7777","id":"wamid.u1","timestamp":"1749416383",'
        b'"type":"text","text":{"body":"ol\\u00e1 \\ud83d\\ude00"}}]}}]}]}'
    )
    assert json.dumps(json.loads(body)).encode() != body

    [event] = receive(signed(body))

    assert event.data["content"] == {"type": "text", "body": "olá 😀"}
    assert event.data["from"] == "5511988887777"


# --- mapping beyond the fixtures -----------------------------------------------------------


def notification(*changes: dict[str, Any], object_: str = "whatsapp_business_account") -> bytes:
    return json.dumps({"object": object_, "entry": [{"id": "102290129340398", "changes": list(changes)}]}).encode()


def messages_change(**value: Any) -> dict[str, Any]:
    metadata = {"display_phone_number": "15550783881", "phone_number_id": PHONE_ID}
    return {"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": metadata, **value}}


def status(wamid: str, state: str, timestamp: str | int = "1750030073", **extra: Any) -> dict[str, Any]:
    return {"id": wamid, "status": state, "timestamp": timestamp, "recipient_id": "16505551234", **extra}


def test_a_played_voice_message_is_a_read_receipt() -> None:
    [event] = KIND.events(signed(notification(messages_change(statuses=[status("wamid.v", "played")]))), SCHEME)

    assert (event.name, event.event_id, event.data, event.ignored) == (
        "receipt",
        "wamid.v:played",
        {"id": "wamid.v", "status": "read"},
        None,
    )


def test_a_failed_status_without_errors_keeps_an_empty_list() -> None:
    [event] = KIND.events(signed(notification(messages_change(statuses=[status("wamid.f", "failed")]))), SCHEME)

    assert event.data == {"id": "wamid.f", "status": "failed", "errors": []}
    assert event.ignored is None


def test_an_unknown_status_is_ignored_with_its_name() -> None:
    [event] = KIND.events(signed(notification(messages_change(statuses=[status("wamid.d", "deleted")]))), SCHEME)

    assert (event.name, event.event_id, event.ignored) == ("receipt", "wamid.d:deleted", "deleted status")


def test_every_entry_change_message_and_status_is_mapped() -> None:
    text = {"from": "16505551234", "id": "wamid.a", "timestamp": "1749416383", "type": "text", "text": {"body": "a"}}
    reaction = {"from": "16505551234", "id": "wamid.b", "timestamp": "1749416384", "type": "reaction"}
    body = json.dumps(
        {
            "object": "whatsapp_business_account",
            "entry": [
                {"id": "1", "changes": [messages_change(messages=[text, reaction])]},
                {
                    "id": "2",
                    "changes": [
                        messages_change(
                            statuses=[status("wamid.x", "delivered"), status("wamid.x", "read", "1750030074")]
                        )
                    ],
                },
            ],
        }
    ).encode()

    events = KIND.events(signed(body), SCHEME)

    assert [(event.event_id, event.seq, event.ignored) for event in events] == [
        ("wamid.a", 1749416383000, None),
        ("wamid.b", 1749416384000, "reaction without its message"),
        ("wamid.x:delivered", 1750030073000, None),
        ("wamid.x:read", 1750030074000, None),
    ]


def test_a_reply_is_a_text_message_naming_the_message_it_quotes() -> None:
    reply = {
        "context": {"from": "15550783881", "id": "wamid.orig"},
        "from": "16505551234",
        "id": "wamid.reply",
        "timestamp": "1749416383",
        "type": "text",
        "text": {"body": "yes"},
    }
    [event] = KIND.events(signed(notification(messages_change(messages=[reply]))), SCHEME)

    assert event.ignored is None
    assert (event.data["content"], event.data["replyTo"]) == ({"type": "text", "body": "yes"}, "wamid.orig")


def test_a_messages_change_with_only_errors_is_one_ignored_event() -> None:
    errors = [{"code": 131000, "title": "Something went wrong"}]
    body = notification(messages_change(errors=errors))

    [event] = KIND.events(signed(body), SCHEME)

    assert (event.binding, event.binding_field, event.ignored) == (
        PHONE_ID,
        "meta_phone_id",
        "messages change without messages or statuses",
    )
    assert KIND.events(signed(body), SCHEME)[0].event_id == event.event_id  # a redelivery deduplicates


def test_another_field_with_metadata_is_ignored_and_one_without_gives_no_event() -> None:
    with_metadata = {"field": "message_echoes", "value": {"metadata": {"phone_number_id": PHONE_ID}}}
    without = {"field": "account_update", "value": {"phone_number": "15550783881", "event": "VERIFIED_ACCOUNT"}}

    events = KIND.events(signed(notification(with_metadata, without)), SCHEME)

    assert [(event.name, event.binding, event.ignored) for event in events] == [
        ("message_echoes", PHONE_ID, "message_echoes field")
    ]


def test_an_unknown_object_is_ignored_per_change() -> None:
    body = notification(messages_change(statuses=[status("wamid.p", "delivered")]), object_="page")

    [event] = KIND.events(signed(body), SCHEME)

    assert (event.binding, event.ignored) == (PHONE_ID, "page object")


def test_a_provider_chosen_word_is_made_safe_before_it_is_recorded() -> None:
    odd = {"from": "16505551234", "id": "wamid.o", "timestamp": "1", "type": "x y\n" + "z" * 100}

    [event] = KIND.events(signed(notification(messages_change(messages=[odd]))), SCHEME)

    assert event.ignored == "x_y_" + "z" * 36 + " message"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[]",
        b'{"object":"whatsapp_business_account"}',
        b'{"object":"whatsapp_business_account","entry":{}}',
    ],
)
def test_a_body_that_is_no_notification_is_invalid_input(body: bytes) -> None:
    with pytest.raises(InvalidInput) as raised:
        KIND.events(signed(body), SCHEME)
    assert raised.value.code == "invalid_envelope"


TEXT = {"from": "16505551234", "id": "wamid.ok", "timestamp": "1749416383", "type": "text", "text": {"body": "hi"}}


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        ({"from": "1", "timestamp": "1", "type": "text"}, "id"),
        ({"id": "w", "from": "1", "timestamp": "1.5", "type": "text"}, "timestamp"),
        ({"id": "w", "from": "1", "timestamp": True, "type": "text"}, "timestamp"),
        ({"id": "w", "from": "1", "timestamp": "1", "type": "text", "text": "a string"}, "text"),
        ({"id": 7, "from": 1, "timestamp": "1", "type": "text"}, "from, id"),
        ("not an object", "shape"),
    ],
)
def test_a_message_that_does_not_map_is_ignored_with_its_fields_and_the_others_are_mapped(
    item: Any, reason: str
) -> None:
    body = notification(messages_change(messages=[item, TEXT]))

    bad, good = KIND.events(signed(body), SCHEME)
    again, _ = KIND.events(signed(body), SCHEME)

    assert (bad.name, bad.binding, bad.ignored) == (
        "message",
        PHONE_ID,
        f"message item not in the Cloud API format ({reason})",
    )
    assert bad.event_id.startswith("malformed:") and again.event_id == bad.event_id  # a redelivery deduplicates
    assert (good.event_id, good.ignored, good.data["content"]["body"]) == ("wamid.ok", None, "hi")


def test_a_status_that_does_not_map_is_ignored_and_the_others_are_mapped() -> None:
    body = notification(messages_change(statuses=[{"id": "w", "timestamp": "1"}, status("wamid.d", "delivered")]))

    bad, good = KIND.events(signed(body), SCHEME)

    assert (bad.name, bad.data, bad.ignored) == (
        "receipt",
        {"id": "w"},
        "receipt item not in the Cloud API format (status)",
    )
    assert (good.event_id, good.data, good.ignored) == (
        "wamid.d:delivered",
        {"id": "wamid.d", "status": "delivered"},
        None,
    )


def test_unix_seconds_and_error_codes_are_read_from_a_number_or_a_digit_string() -> None:
    statuses = [
        status("wamid.n", "failed", timestamp=1750030073, errors=[{"code": "131049", "title": "t"}]),
        status("wamid.s", "failed", timestamp="1750030073", errors=[{"code": 131049, "title": "t"}]),
    ]

    events = KIND.events(signed(notification(messages_change(statuses=statuses))), SCHEME)

    assert [(event.seq, event.data["errors"], event.ignored) for event in events] == [
        (1750030073000, [{"code": 131049, "title": "t"}], None)
    ] * 2


def test_a_change_that_does_not_bind_gives_no_event_and_keeps_the_others() -> None:
    unbound = [
        {"field": "messages", "value": {"messages": [TEXT]}},  # no metadata
        {"field": "messages", "value": {"metadata": {"phone_number_id": "../x"}, "messages": [TEXT]}},
    ]

    events = KIND.events(signed(notification(*unbound, messages_change(messages=[TEXT]))), SCHEME)

    assert [(event.event_id, event.ignored) for event in events] == [("wamid.ok", None)]


def test_a_change_or_an_entry_out_of_shape_is_ignored_where_it_can_be_bound() -> None:
    body = json.dumps(
        {
            "object": "whatsapp_business_account",
            "entry": [
                "not an entry",
                {"id": "1", "changes": "not a list"},
                {
                    "id": "2",
                    "changes": [
                        {"value": {"metadata": {"phone_number_id": PHONE_ID}}},
                        messages_change(messages=[TEXT]),
                    ],
                },
                {"id": "3", "changes": [messages_change(messages="not a list")]},
            ],
        }
    ).encode()

    events = KIND.events(signed(body), SCHEME)

    assert [(event.binding, event.ignored) for event in events] == [
        (PHONE_ID, "change not in the Cloud API format (field)"),
        (PHONE_ID, None),
        (PHONE_ID, "messages change not in the Cloud API format"),
    ]


def test_each_sender_gets_the_profile_name_of_its_own_contact() -> None:
    other = {**TEXT, "from": "5511988887777", "id": "wamid.two"}
    contacts = [
        {"profile": {"name": "Ana\u0007 Souza  "}, "wa_id": "5511988887777"},
        {"profile": {"name": "Sheena Nelson"}, "wa_id": "16505551234"},
    ]
    body = notification(messages_change(contacts=contacts, messages=[TEXT, other]))

    events = KIND.events(signed(body), SCHEME)

    assert [event.data.get("name") for event in events] == ["Sheena Nelson", "Ana Souza"]


@pytest.mark.parametrize(
    "contacts",
    [None, [], "not a list", [{"profile": "not an object", "wa_id": "16505551234"}], [{"wa_id": "16505551234"}]],
)
def test_without_a_usable_contact_the_message_maps_without_a_name(contacts: Any) -> None:
    body = notification(messages_change(contacts=contacts, messages=[TEXT]))

    [event] = KIND.events(signed(body), SCHEME)

    assert (event.ignored, "name" in event.data, event.data["content"]["body"]) == (None, False, "hi")


# --- subscription check --------------------------------------------------------------------


def verify_query() -> dict[str, str]:
    query: dict[str, str] = json.loads(raw("verify_query.json"))
    return query


def test_the_verify_query_answers_its_challenge() -> None:
    expected = INDEX["verify"]["verify_query.json"]["expected_answer"]["body"]

    assert KIND.verify_subscription(verify_query(), credentials_for()) == expected == "1158201444"


@pytest.mark.parametrize(
    ("change", "credentials"),
    [
        ({"hub.verify_token": "vibecodinG"}, credentials_for()),
        ({"hub.verify_token": ""}, credentials_for()),
        ({"hub.verify_token": None}, credentials_for()),
        ({"hub.mode": "unsubscribe"}, credentials_for()),
        ({"hub.mode": None}, credentials_for()),
        ({}, credentials_for(verify_token=None)),
        ({"hub.verify_token": ""}, credentials_for(verify_token="")),
        ({"hub.challenge": None}, credentials_for()),
        ({"hub.challenge": ""}, credentials_for()),
        ({"hub.challenge": "1" * 257}, credentials_for()),
        ({"hub.challenge": "<b>1</b> 2"}, credentials_for()),
        ({"hub.challenge": "12\r\n34"}, credentials_for()),
        ({"hub.challenge": "ççç"}, credentials_for()),
    ],
)
def test_a_failed_check_is_forbidden(change: dict[str, str | None], credentials: FakeCredentials) -> None:
    merged = {**verify_query(), **change}
    query = {name: value for name, value in merged.items() if value is not None}

    with pytest.raises(Forbidden) as refused:
        KIND.verify_subscription(query, credentials)
    assert refused.value.code == "verification_failed"
    assert VERIFY_TOKEN not in refused.value.message


def test_a_challenge_of_256_printable_characters_is_echoed_unchanged() -> None:
    challenge = "A1-_.~!" * 36 + "abcd"
    assert len(challenge) == 256

    assert KIND.verify_subscription({**verify_query(), "hub.challenge": challenge}, credentials_for()) == challenge


# --- sending -------------------------------------------------------------------------------


class Recorder:
    """A MockTransport that records requests and replays `respond`."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response]) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._respond(request)


def replay(status_code: int, content: bytes) -> Recorder:
    return Recorder(
        lambda _: httpx.Response(status_code, content=content, headers={"content-type": "application/json"})
    )


def target(meta_phone_id: str | None = PHONE_ID) -> ProviderTarget:
    return ProviderTarget(
        kind="meta",
        base_url="http://127.0.0.1:8081",
        provider_instance_id="inst-meta",
        meta_phone_id=meta_phone_id,
        instance_token=TOKEN,
    )


def send(recorder: Recorder, to: ProviderTarget | None = None) -> str:
    client = MetaCloudClient(local_mode=True, transport=recorder.transport)
    return client.send_text(
        to or target(), "16505551234", "Does it come in another color?", "key-1"
    ).provider_message_id


def test_send_posts_the_text_body_and_returns_the_wamid() -> None:
    recorder = replay(200, raw("send_success.json"))

    wamid = send(recorder)

    [request] = recorder.requests
    assert wamid == "wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"
    assert (request.method, request.url.path) == ("POST", f"/{DEFAULT_API_VERSION}/{PHONE_ID}/messages")
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "16505551234",
        "type": "text",
        "text": {"body": "Does it come in another color?", "preview_url": False},
    }


def test_send_has_the_shape_of_the_documented_request() -> None:
    recorder = replay(200, raw("send_success.json"))
    send(recorder)

    documented = json.loads(raw("send_text_request.json"))
    sent = json.loads(recorder.requests[0].content)
    assert set(sent) == set(documented)
    assert set(sent["text"]) == set(documented["text"])


def test_without_a_meta_phone_id_the_instance_id_is_the_phone_number_id() -> None:
    recorder = replay(200, raw("send_success.json"))

    send(recorder, target(meta_phone_id=None))

    assert recorder.requests[0].url.path == f"/{DEFAULT_API_VERSION}/inst-meta/messages"


def test_send_without_an_access_token_is_refused_before_any_request() -> None:
    recorder = replay(200, raw("send_success.json"))
    client = MetaCloudClient(local_mode=True, transport=recorder.transport)

    with pytest.raises(InvalidInput):
        client.send_text(target().model_copy(update={"instance_token": None}), "16505551234", "x", "key-1")
    assert recorder.requests == []


@pytest.mark.parametrize(
    ("name", "error", "code"),
    [
        ("send_error_130429.json", ProviderThrottled, "130429"),
        ("send_error_131056.json", ProviderThrottled, "131056"),
        ("send_error_190.json", ProviderRejected, "190"),
    ],
)
def test_each_recorded_error_maps_on_its_meta_code(name: str, error: type[Exception], code: str) -> None:
    status_code = INDEX["send"][name]["status"]
    content = raw(name)

    with pytest.raises(error) as raised:
        send(replay(status_code, content))

    assert type(raised.value) is error
    assert raised.value.details["provider_code"] == code  # type: ignore[attr-defined]  # details is set by the provider errors under test, not by the base class
    assert raised.value.details["status"] == status_code  # type: ignore[attr-defined]  # details is set by the provider errors under test, not by the base class
    assert f"({status_code} {code})" in str(raised.value)
    meta_error = json.loads(content)["error"]
    for leaked in (TOKEN, meta_error["message"], meta_error["fbtrace_id"], "127.0.0.1"):
        assert leaked not in str(raised.value)


@pytest.mark.parametrize("status_code", [400, 429])
def test_the_pair_rate_limit_is_retryable_whatever_the_http_status(status_code: int) -> None:
    with pytest.raises(ProviderUnavailable) as raised:
        send(replay(status_code, raw("send_error_131056.json")))
    assert raised.value.retryable is True
    assert raised.value.details["rate_limited"] is True


def meta_error(code: int) -> bytes:
    return json.dumps(
        {"error": {"message": f"(#{code}) x", "type": "OAuthException", "code": code, "fbtrace_id": "Ab"}}
    ).encode()


@pytest.mark.parametrize(
    ("status_code", "code", "error"),
    [
        (429, 80007, ProviderUnavailable),
        (400, 80007, ProviderUnavailable),
        (429, 4, ProviderUnavailable),
        (400, 100, ProviderRejected),
        (400, 131026, ProviderRejected),
        (400, 131047, ProviderRejected),
        (400, 131049, ProviderRejected),
        (403, 190, ProviderRejected),
        (400, 131030, ProviderRejected),
        (500, 131000, ProviderUnavailable),
        (503, 131016, ProviderUnavailable),
    ],
)
def test_meta_codes_map_to_provider_errors(status_code: int, code: int, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        send(replay(status_code, meta_error(code)))
    assert type(raised.value) is error
    assert str(code) in str(raised.value)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (httpx.Response(502, text="<html>bad gateway</html>"), ProviderUnavailable),
        (httpx.Response(500), ProviderUnavailable),
        (httpx.Response(404, text="not found"), ProviderRejected),
        (httpx.Response(200, text="<html>not json</html>"), ProviderTimeout),
        (httpx.Response(200, json={"messages": []}), ProviderTimeout),
        (httpx.Response(200, json={"error": {"code": 100}}), ProviderTimeout),
    ],
)
def test_answers_without_a_meta_code(answer: httpx.Response, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        send(Recorder(lambda _: answer))
    assert TOKEN not in str(raised.value)


def test_a_number_has_no_calls_and_announces_none_without_a_request() -> None:
    recorder = replay(500, b"")
    client = MetaCloudClient(local_mode=True, transport=recorder.transport)

    assert client.capabilities(target()).calls is False
    assert recorder.requests == []


# --- through the API: the real ingest on moto ---------------------------------------------


@pytest.fixture
def meta_provider(client: Any, make_tenant: Any) -> str:
    """Tenant `acme`'s Cloud API number `PHONE_ID`, its provider signing with the fixtures' app secret."""
    tenant = make_tenant("acme")
    body = {"number": "15550783881", "displayName": "Cloud", "metaPhoneId": PHONE_ID}
    number = client.post("/api/numbers", key=tenant.admin, json_body=body)
    assert number.status == 201, number.body
    provider_body = {
        "name": "cloud",
        "kind": "meta",
        "baseUrl": "http://127.0.0.1:8090",
        "webhookSecret": APP_SECRET,
        "verifyToken": VERIFY_TOKEN,
        "adminToken": TOKEN,
    }
    provider = client.post("/api/providers", key=tenant.admin, json_body=provider_body)
    assert provider.status == 201, provider.body
    instance = {
        "providerId": provider.json()["id"],
        "providerInstanceId": PHONE_ID,
        "numberId": number.json()["id"],
        "token": TOKEN,
        "kind": "messages",
    }
    assert client.put("/api/instances/acme-cloud", key=tenant.admin, json_body=instance).status == 201
    provider_id: str = provider.json()["id"]
    return provider_id


def deliver_meta(client: Any, provider_id: str, body: bytes) -> Any:
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": reference_signature(APP_SECRET, body)}
    return client.post(f"/webhooks/{provider_id}", body=body, headers=headers)


def forwarded_jobs(aws: Any) -> list[dict[str, Any]]:
    return [json.loads(message["Body"]) for message in aws.queue_messages("ForwardQueue")]


def test_through_the_api_an_unmappable_item_beside_a_text_is_recorded_and_the_text_forwarded_with_its_name(
    client: Any, aws: Any, meta_provider: str
) -> None:
    broken = {"from": "16505551234", "id": "wamid.broken", "timestamp": "1749416383", "type": "text", "text": "x"}
    documented = json.loads(raw("webhook_text_message.json"))
    value = documented["entry"][0]["changes"][0]["value"]
    value["messages"].insert(0, broken)
    body = json.dumps(documented).encode()

    answer = deliver_meta(client, meta_provider, body)
    again = deliver_meta(client, meta_provider, body)

    assert (answer.status, answer.json()["outcome"]) == (200, "applied")
    assert (again.status, again.json()["outcome"]) == (200, "duplicate")
    [job] = forwarded_jobs(aws)
    assert (job["sender_name"], job["sender"], job["text"]) == ("Sheena Nelson", "16505551234", TEXT_BODY)
    [record] = [item for item in stored_events(aws) if item.get("status") == "ignored"]
    assert record["reason"] == "message item not in the Cloud API format (text)"


@pytest.mark.parametrize(
    "name", ["webhook_text_message_numeric_timestamp.json", "webhook_text_and_image_messages.json"]
)
def test_through_the_api_each_multi_shape_fixture_forwards_its_text_once(
    client: Any, aws: Any, meta_provider: str, name: str
) -> None:
    answer = deliver_meta(client, meta_provider, raw(name))

    assert (answer.status, answer.json()["outcome"]) == (200, "applied")
    jobs = [(job["sender"], job["text"], job["sender_name"]) for job in forwarded_jobs(aws)]
    assert jobs.count(("16505551234", TEXT_BODY, "Sheena Nelson")) == 1
    # any other item of the delivery reaches the agent as what it is, never as that text again
    assert all(job[1] != TEXT_BODY for job in jobs if job[0] != "16505551234")


def stored_events(aws: Any) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    return [item for item in table.scan()["Items"] if str(item["pk"]).startswith("WHEVENT#")]

"""Properties of the content mapping: whatever a provider sends of a kind, the ingest never fails on
it; it maps to a valid content or is ignored with a reason, and inline bytes and announced digests
survive exactly."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.providers import envelope, evolution, meta, wuzapi_webhooks
from switchboard.providers.base import WebhookRequest
from switchboard.providers.content import MediaMessage, content_from
from switchboard.providers.wa_message import Mapped, map_message, sha256_hex

JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
WA_KEYS = [
    "conversation",
    "extendedTextMessage",
    "imageMessage",
    "videoMessage",
    "ptvMessage",
    "audioMessage",
    "documentMessage",
    "documentWithCaptionMessage",
    "stickerMessage",
    "locationMessage",
    "liveLocationMessage",
    "contactMessage",
    "contactsArrayMessage",
    "buttonsResponseMessage",
    "listResponseMessage",
    "templateButtonReplyMessage",
    "interactiveResponseMessage",
    "pollCreationMessage",
    "pollCreationMessageV3",
    "pollUpdateMessage",
    "reactionMessage",
    "protocolMessage",
    "ephemeralMessage",
    "viewOnceMessageV2",
    "editedMessage",
]
WA_FIELDS = [
    "URL", "url", "mimetype", "caption", "fileName", "fileLength", "fileSHA256", "fileSha256", "seconds",
    "PTT", "ptt", "isAnimated", "degreesLatitude", "degreesLongitude", "name", "address", "displayName",
    "vcard", "contacts", "selectedButtonID", "selectedButtonId", "selectedDisplayText", "singleSelectReply",
    "title", "options", "selectableOptionsCount", "key", "text", "type", "editedMessage", "message",
    "contextInfo", "nativeFlowResponseMessage", "body",
]  # fmt: skip
WA_OBJECT = st.dictionaries(st.sampled_from(WA_FIELDS), JSON, max_size=6)
WA_MESSAGE = st.dictionaries(st.sampled_from(WA_KEYS), WA_OBJECT | JSON, min_size=1, max_size=2)


@settings(max_examples=300, deadline=None)
@given(WA_MESSAGE, JSON)
def test_any_whatsapp_message_maps_to_a_content_or_a_reason(message: dict[str, Any], context: Any) -> None:
    result = map_message(message, context_info=context)

    assert isinstance(result, Mapped | str)
    if isinstance(result, str):
        assert result
    else:
        content_from({"content": result.content.model_dump(mode="json")})  # valid, and it round-trips


def wuzapi_body(message: Any, top: dict[str, Any]) -> WebhookRequest:
    info = {"ID": "AC1", "Chat": "5511988887777@s.whatsapp.net", "Sender": "5511988887777@s.whatsapp.net"}
    payload = {"type": "Message", "event": {"Info": info, "Message": message}, "instanceName": "i1", **top}
    return WebhookRequest(headers={"content-type": "application/json"}, body=json.dumps(payload).encode())


@settings(max_examples=200, deadline=None)
@given(WA_MESSAGE, st.binary(max_size=300), st.booleans())
def test_wuzapi_inline_bytes_round_trip_into_media_bytes(message: dict[str, Any], raw: bytes, inline: bool) -> None:
    top = {"base64": base64.b64encode(raw).decode(), "mimeType": "image/png"} if inline else {}
    [event] = wuzapi_webhooks.events(wuzapi_body(message, top))

    assert event.ignored or content_from(event.data)
    if event.ignored is None and isinstance(content_from(event.data), MediaMessage) and inline and raw:
        assert event.media_bytes == raw
    assert "base64" not in json.dumps(event.data)


@settings(max_examples=200, deadline=None)
@given(WA_MESSAGE, st.binary(max_size=300))
def test_evolution_webhook_base64_round_trips_into_media_bytes(message: dict[str, Any], raw: bytes) -> None:
    payload = {
        "event": "messages.upsert",
        "instance": "i1",
        "data": {
            "key": {"id": "AC1", "remoteJid": "5511988887777@s.whatsapp.net", "fromMe": False},
            "message": {**message, "base64": base64.b64encode(raw).decode()},
            "messageTimestamp": 1761057639,
        },
    }
    [event] = evolution.parse_events(json.dumps(payload).encode())

    if event.ignored is None and isinstance(content_from(event.data), MediaMessage) and raw:
        assert event.media_bytes == raw
    assert event.ignored is None or event.ignored


META_TYPES = ["text", "image", "video", "audio", "document", "sticker", "location", "contacts", "interactive",
              "button", "reaction", "edit", "revoke", "unsupported", "order"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(META_TYPES), JSON, JSON)
def test_any_cloud_api_message_maps_to_a_content_or_a_reason(kind: str, body: Any, context: Any) -> None:
    message = {"from": "16505551234", "id": "wamid.x", "timestamp": "1749416383", "type": kind, kind: body}
    if context is not None:
        message["context"] = context
    value = {"messaging_product": "whatsapp", "metadata": {"phone_number_id": "1"}, "messages": [message]}
    notification = {
        "object": "whatsapp_business_account",
        "entry": [{"changes": [{"field": "messages", "value": value}]}],
    }
    [event] = meta.map_events(json.dumps(notification).encode())

    assert event.ignored or content_from(event.data)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["text", "image", "voice", "document", "location", "contacts", "reaction", "list", "x"]), JSON)
def test_any_envelope_message_maps_to_a_content_or_a_reason(kind: str, extra: Any) -> None:
    data: dict[str, Any] = {"id": "m1", "from": "5511988887777", "type": kind}
    if isinstance(extra, dict):
        data.update(extra)
    body = {"event": "message", "eventId": "e1", "instanceId": "c1", "data": data}
    [event] = envelope.events(WebhookRequest(body=json.dumps(body).encode()))

    assert event.ignored or content_from(event.data)


@given(st.binary(min_size=32, max_size=32))
def test_an_announced_base64_sha256_is_its_hex_digest(digest: bytes) -> None:
    assert sha256_hex(base64.b64encode(digest).decode()) == digest.hex()
    assert sha256_hex({str(i): b for i, b in enumerate(digest)}) == digest.hex()  # Baileys' bytes object
    assert sha256_hex(digest.hex().upper()) == digest.hex()


@given(st.binary(max_size=64).filter(lambda raw: len(raw) != 32))
def test_a_digest_that_is_not_32_bytes_is_no_claim(raw: bytes) -> None:
    assert sha256_hex(base64.b64encode(raw).decode()) is None


def test_the_sha256_of_inline_bytes_matches_the_hex_claim() -> None:
    raw = b"\x89PNG\r\n\x1a\n"
    assert sha256_hex(base64.b64encode(hashlib.sha256(raw).digest()).decode()) == hashlib.sha256(raw).hexdigest()

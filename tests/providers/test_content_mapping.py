"""Every incoming message kind of every provider kind, mapped to the one content shape.

Given a provider's real (or, where said in the fixture, assembled from its code) payload of one
kind, when the ingest maps it, then the event's `content` is exactly what the agent will be shown,
and a file the provider sent inline is in `media_bytes` (never in the stored data)."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from switchboard.providers import envelope, evolution, meta, wuzapi_webhooks
from switchboard.providers.base import InboundEvent, WebhookRequest
from switchboard.providers.content import (
    Choice,
    ContactCard,
    Contacts,
    Content,
    Edit,
    Location,
    Media,
    MediaMessage,
    MediaSource,
    Poll,
    Reaction,
    Revoke,
    Text,
    content_from,
)
from switchboard.providers.meta_content import map_content

CONTRACTS = Path(__file__).parent.parent / "contracts"
META_KINDS: dict[str, Any] = json.loads((CONTRACTS / "meta" / "message_kinds_pywa.json").read_text())
WHATSMEOW: dict[str, Any] = json.loads((CONTRACTS / "wuzapi" / "message_kinds_whatsmeow.json").read_text())
BAILEYS: dict[str, Any] = json.loads((CONTRACTS / "evolution" / "message_kinds_baileys.json").read_text())
PNG_SHA256 = "1a9c9bf867632169df0145efaf64b934afcf5cdea89b89b73c50a95b10be96b7"
VCARD = WHATSMEOW["contact"]["contactMessage"]["vcard"]
ANA = ContactCard(name="Ana Souza", phones=["5511912345678"], vcard=VCARD)


def content_of(event: InboundEvent) -> Content:
    assert event.ignored is None, event.ignored
    return content_from(event.data)


# --- Meta Cloud API (pywa's recorded updates) ---------------------------------------------------


def meta_source(media_id: str) -> MediaSource:
    return MediaSource(via="meta_media_id", media_id=media_id)


META_EXPECTED: dict[str, tuple[Content, str | None]] = {
    "message.video": (
        MediaMessage(
            media=Media(kind="video", mime_type="video/mp4", caption="caption", source=meta_source("765756756"))
        ),
        None,
    ),
    "message.document": (
        MediaMessage(
            media=Media(
                kind="document",
                mime_type="application/pdf",
                file_name="filename.pdf",
                caption="caption",
                source=meta_source("1234567890987654321"),
            )
        ),
        None,
    ),
    "message.audio": (
        MediaMessage(
            media=Media(kind="audio", mime_type="audio/ogg; codecs=opus", source=meta_source("1234567890987654321"))
        ),
        None,
    ),
    # The only sha256 of these that is 32 bytes of base64: announced, as hex.
    "message.voice": (
        MediaMessage(
            media=Media(
                kind="voice",
                mime_type="audio/ogg; codecs=opus",
                sha256=base64.b64decode("m04pFf2ERdaopTyFkGPA0+bX3i+YY2dYgVFwOgDLSDI=").hex(),
                source=meta_source("1234567890987654321"),
            )
        ),
        None,
    ),
    "message.static_sticker": (
        MediaMessage(
            media=Media(
                kind="sticker",
                mime_type="image/webp",
                sha256=base64.b64decode("OmT4nhjUhCMIPNmj7eeOZeCYjTXkLxoOv85OMCFwSuc=").hex(),
                source=meta_source("1234567890987654321"),
            )
        ),
        None,
    ),
    "message.animated_sticker": (
        MediaMessage(
            media=Media(
                kind="sticker", mime_type="image/webp", animated=True, source=meta_source("1234567890987654321")
            )
        ),
        None,
    ),
    "message.reaction": (Reaction(target_id="wamid.yzxyzx=", emoji="😮"), None),
    "message.unreaction_empty": (Reaction(target_id="wamid.yzxyzx=", emoji=""), None),
    "message.unreaction_no_emoji": (Reaction(target_id="wamid.yzxyzx=", emoji=""), None),
    "message.current_location": (Location(latitude=12.25089, longitude=43.90539), None),
    "message.chosen_location": (
        Location(
            latitude=37.4611978,
            longitude=-122.2164385,
            name="Facebook HQ",
            address="1 Hacker Way, Menlo Park, CA 94025",
            url="https://maps.google.com/?cid=2000000000000000000",
        ),
        None,
    ),
    "message.reply": (Text(body="replied text"), "wamid.xyzxyz=="),
    "callback_button.button": (Choice(source="button", id="callback_data", title="title"), "wamid.xyzxyz"),
    "callback_button.quick_reply": (
        Choice(source="template_button", id="callback_data", title="title"),
        "wamid.xyzxyz==",
    ),
    "callback_selection.callback": (Choice(source="list", id="callback_data", title="title"), "wamid.xyzxyz"),
    "flow_completion.completion": (
        Choice(
            source="flow",
            id="flow",
            title="Sent",
            response={
                "comment_text": "Comment Text",
                "delivery_rating": "4",
                "flow_token": "AQAAAAACS5FpgQ_cAAAAAD0QI3s.",
                "purchase_rating": "2",
                "recommend_radio": "0",
                "cs_rating": "0",
            },
        ),
        "wamid.gvwegfretge==",
    ),
    "deleted_message.revoke": (Revoke(target_id="<ORIGINAL_WHATSAPP_MESSAGE_ID>"), None),
    "edited_message.image": (
        Edit(target_id="wamid.HBgLMTQxMjU1NTA4MjkVAgASGBQzQUNCNjk5RDUwNUZGMUZEM0VBRAA=", body="Updated image caption"),
        None,
    ),
}


def meta_message(key: str) -> dict[str, Any]:
    message: dict[str, Any] = META_KINDS[key]["entry"][0]["changes"][0]["value"]["messages"][0]
    return message


@pytest.mark.parametrize("key", sorted(META_EXPECTED))
def test_each_cloud_api_kind_maps_to_its_content(key: str) -> None:
    assert map_content(meta_message(key)) == META_EXPECTED[key]


@pytest.mark.parametrize("key", sorted(k for k in META_EXPECTED if k != "deleted_message.revoke"))
def test_each_cloud_api_kind_reaches_the_event_with_its_sender(key: str) -> None:
    [event] = meta.map_events(json.dumps(META_KINDS[key]).encode())

    content, quoted = META_EXPECTED[key]
    assert (content_of(event), event.data.get("replyTo"), event.data["from"]) == (
        content,
        quoted,
        meta_message(key)["from"],
    )


def test_cloud_api_contacts_keep_each_card_with_its_whatsapp_numbers() -> None:
    mapped = map_content(meta_message("message.contacts"))

    assert isinstance(mapped, tuple)
    content = mapped[0]
    assert isinstance(content, Contacts)
    assert [card.name for card in content.cards] == ["Chandler Bing", "Monica", "Rachel Green"]
    assert all(card.phones == ["972987654321"] for card in content.cards)


def test_a_cloud_api_order_is_ignored_with_its_type() -> None:
    assert map_content(meta_message("message.order")) == "order message"


# --- the WhatsApp message of whatsmeow (wuzapi) and Baileys (Evolution) --------------------------

WHATSMEOW_EXPECTED: dict[str, tuple[Content, str | None]] = {
    "voice": (
        MediaMessage(
            media=Media(kind="voice", mime_type="audio/ogg; codecs=opus", size=4096, sha256=PNG_SHA256, seconds=7)
        ),
        None,
    ),
    "audio": (MediaMessage(media=Media(kind="audio", mime_type="audio/mpeg", size=90000, seconds=31)), None),
    "video": (
        MediaMessage(media=Media(kind="video", mime_type="video/mp4", caption="olha isso", size=250000, seconds=12)),
        None,
    ),
    "document_with_caption": (
        MediaMessage(
            media=Media(
                kind="document",
                mime_type="application/pdf",
                file_name="boleto-maio.pdf",
                caption="segue o boleto",
                size=48213,
            )
        ),
        None,
    ),
    "sticker": (MediaMessage(media=Media(kind="sticker", mime_type="image/webp", size=20480, animated=True)), None),
    "location": (
        Location(
            latitude=-23.5613, longitude=-46.6565, name="Av. Paulista, 1578", address="Bela Vista, São Paulo - SP"
        ),
        None,
    ),
    "live_location": (Location(latitude=-23.5505, longitude=-46.6333, name="estou chegando", live=True), None),
    "contact": (Contacts(cards=[ANA]), None),
    "contacts": (
        Contacts(
            cards=[
                ANA,
                ContactCard(
                    name="Loja",
                    phones=["+55 11 3000-0000"],
                    vcard=WHATSMEOW["contacts"]["contactsArrayMessage"]["contacts"][1]["vcard"],
                ),
            ]
        ),
        None,
    ),
    "button_reply": (Choice(source="button", id="confirmar", title="Confirmar"), "3EB0BUTTONS0001"),
    "list_reply": (Choice(source="list", id="servico-2", title="Corte + barba"), "3EB0LIST00001"),
    "template_button_reply": (Choice(source="template_button", id="sim", title="Sim"), None),
    "flow_reply": (
        Choice(source="flow", id="flow", title="Enviado", response={"nota": "5", "flow_token": "t-1"}),
        None,
    ),
    "poll": (Poll(question="Qual horário?", options=["10h", "14h"], multiple=False), None),
    "reaction": (Reaction(target_id="3EB0REACTED0001", emoji="❤️"), None),
    "reaction_removed": (Reaction(target_id="3EB0REACTED0001", emoji=""), None),
    "edit": (Edit(target_id="3AB4ORIGINAL01", body="amanhã às 15h, na verdade"), None),
    "revoke": (Revoke(target_id="3AB4ORIGINAL01"), None),
    "view_once_image": (MediaMessage(media=Media(kind="image", mime_type="image/jpeg", size=1000)), None),
    "ephemeral_text": (Text(body="some em 24h"), "3EB0QUOTED0001"),
}


def wuzapi_delivery(message: dict[str, Any], **top: Any) -> WebhookRequest:
    """The captured text delivery of wuzapi with another `Message` (and top-level media keys)."""
    payload = json.loads((CONTRACTS / "wuzapi" / "webhook_json_message_text.json").read_bytes())
    payload["event"]["Message"] = message
    payload.update(top)
    return WebhookRequest(headers={"content-type": "application/json"}, body=json.dumps(payload).encode())


def without_source(content: Content) -> Content:
    if isinstance(content, MediaMessage):
        return MediaMessage(media=content.media.model_copy(update={"source": None, "inline": False}))
    return content


@pytest.mark.parametrize("key", sorted(WHATSMEOW_EXPECTED))
def test_each_wuzapi_kind_maps_to_its_content(key: str) -> None:
    [event] = wuzapi_webhooks.events(wuzapi_delivery(WHATSMEOW[key]))

    content, quoted = WHATSMEOW_EXPECTED[key]
    assert (without_source(content_of(event)), event.data.get("replyTo")) == (content, quoted)


def test_a_wuzapi_media_without_inline_bytes_or_s3_is_fetched_by_its_download_route() -> None:
    image = WHATSMEOW["image"]["imageMessage"]
    [event] = wuzapi_webhooks.events(wuzapi_delivery(WHATSMEOW["image"]))

    media = content_of(event).media  # type: ignore[union-attr]  # a media message
    assert (media.inline, event.media_bytes) == (False, None)
    assert media.source == MediaSource(
        via="provider_download",
        fields={
            "Url": image["URL"],
            "DirectPath": image["directPath"],
            "MediaKey": image["mediaKey"],
            "Mimetype": "image/png",
            "FileEncSHA256": image["fileEncSHA256"],
            "FileSHA256": image["fileSHA256"],
            "FileLength": 71,
        },
    )
    assert (media.sha256, media.caption, media.size) == (PNG_SHA256, "o comprovante", 71)


def test_wuzapi_base64_delivery_puts_the_bytes_in_media_bytes_and_none_in_the_data() -> None:
    png = BAILEYS["image_base64"]["message"]["base64"]
    request = wuzapi_delivery(WHATSMEOW["image"], base64=png, mimeType="image/png", fileName="AC5D.png")
    [event] = wuzapi_webhooks.events(request)

    media = content_of(event).media  # type: ignore[union-attr]  # a media message
    assert event.media_bytes is not None
    assert (media.inline, media.source, hashlib.sha256(event.media_bytes).hexdigest()) == (True, None, PNG_SHA256)
    assert png not in json.dumps(event.model_dump(mode="json"))


def test_wuzapi_s3_delivery_gives_the_object_url_and_both_keeps_the_bytes_too() -> None:
    s3 = {
        "url": "https://wuzapi-media.s3.sa-east-1.amazonaws.com/users/1/inbox/AC5D.png",
        "key": "users/1/inbox/AC5D.png",
        "bucket": "wuzapi-media",
        "size": 71,
        "mimeType": "image/png",
        "fileName": "AC5D.png",
    }
    [s3_only] = wuzapi_webhooks.events(wuzapi_delivery(WHATSMEOW["image"], s3=s3))
    png = BAILEYS["image_base64"]["message"]["base64"]
    [both] = wuzapi_webhooks.events(wuzapi_delivery(WHATSMEOW["image"], s3=s3, base64=png, mimeType="image/png"))

    url = MediaSource(via="url", url=s3["url"])
    assert (content_of(s3_only).media.source, s3_only.media_bytes) == (url, None)  # type: ignore[union-attr]
    assert content_of(both).media.source == url  # type: ignore[union-attr]
    assert (content_of(both).media.inline, both.media_bytes is not None) == (True, True)  # type: ignore[union-attr]


BAILEYS_EXPECTED: dict[str, tuple[Content, str | None]] = {
    "document": (
        MediaMessage(
            media=Media(
                kind="document",
                mime_type="application/pdf",
                file_name="boleto-maio.pdf",
                caption="segue o boleto",
                size=48213,
            )
        ),
        None,
    ),
    "sticker": (MediaMessage(media=Media(kind="sticker", mime_type="image/webp", size=20480)), None),
    "location": WHATSMEOW_EXPECTED["location"],
    "contact": WHATSMEOW_EXPECTED["contact"],
    "button_reply": WHATSMEOW_EXPECTED["button_reply"],
    "list_reply": WHATSMEOW_EXPECTED["list_reply"],
    "poll": (Poll(question="Qual horário?", options=["10h", "14h", "16h"], multiple=True), None),
    "reaction": (Reaction(target_id="3EB0REACTED0001", emoji="👍"), None),
    "edit": (Edit(target_id="3A7F2C9B1D4E8A6C0B5F", body="Pode ser às 16h"), None),
    "revoke": (Revoke(target_id="3A7F2C9B1D4E8A6C0B5F"), None),
    "quoted_text": (Text(body="Pode ser às 15h"), "3EB0QUOTED0001"),
}


def evolution_upsert(entry: dict[str, Any]) -> bytes:
    """The captured `messages.upsert` of Evolution with another message (and contextInfo)."""
    payload = json.loads((CONTRACTS / "evolution" / "webhook_messages_upsert_conversation.json").read_bytes())
    payload["data"]["message"] = entry["message"]
    payload["data"]["contextInfo"] = entry.get("contextInfo")
    return json.dumps(payload).encode()


@pytest.mark.parametrize("key", sorted(BAILEYS_EXPECTED))
def test_each_evolution_kind_maps_to_its_content(key: str) -> None:
    [event] = evolution.parse_events(evolution_upsert(BAILEYS[key]))

    content, quoted = BAILEYS_EXPECTED[key]
    assert (without_source(content_of(event)), event.data.get("replyTo")) == (content, quoted)


def test_evolution_webhook_base64_is_inline_and_its_digest_is_the_announced_one() -> None:
    [event] = evolution.parse_events(evolution_upsert(BAILEYS["image_base64"]))

    media = content_of(event).media  # type: ignore[union-attr]  # a media message
    assert event.media_bytes is not None
    assert (media.inline, media.source, media.sha256) == (True, None, PNG_SHA256)
    assert hashlib.sha256(event.media_bytes).hexdigest() == media.sha256
    assert BAILEYS["image_base64"]["message"]["base64"] not in json.dumps(event.data)


def test_evolution_media_in_s3_is_fetched_by_its_url_else_by_get_base64_from_media_message() -> None:
    [in_s3] = evolution.parse_events(evolution_upsert(BAILEYS["voice_media_url"]))
    [plain] = evolution.parse_events(evolution_upsert(BAILEYS["document"]))

    voice = content_of(in_s3).media  # type: ignore[union-attr]  # a media message
    assert (voice.kind, voice.seconds, voice.sha256) == ("voice", 7, PNG_SHA256)
    assert voice.source == MediaSource(via="url", url=BAILEYS["voice_media_url"]["message"]["mediaUrl"])
    assert content_of(plain).media.source == MediaSource(  # type: ignore[union-attr]
        via="provider_download", fields={"message": {"key": {"id": "AC5D2E9F7B31C0480E5A6F1D9B2C7E34"}}}
    )


# --- the calls-capable server's envelope --------------------------------------------------------


def envelope_request(data: dict[str, Any]) -> WebhookRequest:
    body = {"event": "message", "eventId": "ev-1", "instanceId": "calls-01", "seq": 4, "data": data}
    return WebhookRequest(body=json.dumps(body).encode(), headers={"x-webhook-timestamp": str(int(time.time()))})


BASE = {"id": "3EB0ENV0001", "from": "5511988887777", "timestamp": "2026-05-20T13:20:30+00:00"}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"type": "text", "text": "oi"}, Text(body="oi")),
        (
            {"type": "location", "location": {"latitude": -23.5, "longitude": -46.6, "name": "Loja"}},
            Location(latitude=-23.5, longitude=-46.6, name="Loja"),
        ),
        (
            {"type": "contacts", "contacts": [{"name": "Ana", "phones": ["5511912345678"]}]},
            Contacts(cards=[ContactCard(name="Ana", phones=["5511912345678"])]),
        ),
        ({"type": "reaction", "reaction": {"messageId": "m1", "emoji": ""}}, Reaction(target_id="m1", emoji="")),
        ({"type": "list", "choice": {"id": "r2", "title": "Dois"}}, Choice(source="list", id="r2", title="Dois")),
        (
            {
                "type": "document",
                "text": "o pdf",
                "media": {"mimeType": "application/pdf", "fileName": "a.pdf", "url": "https://calls.example/media/1"},
            },
            MediaMessage(
                media=Media(
                    kind="document",
                    mime_type="application/pdf",
                    file_name="a.pdf",
                    caption="o pdf",
                    source=MediaSource(via="url", url="https://calls.example/media/1"),
                )
            ),
        ),
    ],
)
def test_each_envelope_kind_maps_to_its_content(data: dict[str, Any], expected: Content) -> None:
    [event] = envelope.events(envelope_request({**BASE, **data, "replyTo": "q1"}))

    assert (content_of(event), event.data["replyTo"], event.data["from"]) == (expected, "q1", "5511988887777")
    assert set(event.data) == {"id", "from", "timestamp", "content", "replyTo"}


def test_an_envelope_voice_note_inline_goes_to_media_bytes() -> None:
    ogg = b"OggS\x00\x02" + bytes(40)
    media = {"mimeType": "audio/ogg", "seconds": 3, "sha256": hashlib.sha256(ogg).hexdigest().upper()}
    data = {**BASE, "type": "voice", "media": {**media, "base64": base64.b64encode(ogg).decode()}}
    [event] = envelope.events(envelope_request(data))

    assert event.media_bytes == ogg
    assert content_of(event) == MediaMessage(
        media=Media(kind="voice", mime_type="audio/ogg", seconds=3, sha256=hashlib.sha256(ogg).hexdigest(), inline=True)
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"type": "poll"}, "poll message"),
        ({"type": "text"}, "text message without a text"),
        ({"type": "image"}, "image message without its media"),
        ({"type": "image", "media": {"base64": "not base64!"}}, "image message with invalid base64"),
        (
            {"type": "location", "location": {"latitude": 91, "longitude": 0}},
            "message data not in the envelope format (latitude)",
        ),
    ],
)
def test_an_envelope_message_that_does_not_map_is_ignored_with_its_reason(data: dict[str, Any], reason: str) -> None:
    [event] = envelope.events(envelope_request({**BASE, **data}))

    assert (event.ignored, event.data) == (reason, {"id": "3EB0ENV0001"})


@pytest.mark.parametrize(
    ("event", "key", "expected"),
    [
        ("messages.edited", "event_messages_edited", Edit(target_id="3A7F2C9B1D4E8A6C0B5F", body="Pode ser às 16h")),
        ("messages.delete", "event_messages_delete", Revoke(target_id="3A7F2C9B1D4E8A6C0B5F")),
    ],
)
def test_an_evolution_edit_or_deletion_event_is_a_message_naming_the_one_it_changes(
    event: str, key: str, expected: Content
) -> None:
    payload = json.loads((CONTRACTS / "evolution" / "webhook_messages_upsert_conversation.json").read_bytes())
    payload.update(event=event, data=BAILEYS[key])
    [mapped] = evolution.parse_events(json.dumps(payload).encode())

    assert (mapped.name, content_of(mapped), mapped.data["from"]) == ("message", expected, "5511988887777")
    [again] = evolution.parse_events(json.dumps(payload).encode())
    assert again.event_id == mapped.event_id


def test_an_evolution_edit_of_our_own_message_is_ignored() -> None:
    payload = json.loads((CONTRACTS / "evolution" / "webhook_messages_upsert_conversation.json").read_bytes())
    data = json.loads(json.dumps(BAILEYS["event_messages_edited"]))
    data["key"]["fromMe"] = True
    payload.update(event="messages.edited", data=data)
    [mapped] = evolution.parse_events(json.dumps(payload).encode())

    assert mapped.ignored == "a change of our own message"

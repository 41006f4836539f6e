"""Each kind sends every content in its own server's format (tests/contracts/*/…send_content…),
and the Cloud API's media ids are uploaded once per number and file."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchboard.core.errors import UnsupportedByProvider
from switchboard.providers import evolution_send, meta_send, wuzapi_send
from switchboard.providers.base import MessageRevoker, OutgoingFile, ProviderTarget, Quote
from switchboard.providers.content import (
    ContactCard,
    Contacts,
    Content,
    Location,
    Media,
    MediaMessage,
    Reaction,
)
from switchboard.providers.kinds import spec_for

CONTRACTS = Path(__file__).parent.parent / "contracts"
PHONE = "5511988887777"
QUOTED = Quote(id="3EB0ABCDEF0123456789", from_me=False, author=PHONE)
WAMID = "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJBRkQ1"


def contract(kind: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONTRACTS / kind / name).read_text())
    return data


def file_of(data: bytes, mime: str, name: str | None = None) -> OutgoingFile:
    return OutgoingFile(data=data, mime_type=mime, sha256=hashlib.sha256(data).hexdigest(), file_name=name)


PNG = file_of(base64.b64decode("iVBORw0KGgo="), "image/png")
PDF = file_of(base64.b64decode("JVBERi0="), "application/pdf", "receipt.pdf")
OGG = file_of(base64.b64decode("T2dnUw=="), "audio/ogg")
IMAGE = MediaMessage(media=Media(kind="image", caption="the receipt"))
DOCUMENT = MediaMessage(media=Media(kind="document", file_name="receipt.pdf"))
VOICE = MediaMessage(media=Media(kind="voice"))
LOCATION = Location(latitude=-23.55, longitude=-46.63, name="Office")
CONTACT = Contacts(cards=[ContactCard(name="Ana", phones=["+5511977776666"])])


def test_wuzapi_bodies_are_its_handlers_structs() -> None:
    expected = contract("wuzapi", "request_send_content.json")
    cases: dict[str, tuple[Content, Quote | None, OutgoingFile | None]] = {
        "image_with_caption_quoted": (IMAGE, QUOTED, PNG),
        "document": (DOCUMENT, None, PDF),
        "voice": (VOICE, None, OGG),
        "location": (LOCATION, None, None),
        "reaction_to_own_message": (
            Reaction(target_id=QUOTED.id, emoji="👍"),
            QUOTED.model_copy(update={"from_me": True}),
            None,
        ),
        "reaction_removed": (Reaction(target_id=QUOTED.id, emoji=""), QUOTED, None),
    }
    for name, (content, quoted, file) in cases.items():
        request = wuzapi_send.request_for(PHONE, content, "msg_1", quoted=quoted, file=file)
        assert {"route": request.route, "body": request.body} == expected[name], name


def test_wuzapi_refuses_what_its_server_would_refuse() -> None:
    with pytest.raises(UnsupportedByProvider):
        wuzapi_send.request_for(PHONE, Location(latitude=0, longitude=10), "msg_1")
    two = Contacts(cards=[ContactCard(name="A", phones=["1"]), ContactCard(name="B", phones=["2"])])
    with pytest.raises(UnsupportedByProvider):
        wuzapi_send.request_for(PHONE, two, "msg_1")


def test_a_wuzapi_contact_carries_a_vcard_built_from_the_card() -> None:
    body = wuzapi_send.request_for(PHONE, CONTACT, "msg_1").body
    assert body["Name"] == "Ana"
    assert body["Vcard"].splitlines() == [
        "BEGIN:VCARD",
        "VERSION:3.0",
        "N:;Ana;;;",
        "FN:Ana",
        "TEL;type=CELL;type=VOICE;waid=5511977776666:+5511977776666",
        "END:VCARD",
    ]


def test_evolution_bodies_are_its_dtos() -> None:
    expected = contract("evolution", "api_send_content_requests.json")
    cases: dict[str, tuple[Content, Quote | None, OutgoingFile | None]] = {
        "image_with_caption_quoted": (IMAGE, QUOTED, PNG),
        "document": (DOCUMENT, None, PDF),
        "voice": (VOICE, None, OGG),
        "location": (LOCATION, None, None),
        "contact": (CONTACT, None, None),
        "reaction": (Reaction(target_id=QUOTED.id, emoji="👍"), QUOTED.model_copy(update={"from_me": True}), None),
    }
    for name, (content, quoted, file) in cases.items():
        request = evolution_send.request_for(PHONE, content, quoted=quoted, file=file)
        assert {"action": request.action, "body": request.body} == expected[name], name


def test_meta_bodies_are_the_cloud_api_messages() -> None:
    expected = contract("meta", "send_content_requests.json")
    wamid = Quote(id=WAMID)
    media_id = "1013859600285441"
    assert (
        meta_send.message_body(PHONE, IMAGE, quoted=wamid, media_id=media_id) == expected["image_with_caption_quoted"]
    )
    assert meta_send.message_body(PHONE, DOCUMENT, media_id=media_id) == expected["document"]
    assert meta_send.message_body(PHONE, VOICE, media_id=media_id) == expected["voice"]
    assert meta_send.message_body(PHONE, LOCATION) == expected["location"]
    assert meta_send.message_body(PHONE, CONTACT) == expected["contacts"]
    assert meta_send.message_body(PHONE, Reaction(target_id=WAMID, emoji="👍")) == expected["reaction"]


def test_meta_refuses_a_voice_note_that_is_not_ogg_opus() -> None:
    with pytest.raises(UnsupportedByProvider) as refused:
        meta_send.check_file(VOICE.media, file_of(b"ID3", "audio/mpeg"))
    assert refused.value.code == "voice_format_unsupported"
    meta_send.check_file(VOICE.media, file_of(b"OggS", "audio/ogg; codecs=opus"))


class MemoryUploads:
    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], str] = {}

    def media_id(self, number: str, sha256: str) -> str | None:
        return self.ids.get((number, sha256))

    def remember(self, number: str, sha256: str, media_id: str) -> None:
        self.ids[(number, sha256)] = media_id


def test_meta_uploads_a_file_once_per_number_and_each_number_its_own() -> None:
    uploads: list[tuple[str, bytes]] = []
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        phone_id = request.url.path.split("/")[2]
        if request.url.path.endswith("/media"):
            uploads.append((phone_id, request.content))
            return httpx.Response(200, json={"id": f"media-{phone_id}-{len(uploads)}"})
        sent.append(json.loads(request.content))
        return httpx.Response(200, json={"messaging_product": "whatsapp", "messages": [{"id": f"wamid.{len(sent)}"}]})

    client = spec_for("meta").client(local_mode=True, read_timeout=5, transport=httpx.MockTransport(handler))
    known = MemoryUploads()

    def target(phone_id: str) -> ProviderTarget:
        return ProviderTarget(
            kind="meta",
            base_url="https://graph.example.test",
            provider_instance_id=phone_id,
            instance_token="token",
            meta_phone_id=phone_id,
        )

    for phone_id in ("111", "111", "222"):
        client.send_content(target(phone_id), PHONE, IMAGE, "msg_1", file=PNG, uploaded=known)
    assert [phone_id for phone_id, _ in uploads] == ["111", "222"]
    assert all(PNG.data in body for _, body in uploads)
    assert [body["image"]["id"] for body in sent] == ["media-111-1", "media-111-1", "media-222-2"]


def recorded(answer: dict[str, Any], status: int, seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=answer)

    return httpx.MockTransport(handler)


@pytest.mark.parametrize("kind", ["wuzapi", "evolution"])
def test_a_sent_message_is_deleted_for_everyone_through_its_servers_own_route(kind: str) -> None:
    name = "request_delete_message.json" if kind == "wuzapi" else "api_delete_message_for_everyone.json"
    expected = contract(kind, name)
    seen: list[httpx.Request] = []
    client = spec_for(kind).client(
        local_mode=True, read_timeout=5, transport=recorded(expected["answer"], expected.get("status", 200), seen)
    )
    target = ProviderTarget(
        kind=kind, base_url="http://127.0.0.1:9", provider_instance_id="acme-evo", instance_token="tok"
    )

    assert isinstance(client, MessageRevoker)
    client.revoke(target, PHONE, "3EB0C431E2A6F07B9D18AF")

    [request] = seen
    assert (request.method, request.url.path) == (expected["method"], expected.get("path", expected.get("route")))
    assert json.loads(request.content) == expected["body"]


def test_the_cloud_api_has_no_deletion_of_a_sent_message() -> None:
    assert not isinstance(spec_for("meta").client(local_mode=True, read_timeout=5), MessageRevoker)

"""What each server posts for a customer's photo, voice note, video, document, sticker, location,
reaction, contact card or list reply, and a quote: the shapes of the real fixtures
(tests/contracts), mapped by our webhook code to the content each one is; each server's ways of
carrying a file (wuzapi's base64, S3 or both; Evolution's webhookBase64; the envelope's base64 or
URL) and the files it serves at those URLs, byte for byte."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.simulator import SimulatorControl
from devstack.simulator.incoming import MEDIA_KINDS, media_file
from switchboard.providers import envelope, evolution, meta, wuzapi_webhooks
from switchboard.providers.base import InboundEvent, WebhookRequest
from switchboard.providers.content import Choice, Contacts, MediaMessage, content_from
from tests.simulator.conftest import FlavourFactory, Received, WebhookReceiver

PEER = "5511977776666"
CONTACT_DIGITS = "5511912345678"
CONTRACTS = Path(__file__).parents[1] / "contracts"
# The content each kind the simulator sends maps to, and a file's kinds (a voice note is audio
# sent as push-to-talk).
EXPECTED_CONTENT = {
    "image": "media",
    "audio": "media",
    "video": "media",
    "document": "media",
    "sticker": "media",
    "location": "location",
    "reaction": "reaction",
    "contacts": "contacts",
    "list": "choice",
}
MEDIA_CONTENT = {
    "image": {"image"},
    "audio": {"audio", "voice"},
    "video": {"video"},
    "document": {"document"},
    "sticker": {"sticker"},
}


def mapped(flavour: str, received: Received) -> Any:
    request = WebhookRequest(headers={k.lower(): v for k, v in received.headers.items()}, body=received.body)
    parse: Callable[[WebhookRequest], list[InboundEvent]] = {
        "calls": envelope.events,
        "wuzapi": wuzapi_webhooks.events,
        "evolution": lambda request: evolution.KIND.events(request, "evolution-jwt"),
        "meta": lambda request: meta.KIND.events(request, "meta-signature"),
    }[flavour]
    [event] = parse(request)
    return event


def fixture(kind: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CONTRACTS / kind / name).read_text())
    return loaded


@pytest.mark.parametrize("flavour", ["calls", "wuzapi", "evolution", "meta"])
@pytest.mark.parametrize("kind", MEDIA_KINDS)
def test_every_kind_of_message_is_posted_by_each_server_and_mapped_to_its_content(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver, flavour: str, kind: str
) -> None:
    instance = make_flavoured(flavour, **({"kind": "messages"} if flavour == "calls" else {}))

    sent = control.incoming(instance.id, PEER, kind=kind)

    [delivery] = receiver.wait_for(instance.id, 1)
    event = mapped(flavour, delivery)
    assert event.name == "message"
    assert event.ignored is None
    content = content_from(event.data)
    assert content.type == EXPECTED_CONTENT[kind]
    if isinstance(content, MediaMessage):
        assert content.media.kind in MEDIA_CONTENT[kind]
    if isinstance(content, Contacts):
        assert [(card.name, card.phones) for card in content.cards] == [("Ana Souza", [CONTACT_DIGITS])]
    if isinstance(content, Choice):
        assert (content.id, content.title) == ("boleto-2", "Segunda via do boleto")
    assert event.event_id == (sent["eventId"] if flavour == "calls" else sent["id"])
    assert sent["eventId"] in {e["eventId"] for e in control.events(instance.id)}


def test_a_wuzapi_photo_has_the_real_webhooks_fields_and_its_bytes(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    real = json.loads((CONTRACTS / "wuzapi" / "webhook_json_unmappable_message_image.json").read_bytes())
    instance = make_flavoured("wuzapi")

    sent = control.incoming(instance.id, PEER, kind="image", text="Segue o comprovante")

    [delivery] = receiver.wait_for(instance.id, 1)
    body = delivery.envelope
    assert set(body) == set(real)
    assert set(body["event"]["Info"]) == set(real["event"]["Info"])
    assert set(body["event"]["Message"]["imageMessage"]) <= set(real["event"]["Message"]["imageMessage"])
    assert (body["event"]["Info"]["Type"], body["event"]["Info"]["MediaType"]) == ("media", "image")
    assert body["event"]["Message"]["imageMessage"]["caption"] == "Segue o comprovante"
    assert (body["mimeType"], body["fileName"]) == ("image/jpeg", f"{sent['id']}.jpeg")
    assert base64.b64decode(body["base64"]) == media_file("image")
    assert list(body) == sorted(body)


def test_an_evolution_photo_has_the_real_webhooks_fields(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    real = fixture("evolution", "webhook_messages_upsert_image.json")
    instance = make_flavoured("evolution")

    control.incoming(instance.id, PEER, kind="image")

    [delivery] = receiver.wait_for(instance.id, 1)
    data = delivery.envelope["data"]
    assert list(data) == list(real["data"])
    assert list(data["message"]["imageMessage"]) == list(real["data"]["message"]["imageMessage"])
    assert data["contextInfo"] is None and data["messageType"] == "imageMessage"
    assert data["message"]["imageMessage"]["fileLength"] == {
        "low": len(media_file("image")),
        "high": 0,
        "unsigned": True,
    }


def test_an_evolution_photo_kept_in_minio_has_the_real_webhooks_media_url(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    """As Evolution posts it with S3/MinIO storage: `message.mediaUrl` after the content, a MinIO
    presigned GET of the object Evolution names, its query in minio-js's order; unsigned, refused."""
    real = fixture("evolution", "webhook_messages_upsert_image_media_url.json")["data"]["message"]
    instance = make_flavoured("evolution")

    control.incoming(instance.id, PEER, kind="image", media_delivery="s3")

    [delivery] = receiver.wait_for(instance.id, 1)
    message = delivery.envelope["data"]["message"]
    assert list(message) == [name for name in real if name != "messageContextInfo"]
    url, real_url = httpx.URL(message["mediaUrl"]), httpx.URL(real["mediaUrl"])
    assert [name for name, _ in url.params.multi_items()] == [name for name, _ in real_url.params.multi_items()]
    bucket, folder, owner, chat, media_type, name = url.path.removeprefix("/evolution/minio/").split("/")
    assert (bucket, folder, chat, media_type) == (
        "evolution",
        "evolution-api",
        f"{PEER}@s.whatsapp.net",
        "imageMessage",
    )
    assert owner == delivery.envelope["data"]["instanceId"] and name.endswith(".jpeg") and "%40" in str(url)
    assert httpx.get(str(url)).content == media_file("image")
    assert httpx.get(str(url.copy_with(query=None))).status_code == 403


def test_a_meta_photo_and_a_reaction_have_the_cloud_apis_fields(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    real = fixture("meta", "webhook_image_message.json")["entry"][0]["changes"][0]["value"]["messages"][0]
    instance = make_flavoured("meta")

    control.incoming(instance.id, PEER, kind="image")
    control.incoming(instance.id, PEER, kind="reaction")

    photo, reaction = (
        delivery.envelope["entry"][0]["changes"][0]["value"]["messages"][0]
        for delivery in receiver.wait_for(instance.id, 2)
    )
    assert set(photo) == set(real) and set(photo["image"]) == set(real["image"])
    assert reaction["type"] == "reaction" and set(reaction["reaction"]) == {"message_id", "emoji"}


def test_a_reaction_reacts_to_the_last_message_sent_to_that_customer(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("evolution")
    sent = httpx.post(
        f"{instance.base_url}/message/sendText/{instance.id}",
        headers={"apikey": instance.token},
        json={"number": PEER, "text": "seu pedido saiu"},
    ).json()["key"]["id"]

    control.incoming(instance.id, PEER, kind="reaction")

    [delivery] = receiver.wait_for(instance.id, 1)
    data = delivery.envelope["data"]
    assert data["message"]["reactionMessage"]["key"]["id"] == sent
    assert "contextInfo" not in data and data["messageType"] == "reactionMessage"


def test_a_text_message_still_needs_its_text(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("wuzapi")

    with pytest.raises(httpx.HTTPStatusError, match="400"):
        control.incoming(instance.id, PEER)


def test_pending_faults_can_be_cleared(control: SimulatorControl) -> None:
    control.fault("/wuzapi/chat/send/text", "error500", times=3)
    control.fault("/call/dial", "timeout")

    assert control.clear_faults() == 2
    assert control.clear_faults() == 0


@pytest.mark.parametrize(
    "case",
    [
        ("wuzapi", None, True, False),
        ("wuzapi", "s3", False, True),
        ("wuzapi", "both", True, True),
        ("evolution", None, False, False),
        ("evolution", "base64", True, False),
        ("evolution", "s3", False, True),
        ("calls", None, True, False),
        ("calls", "url", False, True),
        ("meta", None, False, False),
    ],
)
def test_each_server_carries_a_file_as_its_setting_says_and_serves_its_url_byte_for_byte(
    make_flavoured: FlavourFactory,
    control: SimulatorControl,
    receiver: WebhookReceiver,
    case: tuple[str, str | None, bool, bool],
) -> None:
    flavour, mode, inline, by_url = case  # the server, its setting, the bytes inline, a URL given
    instance = make_flavoured(flavour, **({"kind": "messages"} if flavour == "calls" else {}))

    sent = control.incoming(instance.id, PEER, kind="document", text="o boleto", media_delivery=mode)

    [delivery] = receiver.wait_for(instance.id, 1)
    event = mapped(flavour, delivery)
    content = content_from(event.data)
    assert isinstance(content, MediaMessage) and content.media.caption == "o boleto"
    assert (event.media_bytes == media_file("document")) is inline and content.media.inline is inline
    source = content.media.source
    assert (source is not None and source.via == "url") is by_url
    if source is not None and source.url:
        assert httpx.get(source.url).content == media_file("document")
        control.fail_media(sent["id"])
        assert httpx.get(source.url).status_code == 404


def test_a_delivery_mode_a_server_does_not_have_is_refused(
    make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured("meta")

    with pytest.raises(httpx.HTTPStatusError, match="400"):
        control.incoming(instance.id, PEER, kind="image", media_delivery="s3")


@pytest.mark.parametrize("flavour", ["calls", "wuzapi", "evolution", "meta"])
def test_a_quote_names_the_quoted_message_and_a_file_can_be_large_or_announce_a_size_it_is_not(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver, flavour: str
) -> None:
    instance = make_flavoured(flavour, **({"kind": "messages"} if flavour == "calls" else {}))

    control.incoming(instance.id, PEER, text="e esse?", quote="3EB0QUOTED")
    control.incoming(instance.id, PEER, kind="image", quote="3EB0QUOTED", file_size=3 * 1024 * 1024)
    control.incoming(instance.id, PEER, kind="video", announced_size=64 * 1024 * 1024)

    quoted_text, large, announced = (mapped(flavour, d) for d in receiver.wait_for(instance.id, 3))
    assert content_from(quoted_text.data).type == "text" and quoted_text.data["replyTo"] == "3EB0QUOTED"
    assert large.data["replyTo"] == "3EB0QUOTED"
    if large.media_bytes is not None:
        assert large.media_bytes == media_file("image", 3 * 1024 * 1024)
    video = content_from(announced.data)
    assert isinstance(video, MediaMessage)
    assert video.media.size == (None if flavour == "meta" else 64 * 1024 * 1024)

"""Every flavour takes its real media send routes from our clients and records what it received:
the file byte for byte (its sha256), the caption, the file name, a location, a reaction."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from devstack.simulator import SimulatorControl
from switchboard.providers.base import MessageRevoker, OutgoingFile, Quote
from switchboard.providers.content import Content, Location, Media, MediaMessage, Reaction
from switchboard.providers.kinds import spec_for
from tests.simulator.conftest import FlavourFactory, FlavourInstance

PEER = "5511988887777"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
PDF = b"%PDF-1.7\n" + bytes(range(256)) + b"%%EOF"
OGG = b"OggS\x00\x02" + bytes(range(100))
KIND_OF = {"calls": "wuzapi", "wuzapi": "wuzapi", "evolution": "evolution", "meta": "meta"}
FLAVOURS = sorted(KIND_OF)


def file_of(data: bytes, mime: str, name: str | None = None) -> OutgoingFile:
    return OutgoingFile(data=data, mime_type=mime, sha256=hashlib.sha256(data).hexdigest(), file_name=name)


def send(
    instance: FlavourInstance, content: Content, file: OutgoingFile | None = None, quoted: Quote | None = None
) -> str:
    client = spec_for(KIND_OF[instance.flavour]).client(local_mode=True, read_timeout=5.0)
    return client.send_content(
        instance.target(), PEER, content, "3EB0" + "A" * 18, file=file, quoted=quoted
    ).provider_message_id


def recorded(control: SimulatorControl, instance: FlavourInstance) -> list[dict[str, Any]]:
    return [json.loads(m["body"]) for m in control.sent() if m["instance"] == instance.id]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_photo_with_caption_arrives_byte_for_byte(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=False)

    send(instance, MediaMessage(media=Media(kind="image", caption="the product")), file_of(PNG, "image/png"))

    [got] = recorded(control, instance)
    assert (got["type"], got["caption"], got["sha256"]) == ("image", "the product", hashlib.sha256(PNG).hexdigest())
    assert base64.b64decode(got["base64"]) == PNG


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_pdf_keeps_its_file_name(flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured(flavour, subscribed=False)

    send(
        instance,
        MediaMessage(media=Media(kind="document", file_name="receipt.pdf")),
        file_of(PDF, "application/pdf", "receipt.pdf"),
    )

    [got] = recorded(control, instance)
    assert (got["type"], got["fileName"], got["size"]) == ("document", "receipt.pdf", len(PDF))
    assert base64.b64decode(got["base64"]) == PDF


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_voice_note_leaves_as_one(flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured(flavour, subscribed=False)

    send(instance, MediaMessage(media=Media(kind="voice")), file_of(OGG, "audio/ogg"))

    [got] = recorded(control, instance)
    assert got["type"] == ("audio" if flavour == "meta" else "voice")  # Meta plays an OGG/Opus audio as a voice note
    assert base64.b64decode(got["base64"]) == OGG


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_location_and_a_reaction_arrive(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=False)

    send(
        instance, Location(latitude=-23.55, longitude=-46.63, name="Office"), quoted=Quote(id="3EB0QUOTED", author=PEER)
    )
    send(instance, Reaction(target_id="3EB0QUOTED", emoji="👍"), quoted=Quote(id="3EB0QUOTED", author=PEER))

    location, reaction = recorded(control, instance)
    assert (location["type"], location["latitude"], location["name"]) == ("location", -23.55, "Office")
    if flavour != "meta":
        assert location["quoted"] == "3EB0QUOTED"
    assert (reaction["type"], reaction["messageId"], reaction["emoji"]) == ("reaction", "3EB0QUOTED", "👍")


@pytest.mark.parametrize("flavour", ["calls", "wuzapi", "evolution"])
def test_a_sent_message_deleted_for_everyone_is_recorded_as_its_revoke(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=False)
    client = spec_for(KIND_OF[flavour]).client(local_mode=True, read_timeout=5.0)
    sent = send(instance, MediaMessage(media=Media(kind="image")), file_of(PNG, "image/png"))

    assert isinstance(client, MessageRevoker)
    client.revoke(instance.target(), PEER, sent)

    [_, revoke] = recorded(control, instance)
    assert revoke["type"] == "revoke" and revoke["messageId"] == sent

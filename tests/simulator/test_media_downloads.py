"""The simulator's Graph API serves a customer's file as Meta does (media id, then its URL with
the bearer), and the media capability fetches it from there into moto's S3: the same bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devstack.simulator import SimulatorControl, files
from devstack.simulator.incoming import media_file
from switchboard.media.ports import MediaUnavailable
from switchboard.media.service import S3Media
from switchboard.providers.content import Media, MediaSource
from switchboard.providers.evolution import EvolutionClient
from switchboard.providers.meta import MetaCloudClient
from switchboard.providers.wuzapi import WuzapiClient
from tests.simulator.conftest import FlavourFactory, WebhookReceiver

PEER = "5511977776666"
BUCKET = "sim-media"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def media_id_of(receiver: WebhookReceiver, instance_id: str, kind: str) -> str:
    [delivery] = receiver.wait_for(instance_id, 1)
    message = delivery.envelope["entry"][0]["changes"][0]["value"]["messages"][0]
    media_id: str = message[kind]["id"]
    return media_id


MEDIA_KIND = {"image": "image", "audio": "voice", "document": "document"}


@pytest.mark.parametrize("kind", sorted(MEDIA_KIND))
def test_a_meta_media_id_is_fetched_from_the_simulator_with_its_bytes(
    make_flavoured: FlavourFactory,
    control: SimulatorControl,
    receiver: WebhookReceiver,
    s3: Any,
    kind: str,
) -> None:
    instance = make_flavoured("meta")
    control.incoming(instance.id, PEER, kind=kind)
    media_id = media_id_of(receiver, instance.id, kind)
    client = MetaCloudClient(local_mode=True)
    media = S3Media(s3, BUCKET, lambda key: (client, instance.target()))

    ref = media.resolve(
        "acme",
        "acme:line",
        f"wamid.{media_id}",
        Media(kind=MEDIA_KIND[kind], source=MediaSource(via="meta_media_id", media_id=media_id)),
    )

    assert ref.sha256 == hashlib.sha256(media_file(kind)).hexdigest()
    assert media.read(ref) == media_file(kind)


def test_a_failed_media_id_is_expired(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver, s3: Any
) -> None:
    instance = make_flavoured("meta")
    control.incoming(instance.id, PEER, kind="image")
    media_id = media_id_of(receiver, instance.id, "image")
    control.fail_media(media_id)
    client = MetaCloudClient(local_mode=True)
    media = S3Media(s3, BUCKET, lambda key: (client, instance.target()))

    with pytest.raises(MediaUnavailable) as refused:
        media.resolve(
            None,
            "acme:line",
            "wamid.x",
            Media(kind="image", source=MediaSource(via="meta_media_id", media_id=media_id)),
        )

    assert refused.value.reason == "expired"


def test_the_simulators_files_are_real() -> None:
    png, voice, pdf = files.png(), files.ogg_opus(), files.pdf()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png.endswith(b"IEND\xaeB`\x82")
    assert voice[28:36] == b"OpusHead" and b"OpusTags" in voice
    assert pdf.startswith(b"%PDF-1.4") and pdf.rstrip().endswith(b"%%EOF")
    # Every Ogg page's CRC is the one its bytes give (checked again from the page itself).
    offset = 0
    while offset < len(voice):
        segments = voice[offset + 26]
        size = 27 + segments + sum(voice[offset + 27 : offset + 27 + segments])
        page = voice[offset : offset + size]
        zeroed = page[:22] + b"\x00\x00\x00\x00" + page[26:]
        assert int.from_bytes(page[22:26], "little") == files._ogg_crc(zeroed)
        offset += size


def test_an_evolution_message_key_is_fetched_through_get_base64(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver, s3: Any
) -> None:
    instance = make_flavoured("evolution")
    sent = control.incoming(instance.id, PEER, kind="document")
    receiver.wait_for(instance.id, 1)
    client = EvolutionClient(local_mode=True)
    media = S3Media(s3, BUCKET, lambda key: (client, instance.target()))
    source = MediaSource(via="provider_download", fields={"key": {"id": sent["id"]}})

    ref = media.resolve("acme", "acme:line", sent["id"], Media(kind="document", source=source))

    assert (ref.mime_type, ref.file_name) == ("application/pdf", "comprovante.pdf")
    assert media.read(ref) == media_file("document")
    control.fail_media(sent["id"])
    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", "acme:line", "another", Media(kind="document", source=source))
    assert refused.value.reason == "not_found"


def test_a_wuzapi_voice_note_is_fetched_through_its_download_route(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver, s3: Any
) -> None:
    instance = make_flavoured("wuzapi")
    sent = control.incoming(instance.id, PEER, kind="audio")
    [delivery] = receiver.wait_for(instance.id, 1)
    audio = delivery.envelope["event"]["Message"]["audioMessage"]
    fields = {"kind": "voice", "Url": audio["URL"], "DirectPath": audio["directPath"], "Mimetype": audio["mimetype"]}
    fields |= {"MediaKey": audio["mediaKey"], "FileSHA256": audio["fileSHA256"], "FileLength": audio["fileLength"]}
    fields |= {"FileEncSHA256": audio["fileEncSHA256"]}
    client = WuzapiClient(local_mode=True)
    media = S3Media(s3, BUCKET, lambda key: (client, instance.target()))
    source = MediaSource(via="provider_download", fields=fields)

    ref = media.resolve("acme", "acme:line", sent["id"], Media(kind="voice", source=source))

    assert ref.mime_type == "audio/ogg"
    assert media.read(ref) == media_file("audio") == files.ogg_opus(frames=10)
    control.fail_media(audio["directPath"])
    with pytest.raises(MediaUnavailable) as refused:
        media.resolve("acme", "acme:line", "again", Media(kind="voice", source=source))
    assert (refused.value.reason, refused.value.retryable) == ("provider_error", True)

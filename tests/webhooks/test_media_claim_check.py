"""The ingest's claim check: a webhook's inline file goes to the media bucket before its event
is stored, and the stored event holds the reference, never the base64.

The kind's mapping of media (its own module) is stood in for by a wrapper that reads the
envelope's `data.media.base64` into `InboundEvent.media_bytes`, as the mapping hands it over."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

import boto3
import pytest

from devstack.simulator import files
from switchboard.providers import envelope as envelope_kind
from switchboard.providers.base import InboundEvent, WebhookRequest
from switchboard.providers.content import Media, MediaMessage, content_data
from tools.support.api import Client
from tools.support.aws import REGION, AwsResources
from tools.support.provider_webhooks import Catalog, deliver, envelope, message_data, stored


@pytest.fixture(autouse=True)
def inline_media(monkeypatch: pytest.MonkeyPatch) -> None:
    events = envelope_kind.events

    def with_media(request: WebhookRequest) -> list[InboundEvent]:
        mapped = []
        for event in events(request):
            raw = json.loads(request.body)["data"].get("media")
            if event.name != "message" or not raw:
                mapped.append(event)
                continue
            media = Media(kind=raw["kind"], mime_type=raw.get("mimeType"), caption="olha", inline=True)
            data = {**event.data, "content": content_data(MediaMessage(media=media))}
            mapped.append(event.model_copy(update={"data": data, "media_bytes": base64.b64decode(raw["base64"])}))
        return mapped

    monkeypatch.setattr(envelope_kind, "events", with_media)


def media_message(kind: str, data: bytes, message_id: str = "3EB0PHOTO1") -> dict[str, Any]:
    return message_data() | {
        "id": message_id,
        "media": {"kind": kind, "mimeType": "image/png", "base64": base64.b64encode(data).decode()},
    }


def objects(aws: AwsResources) -> list[dict[str, Any]]:
    listed = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=aws_bucket())
    return list(listed.get("Contents") or [])


def aws_bucket() -> str:
    return os.environ["MEDIA_BUCKET"]


def stored_content(aws: AwsResources) -> dict[str, Any]:
    [record] = stored(aws, "WHEVENT#")
    assert "base64" not in json.dumps(record, default=str)
    content: dict[str, Any] = json.loads(record["payload"])["data"]["content"]
    return content


def test_a_three_megabyte_base64_photo_is_taken_in_and_its_bytes_stored(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    photo = files.sized(files.png(), 3 * 1024 * 1024)
    body = envelope("message", catalog.provider_instance_id, media_message("image", photo), seq=1)
    assert len(body) > 4 * 1024 * 1024

    answer = deliver(client, catalog.provider_id, body)

    assert answer.status == 200, answer.body
    content = stored_content(aws)
    ref = content["media"]["stored"]
    assert ref["sha256"] == hashlib.sha256(photo).hexdigest()
    assert (ref["mime_type"], ref["size"]) == ("image/png", len(photo))
    assert content["media"]["unavailable"] is None
    [item] = objects(aws)
    assert item["Key"] == ref["key"] and item["Key"].startswith("acme/")
    got = boto3.client("s3", region_name=REGION).get_object(Bucket=aws_bucket(), Key=ref["key"])["Body"].read()
    assert hashlib.sha256(got).hexdigest() == ref["sha256"]


def test_a_redelivery_stores_the_same_object_once(client: Client, aws: AwsResources, catalog: Catalog) -> None:
    body = envelope("message", catalog.provider_instance_id, media_message("image", files.png()), seq=1)

    assert deliver(client, catalog.provider_id, body).status == 200
    assert deliver(client, catalog.provider_id, body).json()["outcome"] == "duplicate"

    assert len(objects(aws)) == 1


def test_refused_bytes_leave_the_event_applied_with_the_reason(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body = envelope("message", catalog.provider_instance_id, media_message("image", b"MZ\x90\x00" * 64), seq=1)

    answer = deliver(client, catalog.provider_id, body)

    assert answer.status == 200, answer.body
    assert answer.json()["outcome"] == "applied"
    content = stored_content(aws)
    assert content["media"]["unavailable"] == "bad_type"
    assert content["media"]["stored"] is None
    assert content["media"]["caption"] == "olha"
    assert objects(aws) == []

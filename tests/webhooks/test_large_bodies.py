"""Deliveries up to the 1 MB limit, most of it media as base64 (as real providers post it), are
accepted and applied, and what is stored of them fits a DynamoDB item: the mapped event and the
SHA-256 of the body, never the body."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from switchboard.webhooks.events import MAX_DATA_BYTES, MAX_TEXT_CHARS, storable
from tools.support.api import Client, TenantKeys
from tools.support.aws import REGION, AwsResources
from tools.support.provider_webhooks import WEBHOOK_SECRET, Catalog, build_catalog, deliver, message_data

CONTRACTS = Path(__file__).resolve().parents[1] / "contracts"
BODY_BYTES = 950 * 1024
ITEM_LIMIT = 400 * 1024  # DynamoDB's item size limit


def media(size: int) -> str:
    """`size` characters of base64, as a provider posts a downloaded image."""
    raw = (b"\xff\xd8\xff\xe0" + bytes(range(256)) * (size // 192 + 1))[: (size // 4 + 1) * 3]
    return base64.b64encode(raw).decode()[:size]


def padded_to(payload: dict[str, Any], place: Any, key: str) -> bytes:
    """The payload with `place[key]` a base64 image that brings the body to BODY_BYTES."""
    place[key] = ""
    room = BODY_BYTES - len(json.dumps(payload).encode())
    place[key] = media(room)
    body = json.dumps(payload).encode()
    assert len(body) == BODY_BYTES
    return body


def records(aws: AwsResources) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    return [item for item in table.scan()["Items"] if str(item["pk"]).startswith("WHEVENT#")]


def item_bytes(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + len(str(value).encode()) for name, value in item.items())


def forwarded_texts(aws: AwsResources) -> list[str]:
    return [json.loads(message["Body"])["text"] for message in aws.queue_messages("ForwardQueue")]


def test_a_950_kb_wuzapi_text_message_with_a_base64_preview_is_applied_and_stored_small(
    client: Client, aws: AwsResources, make_tenant: Callable[..., TenantKeys]
) -> None:
    catalog = build_catalog(client, make_tenant("acme"), webhook_scheme="wuzapi-hmac")
    payload = json.loads((CONTRACTS / "wuzapi" / "webhook_json_message_extended_text.json").read_bytes())
    payload["instanceName"] = catalog.provider_instance_id
    extended = payload["event"]["Message"]["extendedTextMessage"]
    body = padded_to(payload, extended, "jpegThumbnail")  # a link preview's thumbnail
    signature = hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()

    answer = client.post(
        f"/webhooks/{catalog.provider_id}",
        body=body,
        headers={"x-hmac-signature": signature, "content-type": "application/json"},
    )

    assert answer.status == 200, answer.body[:300]
    assert answer.json()["outcome"] == "applied"
    assert forwarded_texts(aws) == [extended["text"]]
    [record] = records(aws)
    assert record["bodySha256"] == hashlib.sha256(body).hexdigest()
    assert item_bytes(record) < 4 * 1024


def test_a_950_kb_evolution_image_message_with_its_base64_is_applied_and_recorded_without_it(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    admin = catalog.tenant.admin
    number = client.post("/api/numbers", key=admin, json_body={"number": "5511999990002", "displayName": "Evo"})
    provider = client.post(
        "/api/providers",
        key=admin,
        json_body={
            "name": "evo",
            "kind": "evolution",
            "baseUrl": "http://127.0.0.1:3100",
            "webhookSecret": "x" * 32,
            "webhookScheme": "evolution-apikey",
        },
    )
    put = client.put(
        "/api/instances/acme-evo",
        key=admin,
        json_body={
            "providerId": provider.json()["id"],
            "providerInstanceId": "switchboard-test",
            "numberId": number.json()["id"],
            "token": "evolution-instance-token",
        },
    )
    assert (number.status, provider.status, put.status) == (201, 201, 201), put.body
    payload = json.loads((CONTRACTS / "evolution" / "webhook_messages_upsert_image.json").read_bytes())
    payload["apikey"] = "evolution-instance-token"
    body = padded_to(payload, payload["data"]["message"], "base64")  # Evolution's `webhook_base64`

    answer = deliver(client, provider.json()["id"], body, headers={"content-type": "application/json"})

    assert answer.status == 200, answer.body[:300]
    assert (answer.json()["outcome"], answer.json()["instance"]) == ("applied", "acme-evo")
    [record] = records(aws)
    assert (record["status"], record["bodySha256"]) == ("applied", hashlib.sha256(body).hexdigest())
    assert "base64" not in record["payload"]
    assert item_bytes(record) < 4 * 1024


def test_a_950_kb_signed_envelope_message_carrying_media_is_applied_without_the_media(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    data = message_data("olá")
    wrapper = {"event": "message", "eventId": "evt-big-1", "instanceId": catalog.provider_instance_id, "data": data}
    body = padded_to(wrapper, data, "base64")
    assert json.loads(body)["data"]["text"] == "olá"

    answer = deliver(client, catalog.provider_id, body)

    assert answer.status == 200, answer.body[:300]
    assert answer.json()["outcome"] == "applied"
    assert forwarded_texts(aws) == ["olá"]
    [record] = records(aws)
    assert record["bodySha256"] == hashlib.sha256(body).hexdigest()
    stored = json.loads(record["payload"])["data"]
    assert "base64" not in stored
    assert stored["content"] == {"type": "text", "body": "olá"}
    assert item_bytes(record) < ITEM_LIMIT


def test_stored_data_keeps_texts_and_ids_drops_media_and_is_bounded_whatever_the_shape() -> None:
    longest_text = "a\u0000" * MAX_TEXT_CHARS  # escapes to six bytes per NUL
    shapes: list[dict[str, Any]] = [
        {"id": "m1", "text": "hi", "base64": media(900_000), "thumbs": [{"jpegThumbnail": media(10_000), "w": 1}]},
        {"id": "m2", "text": longest_text},
        {"id": "m3", "many": [media(4000)] * 200},
        {str(index): index for index in range(60_000)},
    ]

    bounded = [storable(shape) for shape in shapes]

    assert bounded[0] == {"id": "m1", "text": "hi", "thumbs": [{"w": 1}]}
    assert bounded[1]["id"] == "m2"
    assert longest_text.startswith(bounded[1]["text"])
    assert all(len(json.dumps(data).encode()) <= MAX_DATA_BYTES for data in bounded)

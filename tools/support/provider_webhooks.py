"""A tenant's catalog and signed provider webhooks through the API (webhooks, routing, usage tests).

Signatures are computed here from the raw bytes, independently of `switchboard.providers.envelope`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3

from tools.support.api import Client, TenantKeys
from tools.support.aws import REGION, AwsResources

WEBHOOK_SECRET = "whsec-routing-test-secret-1"
INSTANCE_TOKEN = "instance-token-routing-test-1"


@dataclass
class Catalog:
    tenant: TenantKeys
    provider_id: str
    instance: str
    provider_instance_id: str
    number_id: str
    answers: dict[str, Any]  # what the API answered for the "number", the "provider" and the "instance"


def build_catalog(
    client: Client,
    tenant: TenantKeys,
    *,
    instance: str = "acme-main",
    provider_instance_id: str = "inst-1",
    base_url: str = "http://127.0.0.1:3100",
    number: str = "5511999990001",
    token: str = INSTANCE_TOKEN,
    webhook_secret: str = WEBHOOK_SECRET,
    admin_token: str | None = None,
    kind: str = "messages",
    webhook_scheme: str | None = "envelope",
) -> Catalog:
    """A number, a wuzapi provider and an instance binding them, made by the tenant's admin.

    The provider signs its webhooks as the calls-capable server does (`envelope`) unless told
    otherwise (`webhook_scheme="wuzapi-hmac"`: a plain wuzapi; None: saved without a scheme, the
    first authentic delivery stores it)."""
    created_number = client.post("/api/numbers", key=tenant.admin, json_body={"number": number, "displayName": "Main"})
    assert created_number.status == 201, created_number.body
    provider_body = {"name": "zap", "kind": "wuzapi", "baseUrl": base_url, "webhookSecret": webhook_secret}
    if admin_token is not None:
        provider_body["adminToken"] = admin_token
    if webhook_scheme is not None:
        provider_body["webhookScheme"] = webhook_scheme
    provider = client.post("/api/providers", key=tenant.admin, json_body=provider_body)
    assert provider.status == 201, provider.body
    put = client.put(
        f"/api/instances/{instance}",
        key=tenant.admin,
        json_body={
            "providerId": provider.json()["id"],
            "providerInstanceId": provider_instance_id,
            "numberId": created_number.json()["id"],
            "token": token,
            "kind": kind,
        },
    )
    assert put.status == 201, put.body
    answers = {"number": created_number.json(), "provider": provider.json(), "instance": put.json()}
    return Catalog(tenant, provider.json()["id"], instance, provider_instance_id, created_number.json()["id"], answers)


def envelope(
    name: str, instance_id: str, data: dict[str, Any], *, seq: int | None = None, event_id: str | None = None
) -> bytes:
    body: dict[str, Any] = {
        "EventType": name,
        "event": name,
        "eventId": event_id or str(uuid.uuid4()),
        "instanceId": instance_id,
        "data": data,
    }
    if seq is not None:
        body["seq"] = seq
    return json.dumps(body, separators=(",", ":")).encode()


def signed_headers(body: bytes, secret: str = WEBHOOK_SECRET, timestamp: str | None = None) -> dict[str, str]:
    stamp = timestamp if timestamp is not None else str(int(time.time()))
    digest = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"X-Webhook-Timestamp": stamp, "X-Webhook-Signature": f"v1={digest}"}


def deliver(client: Client, provider_id: str, body: bytes, headers: dict[str, str] | None = None) -> Any:
    return client.post(f"/webhooks/{provider_id}", body=body, headers=headers or signed_headers(body))


def message_data(text: str = "hello", sender: str = "5511988887777", written: datetime | None = None) -> dict[str, Any]:
    """A text `sender` wrote at `written` (now by default: the heard mark counts from it)."""
    return {
        "id": f"3EB0{uuid.uuid4().hex[:12].upper()}",
        "from": sender,
        "text": text,
        "timestamp": (written or datetime.now(UTC)).isoformat().replace("+00:00", "Z"),
    }


# --- what ingest left in the table and the forward queue ----------------------------------------


def stored(aws: AwsResources, prefix: str) -> list[dict[str, Any]]:
    table = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    return [item for item in table.scan()["Items"] if str(item["pk"]).startswith(prefix)]


def usage_in(aws: AwsResources, instance_key: str) -> int:
    return sum(int(item.get("messages_in", 0)) for item in stored(aws, f"USAGE#{instance_key}"))


def forwarded(aws: AwsResources) -> list[dict[str, Any]]:
    return [json.loads(message["Body"]) for message in aws.queue_messages("ForwardQueue")]

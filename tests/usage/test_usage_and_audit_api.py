"""Usage per (owner_tag, month) and the audit log of configuration changes, through the API."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from devstack.simulator import files
from switchboard import bootstrap
from tools.support.api import SECRET_WATCH, Client
from tools.support.aws import AwsResources
from tools.support.provider_webhooks import build_catalog, deliver, envelope, message_data, stored


def this_month() -> str:
    """The month usage was just counted in: read after the counting, never at import (a run that
    crosses midnight at the end of a month would otherwise ask for the previous month)."""
    return datetime.now(UTC).strftime("%Y-%m")


def receive(client: Client, provider_id: str, instance_id: str, count: int) -> None:
    for _ in range(count):
        answer = deliver(client, provider_id, envelope("message", instance_id, message_data()))
        assert answer.status == 200, answer.body


def test_given_messages_on_several_tenants_when_summarised_then_grouped_by_owner_tag_and_month(
    client: Client, aws: AwsResources, make_tenant: Any, platform_key: str
) -> None:
    acme = build_catalog(client, make_tenant("acme"))
    globex = build_catalog(client, make_tenant("globex"), instance="globex-main", provider_instance_id="inst-g")
    untagged = client.put(
        "/api/instances/acme-global",
        key=acme.tenant.admin,
        json_body={
            "providerId": acme.provider_id,
            "providerInstanceId": "inst-untagged",
            "numberId": acme.number_id,
            "token": "instance-token-untagged-1",
            "ownerTag": None,
        },
    )
    assert untagged.status == 201, untagged.body
    receive(client, acme.provider_id, "inst-1", 3)
    receive(client, globex.provider_id, "inst-g", 2)
    receive(client, acme.provider_id, "inst-untagged", 1)
    bootstrap.usage_recorder().record_outgoing(
        bootstrap.catalog_repository().get_instance("acme", "acme-main"), datetime.now(UTC), "send-1"
    )

    month = this_month()
    everything = client.get(f"/api/usage/summary?month={month}", key=platform_key).json()
    own = client.get(f"/api/usage/summary?month={month}", key=globex.tenant.admin).json()
    other_month = client.get("/api/usage/summary?month=2020-01", key=platform_key).json()

    assert [(u["ownerTag"], u["month"], u["messagesIn"], u["messagesOut"]) for u in everything] == [
        ("acme", month, 3, 1),
        ("globex", month, 2, 0),
        (None, month, 1, 0),
    ]
    today = datetime.now(UTC).date().isoformat()
    assert everything[0]["instances"] == [
        {
            "tenant": "acme",
            "instance": "acme-main",
            "messagesIn": 3,
            "messagesOut": 1,
            "messagesInByType": {"text": 3},
            "days": [{"day": today, "messagesIn": 3, "messagesOut": 1}],
        }
    ]
    assert [(u["ownerTag"], u["messagesIn"]) for u in own] == [("globex", 2)]
    assert other_month == []


def test_incoming_messages_are_counted_by_type_under_their_stored_names(
    client: Client, aws: AwsResources, make_tenant: Any, platform_key: str
) -> None:
    acme = build_catalog(client, make_tenant("acme"))
    kinds: list[dict[str, Any]] = [
        {"type": "voice", "media": {"mimeType": "audio/ogg", "base64": base64.b64encode(files.ogg_opus(2)).decode()}},
        {
            "type": "image",
            "text": "a nota",
            "media": {"mimeType": "image/png", "base64": base64.b64encode(files.png()).decode()},
        },
        {"type": "image", "media": {"mimeType": "image/png", "base64": base64.b64encode(files.png()).decode()}},
        {"type": "location", "location": {"latitude": -23.5, "longitude": -46.6}},
        {"type": "text", "text": "oi"},
    ]
    for fields in kinds:
        data: dict[str, Any] = {key: value for key, value in message_data().items() if key != "text"}
        data |= fields
        assert deliver(client, acme.provider_id, envelope("message", "inst-1", data)).status == 200

    [usage] = client.get(f"/api/usage/summary?month={this_month()}", key=platform_key).json()

    assert usage["messagesIn"] == 5
    assert usage["messagesInByType"] == {"image": 2, "location": 1, "text": 1, "voice": 1}
    assert usage["instances"][0]["messagesInByType"] == usage["messagesInByType"]
    [day] = stored(aws, "USAGE#acme:acme-main")
    assert {name: int(value) for name, value in day.items() if name.startswith("in_type_")} == {
        "in_type_image": 2,
        "in_type_location": 1,
        "in_type_text": 1,
        "in_type_voice": 1,
    }


def test_given_an_outgoing_count_with_an_id_when_recorded_twice_then_counted_once(
    client: Client, aws: AwsResources, make_tenant: Any
) -> None:
    acme = build_catalog(client, make_tenant("acme"))
    instance = bootstrap.catalog_repository().get_instance("acme", "acme-main")
    recorder = bootstrap.usage_recorder()

    counted = [recorder.record_outgoing(instance, datetime.now(UTC), "msg-1") for _ in range(2)]
    recorder.record_outgoing(instance, datetime.now(UTC))

    assert counted == [True, False]
    month = this_month()
    summary = client.get(f"/api/usage/summary?month={month}", key=acme.tenant.admin).json()
    assert summary[0]["messagesOut"] == 2


def test_given_a_malformed_month_when_summarised_then_422(client: Client, platform_key: str) -> None:
    for month in ("2026-13", "2026-1", "november", ""):
        assert client.get(f"/api/usage/summary?month={month}", key=platform_key).status == 422


def test_given_a_downstream_change_when_the_audit_is_read_then_who_what_before_after_without_the_token(
    client: Client, aws: AwsResources, make_tenant: Any, platform_key: str
) -> None:
    acme, globex = make_tenant("acme"), make_tenant("globex")
    token = "cw-token-audit-very-secret-1"
    SECRET_WATCH.secrets.add(token)
    mapping = {
        "downstreamBaseUrl": "http://127.0.0.1:9400",
        "downstreamApiToken": token,
        "downstreamAccountId": 7,
        "downstreamInboxId": 12,
    }
    client.put("/api/tenants/acme", key=acme.admin, json_body=mapping)
    client.put("/api/tenants/acme", key=acme.admin, json_body={**mapping, "downstreamInboxId": 13})

    own = client.get("/api/audit", key=acme.admin).json()
    as_platform = client.get("/api/audit?tenant=acme", key=platform_key).json()
    theirs = client.get("/api/audit", key=globex.admin).json()

    assert own == as_platform
    updates = [entry for entry in own if entry["action"] == "downstream.updated"]
    assert len(updates) == 2
    newest = updates[0]
    assert (newest["before"]["inbox_id"], newest["after"]["inbox_id"]) == (12, 13)
    assert newest["actorKeyId"] and newest["target"] == "acme"
    assert "downstream.updated" not in {entry["action"] for entry in theirs}
    assert token not in json.dumps(own)


def test_given_an_instance_whose_owner_tag_changes_then_what_was_counted_stays_with_the_old_tag(
    client: Client, aws: AwsResources, make_tenant: Any, platform_key: str
) -> None:
    acme = build_catalog(client, make_tenant("acme"))
    receive(client, acme.provider_id, "inst-1", 3)

    def retag(owner_tag: str | None) -> None:
        body = {
            "providerId": acme.provider_id,
            "providerInstanceId": "inst-1",
            "numberId": acme.number_id,
            "token": "instance-token-acme-1",
            "ownerTag": owner_tag,
        }
        answer = client.put("/api/instances/acme-main", key=acme.tenant.admin, json_body=body)
        assert answer.status in (200, 201), answer.body

    retag(None)
    receive(client, acme.provider_id, "inst-1", 2)
    retag("acme")
    receive(client, acme.provider_id, "inst-1", 1)

    month = this_month()
    summary = client.get(f"/api/usage/summary?month={month}", key=platform_key).json()
    assert {u["ownerTag"]: u["messagesIn"] for u in summary} == {"acme": 4, None: 2}

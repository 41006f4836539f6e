"""Provider events the ingest acknowledges without applying them are listed per instance with their
reason (in words and as a code), newest first, a page at a time from an index (no Scan), to the
instance's own tenant only; and counted per reason and provider kind, never per instance."""

from __future__ import annotations

import json
from typing import Any

import pytest

from switchboard.providers.base import WebhookRequest
from switchboard.providers.evolution import KIND as EVOLUTION
from tests.providers.test_evolution import fixture as evolution_fixture
from tests.providers.test_wuzapi_webhooks import _info, json_variant, mapped
from tools.support.api import Client
from tools.support.aws import AwsResources
from tools.support.provider_webhooks import Catalog, build_catalog, deliver, envelope, message_data


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        (lambda p: _info(p).update(IsFromMe=True), "from_us"),
        (lambda p: _info(p).update(Sender="123456789012345@lid", SenderAlt=""), "no_sender"),
        (lambda p: _info(p).update(Chat="status@broadcast", IsGroup=True), "group"),
        (lambda p: _info(p).update(Chat="120363025246125486@g.us"), "group"),
        (lambda p: p["event"].update(Message={"pollUpdateMessage": {}}), "unsupported"),
    ],
)
def test_a_wuzapi_message_that_does_not_map_says_why_in_a_code(change: Any, kind: str) -> None:
    [event] = mapped(json_variant("webhook_json_message_text.json", change))

    assert event.ignored is not None
    assert event.ignored_kind == kind


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [("webhook_messages_upsert_from_me.json", "from_us"), ("webhook_messages_upsert_group.json", "group")],
)
def test_an_evolution_message_that_does_not_map_says_why_in_a_code(fixture: str, kind: str) -> None:
    [event] = EVOLUTION.events(WebhookRequest(body=evolution_fixture(fixture)), "evolution-jwt")

    assert (event.ignored is not None, event.ignored_kind) == (True, kind)


# --- through the API, on moto ---------------------------------------------------------------------


@pytest.fixture
def catalog(client: Client, make_tenant: Any, aws: AwsResources) -> Catalog:
    return build_catalog(client, make_tenant("acme"))


def ignored_events(client: Client, catalog: Catalog, query: str = "", key: str | None = None) -> Any:
    return client.get(f"/api/instances/{catalog.instance}/ignored-events{query}", key=key or catalog.tenant.admin)


def test_the_ignored_events_of_an_instance_are_listed_with_their_reason_newest_first(
    client: Client, catalog: Catalog, capsys: pytest.CaptureFixture[str], dynamo_calls: list[str]
) -> None:
    unknown = envelope("typing", catalog.provider_instance_id, {})
    empty = envelope("message", catalog.provider_instance_id, {"id": "3EB0EMPTY", "from": "5511988887777"})
    applied = envelope("message", catalog.provider_instance_id, message_data("oi"))
    for body in (unknown, empty, applied):
        assert deliver(client, catalog.provider_id, body).status == 200
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"ProviderEventsIgnored"' in line]
    dynamo_calls.clear()

    answer = ignored_events(client, catalog)

    assert answer.status == 200, answer.body
    items = answer.json()["items"]
    assert [(item["event"], item["reasonCode"]) for item in items] == [
        ("message", "unsupported"),
        ("typing", "unsupported"),
    ]
    assert items[1]["reason"] == "unknown event typing"
    assert all(item["receivedAt"] and item["eventId"] for item in items)
    assert dynamo_calls.count("query") == 1 and "scan" not in dynamo_calls
    assert [(metric["reason"], metric["provider_kind"]) for metric in emitted] == [("unsupported", "wuzapi")] * 2
    assert all("instance" not in metric and "tenant" not in metric for metric in emitted)


def test_the_cursor_pages_through_them_and_another_tenant_sees_none(
    client: Client, catalog: Catalog, make_tenant: Any
) -> None:
    for name in ("typing", "presence", "chat_state"):
        assert deliver(client, catalog.provider_id, envelope(name, catalog.provider_instance_id, {})).status == 200

    first = ignored_events(client, catalog, "?limit=2").json()
    rest = ignored_events(client, catalog, f"?limit=2&cursor={first['cursor']}").json()

    assert [item["event"] for item in first["items"] + rest["items"]] == ["chat_state", "presence", "typing"]
    assert rest["cursor"] is None
    other = build_catalog(
        client,
        make_tenant("globex"),
        instance=catalog.instance,
        provider_instance_id="inst-9",
        number="5511999990009",
    )
    assert ignored_events(client, other).json()["items"] == []
    assert ignored_events(client, catalog, "?limit=1", key=other.tenant.admin).json()["items"] == []
    foreign = ignored_events(client, catalog, f"?cursor={first['cursor']}", key=other.tenant.admin)
    assert (foreign.status, foreign.json()["error"]) == (400, "invalid_cursor")
    missing = client.get("/api/instances/nobody/ignored-events", key=catalog.tenant.admin)
    assert missing.status == 404

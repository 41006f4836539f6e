"""The template cache on moto, through the API: a Cloud API number's templates read from the Graph
API once, then from the cache until they age or a refresh is asked; a status change from the
account's webhook in the cache at once; a send checked against it before anything is stored
(422 saying what is wrong); the items under their stored names."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.bootstrap.templates import template_service
from switchboard.providers.base import ProviderTarget
from tools.support.api import SECRET_WATCH, Client, TenantKeys

CONTRACTS = Path(__file__).parent.parent / "contracts" / "meta"
WABA = "102290129340398"
APP_SECRET = "meta-app-secret-0123456789"
TO = "5511988880001"


class Graph:
    """The Graph API's template listing (Meta's documented example answer), counting the reads."""

    def __init__(self) -> None:
        self.templates: list[dict[str, Any]] = json.loads((CONTRACTS / "templates_list.json").read_text())["data"]
        self.reads: list[tuple[str, str | None]] = []

    def list_templates(self, target: ProviderTarget, account_id: str) -> list[dict[str, Any]]:
        self.reads.append((account_id, target.instance_token))
        return [dict(t) for t in self.templates]


@pytest.fixture
def graph(client: Client, override: Callable[..., object]) -> Graph:
    fake = Graph()
    override(provider_client=lambda kind: fake)
    return fake


@pytest.fixture
def cloud(client: Client, make_tenant: Callable[..., TenantKeys], graph: Graph) -> dict[str, str]:
    """Tenant acme: a Meta provider with an admin token, a Cloud API number of account WABA, and a
    send key whose default number it is."""
    tenant = make_tenant("acme")
    provider = client.post(
        "/api/providers",
        key=tenant.admin,
        json_body={
            "kind": "meta",
            "baseUrl": "http://127.0.0.1:3100/meta",
            "webhookSecret": APP_SECRET,
            "adminToken": "meta-admin-token-0123456789",
        },
    )
    assert provider.status == 201, provider.body
    number = client.post(
        "/api/numbers",
        key=tenant.admin,
        json_body={"number": "5511900000004", "displayName": "cloud", "metaPhoneId": "1065", "wabaId": WABA},
    )
    assert number.status == 201, number.body
    key = client.post(
        "/api/api-keys",
        key=tenant.admin,
        json_body={"name": "crm", "scopes": ["send"], "defaultNumber": "5511900000004"},
    )
    assert key.status == 201, key.body
    return {
        "admin": tenant.admin,
        "send": key.json()["key"],
        "number": number.json()["id"],
        "provider": provider.json()["id"],
    }


def listing(client: Client, cloud: dict[str, str], query: str = "") -> dict[str, Any]:
    answer = client.get(f"/api/numbers/{cloud['number']}/templates{query}", key=cloud["admin"])
    assert answer.status == 200, answer.body
    listed: dict[str, Any] = answer.json()
    return listed


def promo(*values: str) -> dict[str, Any]:
    parameters = [{"type": "text", "text": value} for value in values]
    return {"name": "2023_april_promo", "language": "en_US", "components": [{"type": "body", "parameters": parameters}]}


def test_the_graph_api_is_read_once_then_the_cache_answers_until_a_refresh_and_the_items_keep_their_names(
    client: Client, cloud: dict[str, str], graph: Graph
) -> None:
    first = listing(client, cloud)
    second = listing(client, cloud)
    refreshed = listing(client, cloud, "?refresh=true")

    assert graph.reads == [(WABA, "meta-admin-token-0123456789")] * 2
    assert (first["fromCache"], second["fromCache"], refreshed["fromCache"]) == (False, True, False)
    assert [t["name"] for t in second["templates"]] == ["2023_april_promo", "hello_world"]
    assert second["templates"][0]["takes"]["body"] == ["1", "2"]
    assert second["templates"] == first["templates"]
    table = bootstrap.table()
    meta = table.get_item(Key={"pk": f"TEMPLATES#acme#{WABA}", "sk": "#META"})["Item"]
    item = table.get_item(Key={"pk": f"TEMPLATES#acme#{WABA}", "sk": "T#hello_world#en_US"})["Item"]
    assert set(meta) == {"pk", "sk", "tenant", "waba_id", "fetched_at", "expiresAt"}
    assert set(item) == {
        "pk",
        "sk",
        "tenant",
        "name",
        "language",
        "status",
        "category",
        "definition",
        "fetched_at",
        "expiresAt",
    }
    assert item["definition"]["components"][0] == {"format": "TEXT", "text": "Hello World", "type": "HEADER"}


def test_a_send_that_does_not_fit_its_template_is_refused_before_anything_is_stored_and_only_cloud_numbers_have_some(
    client: Client, cloud: dict[str, str], graph: Graph
) -> None:
    short = client.post("/api/messages", key=cloud["send"], json_body={"to": TO, "template": promo("Mark")})
    unknown = client.post(
        "/api/messages",
        key=cloud["send"],
        json_body={"to": TO, "template": {"name": "2023_april_promo", "language": "pt_BR"}},
    )
    fallback = client.post(
        "/api/messages",
        key=cloud["send"],
        json_body={
            "to": TO,
            "text": "oi",
            "fallbackTemplate": {
                "name": "hello_world",
                "language": "en_US",
                "components": [{"type": "body", "parameters": [{"type": "text", "text": "x"}]}],
            },
        },
    )
    fits = client.post("/api/messages", key=cloud["send"], json_body={"to": TO, "template": promo("Mark", "FALL25")})

    assert (short.status, short.json()["error"]) == (422, "template_parameters")
    assert short.json()["message"] == "template 2023_april_promo (en_US): the body takes 2 parameters, got 1"
    assert (unknown.status, unknown.json()["error"]) == (422, "unknown_template")
    assert "it exists in en_US" in unknown.json()["message"]
    assert (fallback.status, fallback.json()["error"]) == (422, "template_parameters")
    assert fits.status == 202, fits.body
    log = client.get(f"/api/messages?to={TO}", key=cloud["admin"]).json()["items"]
    assert [item["id"] for item in log] == [fits.json()["id"]]
    view = client.get(f"/api/messages/{fits.json()['id']}", key=cloud["send"]).json()
    assert view["type"] == "template"
    assert view["trace"][0]["data"]["template"] == {"name": "2023_april_promo", "language": "en_US"}
    assert len(graph.reads) == 1  # every check after the first read the cache
    plain = client.post("/api/numbers", key=cloud["admin"], json_body={"number": "5511900000009", "displayName": "p"})
    orphan = client.post(
        "/api/numbers", key=cloud["admin"], json_body={"number": "5511900000008", "displayName": "o", "wabaId": "1"}
    )
    none = client.get(f"/api/numbers/{plain.json()['id']}/templates", key=cloud["admin"])
    assert (none.status, none.json()["error"]) == (422, "no_business_account")
    assert orphan.status == 422 and b"metaPhoneId" in orphan.body


def test_a_status_change_reaches_the_cache_at_once_and_a_paused_template_is_refused(
    client: Client, cloud: dict[str, str], graph: Graph
) -> None:
    listing(client, cloud)

    template_service().on_status("acme", WABA, name="2023_april_promo", language="en_US", status="PAUSED")
    template_service().on_status("acme", WABA, name="never_listed", language="en_US", status="APPROVED")

    statuses = {t["name"]: t["status"] for t in listing(client, cloud)["templates"]}
    assert statuses == {"2023_april_promo": "PAUSED", "hello_world": "APPROVED"}
    paused = client.post("/api/messages", key=cloud["send"], json_body={"to": TO, "template": promo("Mark", "FALL25")})
    assert paused.status == 422 and "is PAUSED, not APPROVED" in paused.json()["message"]


def test_the_accounts_status_webhook_through_the_handler_updates_the_cache_and_an_unknown_account_is_acknowledged(
    client: Client, cloud: dict[str, str], graph: Graph
) -> None:
    SECRET_WATCH.secrets.add(APP_SECRET)
    instance = {"providerId": cloud["provider"], "providerInstanceId": "1065", "numberId": cloud["number"]}
    assert (
        client.put("/api/instances/cloud", key=cloud["admin"], json_body={**instance, "token": "meta-token-1"}).status
        == 201
    )
    listing(client, cloud)
    example = json.loads((CONTRACTS / "template_status_updates.json").read_text())["rejected"]
    value = example["entry"][0]["changes"][0]["value"]
    value |= {"message_template_name": "hello_world", "message_template_language": "en_US"}
    unknown = json.loads(json.dumps(example))
    unknown["entry"][0]["id"] = "4242"

    answers = [
        client.post(f"/webhooks/{cloud['provider']}", body=body, headers=signed(body))
        for body in (json.dumps(example).encode(), json.dumps(unknown).encode())
    ]

    assert [a.status for a in answers] == [200, 200], [a.body for a in answers]
    statuses = {t["name"]: t["status"] for t in listing(client, cloud)["templates"]}
    assert statuses["hello_world"] == "REJECTED"


def signed(body: bytes) -> dict[str, str]:
    digest = hmac.new(APP_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={digest}"}


def test_another_tenants_number_has_no_templates_to_show_and_an_agent_key_reads_none(
    client: Client, cloud: dict[str, str], graph: Graph, make_tenant: Callable[..., TenantKeys]
) -> None:
    other = make_tenant("globex")
    agent = client.post(
        "/api/api-keys", key=cloud["admin"], json_body={"name": "desk", "scopes": ["agent"], "attendantId": "att-1"}
    )
    assert agent.status == 201, agent.body

    theirs = client.get(f"/api/numbers/{cloud['number']}/templates?refresh=true", key=other.admin)
    by_agent = client.get(f"/api/numbers/{cloud['number']}/templates", key=agent.json()["key"])
    by_send_key = client.get(f"/api/numbers/{cloud['number']}/templates", key=cloud["send"])

    assert (theirs.status, theirs.json()["error"]) == (404, "not_found")
    assert by_agent.status == 403
    assert by_send_key.status == 200
    assert len(graph.reads) == 1  # the send key's read alone reached the Graph API

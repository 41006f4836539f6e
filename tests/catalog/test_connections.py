"""`GET /api/connections`: the calls connections an attendant's console shows, without the
administration details of an instance (token hint, webhook settings)."""

from __future__ import annotations

from typing import Any

from tools.support.api import Client
from tools.support.provider_webhooks import build_catalog


def test_an_agent_lists_the_calls_connections_of_its_tenant_only(client: Client, make_tenant: Any) -> None:
    acme, globex = make_tenant("acme"), make_tenant("globex")
    calls = build_catalog(client, acme, instance="acme-calls", kind="calls", number="5511999990001")
    build_catalog(client, acme, instance="acme-text", provider_instance_id="inst-2", number="5511999990002")
    build_catalog(client, globex, instance="globex-calls", kind="calls", number="5511999990003")
    agent = client.post(
        "/api/api-keys", key=acme.admin, json_body={"name": "desk", "scopes": ["agent"], "attendantId": "maria"}
    )
    assert agent.status == 201, agent.body

    answer = client.get("/api/connections", key=agent.json()["key"])

    assert answer.status == 200, answer.body
    assert answer.json() == [
        {
            "name": "acme-calls",
            "numberId": calls.number_id,
            "number": "5511999990001",
            "displayName": "Main",
            "connected": False,
        }
    ]
    assert client.get("/api/connections", key=acme.admin).json() == answer.json()


def test_a_send_key_cannot_list_connections(client: Client, make_tenant: Any) -> None:
    acme = make_tenant("acme")
    send = client.post("/api/api-keys", key=acme.admin, json_body={"name": "app", "scopes": ["send"]})

    assert client.get("/api/connections", key=send.json()["key"]).status == 403

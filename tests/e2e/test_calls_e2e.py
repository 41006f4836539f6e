"""Calls through the whole local stack: gateway, calls function, provider simulator, signed webhooks
back through the ingest, and the slot freed by the provider's own `ended` event."""

from __future__ import annotations

import uuid
from typing import Any

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack, calls_instance

PEER = "5511988887777"


def call_view(stack: Stack, tenant: SeededTenant, name: str, call_id: str) -> dict[str, Any]:
    answer = stack.api("GET", f"/api/calls/{name}/{call_id}", key=tenant.agent_key)
    body: dict[str, Any] = answer.json() if answer.status_code == 200 else {}
    return body


def test_given_a_dial_through_the_api_then_the_webhook_lifecycle_ends_it_and_frees_the_slot(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    assert fresh_tenant.connected, fresh_tenant.notes
    name = calls_instance(fresh_tenant)

    dialled = stack.api(
        "POST",
        f"/api/connections/{name}/calls",
        key=fresh_tenant.agent_key,
        json={"to": PEER},
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )

    assert dialled.status_code == 201, dialled.text
    call_id = dialled.json()["call"]["callId"]
    assert [call["callId"] for call in stack.sim.instance(name)["calls"]] == [call_id]
    assert [call["owner"] for call in stack.calls_view(fresh_tenant, name)["calls"]] == [fresh_tenant.attendant_id]
    busy = stack.api(
        "POST",
        f"/api/connections/{name}/calls",
        key=fresh_tenant.agent_key,
        json={"to": "5511977776666"},
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert (busy.status_code, busy.json()["error"]) == (409, "line_busy")  # the server's default limit is 1

    for action in ("answer", "active"):
        stack.sim.call_action(name, call_id, action)
    stack.wait_for(lambda: call_view(stack, fresh_tenant, name, call_id).get("state") == "active")
    stack.sim.call_action(name, call_id, "end", reason="hangup", endedBy="remote")

    ended = stack.wait_for(
        lambda: (view := call_view(stack, fresh_tenant, name, call_id)).get("state") == "ended" and view
    )
    assert (ended["endReason"], ended["endedBy"], ended["owner"]) == ("hangup", "remote", fresh_tenant.attendant_id)
    line = stack.calls_view(fresh_tenant, name)
    assert (line["occupancy"], line["calls"], line["reservations"]) == (0, [], [])


def test_given_an_incoming_call_then_an_attendant_claims_it_and_hangs_up_through_the_provider(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    name = calls_instance(fresh_tenant)
    call_id = stack.sim.incoming_call(name, "5511955554444")
    stack.wait_for(lambda: [call["callId"] for call in stack.calls_view(fresh_tenant, name)["calls"]] == [call_id])
    calls = f"/api/calls/{name}/{call_id}"

    claimed = stack.api("POST", f"{calls}/claim", key=fresh_tenant.agent_key)
    hung_up = stack.api("POST", f"{calls}/hangup", key=fresh_tenant.agent_key)

    assert claimed.status_code == 200, claimed.text
    assert claimed.json()["owner"] == fresh_tenant.attendant_id
    assert hung_up.status_code == 200, hung_up.text
    assert stack.sim.instance(name)["calls"][0]["state"] == "ended"
    stack.wait_for(lambda: stack.calls_view(fresh_tenant, name)["occupancy"] == 0)
    assert call_view(stack, fresh_tenant, name, call_id)["endedBy"] == "local"

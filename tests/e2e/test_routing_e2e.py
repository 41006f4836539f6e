"""Routing through the whole local stack: simulator -> signed webhook -> ingest -> forward queue ->
forwarder -> the tenant's downstream (a fake helpdesk on 127.0.0.1), and replies through the outbox."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack
from tools.support.downstream import FakeDownstream, ServedDownstream, agent_reply

CONTACT = "5511977771234"


@pytest.fixture
def helpdesks() -> Iterator[tuple[FakeDownstream, ServedDownstream, ServedDownstream]]:
    fake = FakeDownstream()
    first, second = fake.serve(), fake.serve()
    yield fake, first, second
    first.stop()
    second.stop()


def map_downstream(stack: Stack, tenant: SeededTenant, url: str, inbox: int) -> None:
    answer = stack.api(
        "PUT",
        f"/api/tenants/{tenant.owner_tag}",
        key=tenant.admin_key,
        json={
            "downstreamBaseUrl": url,
            "downstreamApiToken": f"cw-e2e-token-{tenant.owner_tag}",
            "downstreamAccountId": 5,
            "downstreamInboxId": inbox,
        },
    )
    assert answer.status_code == 200, answer.text
    assert f"cw-e2e-token-{tenant.owner_tag}" not in answer.text


def messages_with(fake: FakeDownstream, text: str) -> list[Any]:
    return [request for request in fake.messages() if request.body and request.body.get("content") == text]


def test_given_a_mapped_tenant_when_the_simulator_receives_a_message_then_it_reaches_the_mapped_inbox(
    stack: Stack, fresh_tenant: SeededTenant, helpdesks: Any
) -> None:
    fake, first, second = helpdesks
    name = fresh_tenant.instances[0].name
    map_downstream(stack, fresh_tenant, first.url, inbox=21)

    stack.sim.incoming_message(name, CONTACT, "bom dia")

    [message] = stack.wait_for(lambda: messages_with(fake, "bom dia"), timeout=15)
    assert message.origin == first.url and message.token == f"cw-e2e-token-{fresh_tenant.owner_tag}"
    conversation = next(r for r in fake.requests if r.method == "POST" and r.path == "/api/v1/accounts/5/conversations")
    assert conversation.body is not None and conversation.body["inbox_id"] == 21

    map_downstream(stack, fresh_tenant, second.url, inbox=22)
    stack.sim.incoming_message(name, CONTACT, "mudou o inbox?")

    [moved] = stack.wait_for(lambda: messages_with(fake, "mudou o inbox?"), timeout=15)
    assert moved.origin == second.url
    created = [r for r in fake.requests if r.origin == second.url and r.path.endswith("/accounts/5/conversations")]
    assert [r.body["inbox_id"] for r in created if r.body] == [22]


def test_given_a_disconnected_instance_when_a_reply_arrives_then_it_waits_and_is_sent_on_reconnect(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    name = fresh_tenant.instances[1].name
    secret = stack.api("POST", f"/api/instances/{name}/webhook-secret", key=fresh_tenant.admin_key).json()["secret"]
    stack.sim.set_connection(name, False)
    stack.wait_for(
        lambda: stack.api("GET", f"/api/instances/{name}", key=fresh_tenant.admin_key).json()["state"] == "DISCONNECTED"
    )
    reply = agent_reply(9001, "obrigado pelo contato", conversation=77, phone=CONTACT)

    queued = stack.api(
        "POST",
        f"/api/tenants/{fresh_tenant.owner_tag}/instances/{name}/webhook",
        json=reply,
        headers={"X-Switchboard-Secret": secret},
    )
    before = [m for m in stack.sim.sent() if m["instance"] == name]
    stack.sim.set_connection(name, True)

    assert (queued.status_code, queued.json()["status"]) == (200, "PENDING")
    assert before == []
    sent = stack.wait_for(lambda: [m for m in stack.sim.sent() if m["instance"] == name], timeout=15)
    assert [(m["phone"], m["body"]) for m in sent] == [(CONTACT, "obrigado pelo contato")]
    again = stack.api(
        "POST",
        f"/api/tenants/{fresh_tenant.owner_tag}/instances/{name}/webhook",
        json=reply,
        headers={"X-Switchboard-Secret": secret},
    )
    assert again.json()["status"] == "SENT"

"""The demo that `make local` seeds works end to end: the printed curl sends a message."""

from __future__ import annotations

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack


def test_given_the_seeded_demo_when_the_printed_curl_is_sent_then_the_simulator_delivers_it(stack: Stack) -> None:
    demo = stack.demo
    assert demo.pool_mode and demo.connected, demo.notes

    answer = stack.api("POST", "/api/messages", key=demo.send_key, json={"to": "5511988887777", "text": "hello"})

    assert answer.status_code == 202, answer.text
    message_id = answer.json()["id"]
    sent = stack.wait_for(
        lambda: [m for m in stack.sim.sent() if m["phone"] == "5511988887777" and m["body"] == "hello"]
    )
    assert sent[0]["instance"] in {instance.sim_id for instance in demo.instances}
    status = stack.wait_for(
        lambda: (
            (got := stack.api("GET", f"/api/messages/{message_id}", key=demo.send_key)).json()["status"] == "SENT"
            and got
        )
    )
    assert status.json()["sourceNumber"] in {instance.number for instance in demo.instances}


def test_given_a_fresh_tenant_then_it_is_isolated_from_the_demo(stack: Stack, fresh_tenant: SeededTenant) -> None:
    assert fresh_tenant.connected and fresh_tenant.pool_mode, fresh_tenant.notes

    theirs = stack.api("GET", "/api/numbers", key=fresh_tenant.admin_key).json()
    demo_view = stack.api("GET", f"/api/numbers/{theirs[0]['id']}", key=stack.demo.admin_key)

    assert {number["id"] for number in theirs} == {number["id"] for number in fresh_tenant.numbers}
    assert demo_view.status_code == 404

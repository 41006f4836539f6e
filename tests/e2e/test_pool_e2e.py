"""The number pool on the whole local stack with the provider simulator.

Affinity: two messages to one recipient leave from the same number. Fallback: the primary
disconnects (a `connection` webhook from the simulator) and the secondary sends; it reconnects
and the recipient is back on the primary. A provider receipt moves the message to DELIVERED.
`GET /api/messages/{id}` shows the trace of each decision.
"""

from __future__ import annotations

from typing import Any

from devstack.seed import SeededTenant
from switchboard import bootstrap
from tests.e2e.conftest import Stack

RECIPIENT = "5511944440001"


def send(stack: Stack, tenant: SeededTenant, text: str) -> dict[str, Any]:
    """Send through the API and wait for the worker to finish it; the message as GET shows it."""
    answer = stack.api("POST", "/api/messages", key=tenant.send_key, json={"to": RECIPIENT, "text": text})
    assert answer.status_code == 202, answer.text

    def finished() -> dict[str, Any] | None:
        message = stack.api("GET", f"/api/messages/{answer.json()['id']}", key=tenant.send_key).json()
        return message if message["status"] in ("SENT", "FAILED") else None

    return stack.wait_for(finished, timeout=15)


def resolved(message: dict[str, Any]) -> dict[str, Any]:
    return next(event["data"] for event in message["trace"] if event["stage"] == "pool.number.resolved")


def set_connected(stack: Stack, tenant: SeededTenant, number: str, connected: bool) -> None:
    """Flip the number's instance on the simulator and wait until the send worker sees it.

    The worker caches the key's pool for a few seconds; the probe reads through that same cache.
    """
    instance = next(i for i in tenant.instances if i.number == number and i.kind == "messages")
    stack.sim.set_connection(instance.sim_id, connected)
    state = "CONNECTED" if connected else "DISCONNECTED"
    stack.wait_for(
        lambda: stack.api("GET", f"/api/instances/{instance.name}", key=tenant.admin_key).json()["state"] == state
    )
    source = bootstrap.sending_config_source()
    stack.wait_for(
        lambda: any(
            n.digits == number and n.connected == connected
            for n in source.get(tenant.owner_tag, tenant.send_key_id).pool
        ),
        timeout=15,
    )


def test_affinity_fallback_and_return_through_the_whole_stack(stack: Stack, fresh_tenant: SeededTenant) -> None:
    tenant = fresh_tenant
    assert tenant.pool_mode and tenant.connected, tenant.notes

    first = send(stack, tenant, "one")
    second = send(stack, tenant, "two")

    primary = first["sourceNumber"]
    assert first["status"] == second["status"] == "SENT"
    assert second["sourceNumber"] == primary
    assert resolved(second)["affinityNumber"] == primary
    assert resolved(second)["roundRobinIndex"] is None
    delivered = [m for m in stack.sim.sent() if m["phone"] == RECIPIENT and m["body"] in ("one", "two")]
    assert {m["instance"] for m in delivered} == {first["instance"]}
    assert {m["idempotencyKey"] for m in delivered} == {first["id"], second["id"]}

    set_connected(stack, tenant, primary, False)
    away = send(stack, tenant, "three")

    assert away["status"] == "SENT"
    secondary = away["sourceNumber"]
    assert secondary != primary
    assert (resolved(away)["affinityNumber"], resolved(away)["resolvedNumber"]) == (primary, secondary)

    set_connected(stack, tenant, primary, True)
    back = send(stack, tenant, "four")

    assert back["sourceNumber"] == primary
    assert resolved(back)["affinityNumber"] == primary
    assert resolved(back)["poolSize"] == 3


def test_a_provider_receipt_marks_the_message_delivered(stack: Stack, fresh_tenant: SeededTenant) -> None:
    tenant = fresh_tenant
    message = send(stack, tenant, "receipt please")
    instance = next(i for i in tenant.instances if i.name == message["instance"])

    stack.sim.receipt(instance.sim_id, message["providerMessageId"], "delivered")

    def delivered() -> dict[str, Any] | None:
        current = stack.api("GET", f"/api/messages/{message['id']}", key=tenant.send_key).json()
        return current if current["status"] == "DELIVERED" else None

    assert stack.wait_for(delivered, timeout=15)["deliveredAt"] is not None


def test_a_message_with_a_validity_waits_while_every_number_is_down_and_leaves_once_one_is_back(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    tenant = fresh_tenant
    pool = bootstrap.sending_config_source().get(tenant.owner_tag, tenant.send_key_id).pool
    senders = [n.digits for n in pool if n.connected]  # the pool's numbers with a messages instance
    assert len(senders) == 2, senders
    for digits in senders:
        set_connected(stack, tenant, digits, False)
    answer = stack.api(
        "POST", "/api/messages", key=tenant.send_key, json={"to": RECIPIENT, "text": "wait for me", "validFor": 120}
    )
    assert answer.status_code == 202, answer.text
    path = f"/api/messages/{answer.json()['id']}"

    stack.wait_for(lambda: stack.api("GET", path, key=tenant.send_key).json()["status"] == "WAITING")
    set_connected(stack, tenant, senders[1], True)

    def sent() -> dict[str, Any] | None:
        message: dict[str, Any] = stack.api("GET", path, key=tenant.send_key).json()
        return message if message["status"] in ("SENT", "FAILED") else None

    # Re-checks come 5, 10 and 20 s apart: the number is back before the third.
    message = stack.wait_for(sent, timeout=45)
    assert (message["status"], message["sourceNumber"]) == ("SENT", senders[1])
    assert [m["body"] for m in stack.sim.sent() if m["phone"] == RECIPIENT].count("wait for me") == 1
    assert stack.in_queue("SendDLQ") == 0

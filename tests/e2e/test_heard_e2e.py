"""A person who wrote to a number is no new contact of it, on the whole local stack: with every
pool number paused for new contacts (each answered wuzapi's 463), a contact who just wrote to
one of them (the simulator's incoming message) is answered through that number, while someone
who never wrote is sent through none."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack
from tests.e2e.test_health_e2e import send, skips

WROTE_IN = "5511955560001"
NEVER_WROTE = "5511955560002"
FIRST_NEW = "5511955560003"


def health_state(stack: Stack, tenant: SeededTenant, name: str) -> str:
    answer = stack.api("GET", f"/api/instances/{name}/health", key=tenant.admin_key)
    assert answer.status_code == 200, answer.text
    state: str = answer.json()["state"]
    return state


def messages_in(stack: Stack, tenant: SeededTenant, name: str) -> int:
    month = datetime.now(UTC).strftime("%Y-%m")
    answer = stack.api("GET", f"/api/usage/summary?month={month}", key=tenant.admin_key)
    assert answer.status_code == 200, answer.text
    usage: list[dict[str, Any]] = answer.json()
    return sum(i["messagesIn"] for month_usage in usage for i in month_usage["instances"] if i["instance"] == name)


def test_a_contact_who_wrote_to_a_number_paused_for_new_contacts_is_answered_through_it(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    tenant = fresh_tenant
    assert tenant.pool_mode and tenant.connected, tenant.notes
    # The send key's pool: the calls server's three numbers, two of which send messages (the
    # third's instance is of kind `calls`: the pool passes it over as disconnected).
    pool = [instance for instance in tenant.instances if instance.flavour == "calls" and instance.kind == "messages"]
    assert len(pool) == 2
    for instance in pool:
        stack.sim.send_error(instance.sim_id, "463")
    answer = stack.api("POST", "/api/messages", key=tenant.send_key, json={"to": FIRST_NEW, "text": "hello"})
    assert answer.status_code == 202, answer.text
    # Every number refuses it with 463: each is paused for new contacts (the message is retried later).
    names = [instance.name for instance in pool]
    stack.wait_for(
        lambda: all(health_state(stack, tenant, name) == "paused_for_new_contacts" for name in names), timeout=30
    )
    for instance in pool:
        stack.sim.send_error(instance.sim_id, None)

    written_to = pool[0]
    stack.sim.incoming_message(written_to.sim_id, f"+{WROTE_IN}", "oi, ainda tem horário?")
    stack.wait_for(lambda: messages_in(stack, tenant, written_to.name) == 1, timeout=15)

    reply = send(stack, tenant, WROTE_IN, "tem sim, às 15h")
    cold = send(stack, tenant, NEVER_WROTE, "promoção!")

    assert (reply["status"], reply["instance"], reply["sourceNumber"]) == ("SENT", written_to.name, written_to.number)
    assert {data["reason"] for data in skips(reply)} <= {"health_paused_for_new_contacts"}
    assert written_to.name not in {data["instance"] for data in skips(reply)}
    assert (cold["status"], cold["failureReason"]) == ("FAILED", "no_number_available")
    assert {data["reason"] for data in skips(cold)} == {"health_paused_for_new_contacts"}
    delivered = [(m["instance"], m["phone"]) for m in stack.sim.sent() if m["phone"] in (WROTE_IN, NEVER_WROTE)]
    assert delivered == [(written_to.sim_id, WROTE_IN)]

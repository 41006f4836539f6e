"""Health-aware routing on the whole local stack: a number whose instance starts answering
wuzapi's 463 (the reach-out timelock, injected on the simulator) is paused for new contacts;
the recipient attached to it keeps it, new recipients go to the other number, and each
message's trace says why the paused number was passed over."""

from __future__ import annotations

from typing import Any

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack

ATTACHED = "5511955550001"
NEW_RECIPIENTS = [f"55119555501{index:02d}" for index in range(6)]
PASSED_OVER = {"provider_throttled", "health_paused_for_new_contacts"}


def send(stack: Stack, tenant: SeededTenant, to: str, text: str) -> dict[str, Any]:
    answer = stack.api("POST", "/api/messages", key=tenant.send_key, json={"to": to, "text": text})
    assert answer.status_code == 202, answer.text

    def finished() -> dict[str, Any] | None:
        message = stack.api("GET", f"/api/messages/{answer.json()['id']}", key=tenant.send_key).json()
        return message if message["status"] in ("SENT", "FAILED") else None

    return stack.wait_for(finished, timeout=30)


def skips(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [event["data"] for event in message["trace"] if event["stage"] == "pool.instance.skipped"]


def test_a_number_answering_463_is_paused_for_new_contacts_and_keeps_its_attached_recipient(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    tenant = fresh_tenant
    assert tenant.pool_mode and tenant.connected, tenant.notes
    first = send(stack, tenant, ATTACHED, "hello")
    assert first["status"] == "SENT", first
    paused_number, paused_instance = first["sourceNumber"], first["instance"]
    sim_id = next(instance.sim_id for instance in tenant.instances if instance.name == paused_instance)

    stack.sim.send_error(sim_id, "463")

    new_ones = [send(stack, tenant, to, f"welcome {to}") for to in NEW_RECIPIENTS]
    attached = send(stack, tenant, ATTACHED, "still here")

    assert [message["status"] for message in new_ones] == ["SENT"] * len(NEW_RECIPIENTS)
    assert paused_number not in {message["sourceNumber"] for message in new_ones}
    passed_over = [data for message in new_ones for data in skips(message)]
    assert passed_over, "the round robin never reached the paused number"
    assert {data["instance"] for data in passed_over} == {paused_instance}
    assert {data["reason"] for data in passed_over} <= PASSED_OVER
    # The number's first 463 is a provider refusal; once paused, the pool passes it over unasked.
    assert passed_over[0]["reason"] == "provider_throttled" and passed_over[0]["providerCode"] == "463"
    assert "health_paused_for_new_contacts" in {data["reason"] for data in passed_over}
    assert next(data["healthReasons"] for data in passed_over if "healthReasons" in data) == ["timelock_463"]
    assert (attached["status"], attached["sourceNumber"], skips(attached)) == ("SENT", paused_number, [])

    health = stack.api("GET", f"/api/instances/{paused_instance}/health", key=tenant.admin_key)
    assert health.status_code == 200, health.text
    view = health.json()
    assert view["state"] == "paused_for_new_contacts"
    assert [reason["code"] for reason in view["reasons"]] == ["timelock_463"]
    assert view["pausedUntil"] is not None
    assert view["failures"]["463"] >= 1
    delivered = [m for m in stack.sim.sent() if m["instance"] == sim_id]
    assert {m["phone"] for m in delivered} == {ATTACHED}

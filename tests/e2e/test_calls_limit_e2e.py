"""The call limit through the whole local stack: gateway, calls function, provider simulator, and
the provider's own signed webhooks coming back through the ingest."""

from __future__ import annotations

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack, calls_instance


def test_a_change_from_one_to_two_in_the_providers_panel_reaches_the_read_api_by_webhook(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    name = calls_instance(fresh_tenant)
    prepared = stack.api("POST", f"/api/connections/{name}/subscription", key=fresh_tenant.admin_key, json={})
    assert prepared.status_code == 200, prepared.text
    assert prepared.json()["ready"] is True
    assert prepared.json()["config"]["limit"] == 1
    version = int(prepared.json()["config"]["version"])

    stack.sim.panel_call_settings(name, 2)

    changed = stack.wait_for(lambda: (view := stack.calls_view(fresh_tenant, name))["limit"] == 2 and view)
    assert changed["version"] == str(version + 1)
    assert (changed["available"], changed["conflict"]) == (2, False)


def test_setting_the_limit_through_the_api_and_its_own_webhook_agree(stack: Stack, fresh_tenant: SeededTenant) -> None:
    name = calls_instance(fresh_tenant)

    answer = stack.api(
        "PUT", f"/api/connections/{name}/calls-limit", key=fresh_tenant.admin_key, json={"callsMaxConcurrent": 3}
    )

    assert answer.status_code == 200, answer.text
    assert answer.json()["limit"] == 3
    assert stack.sim.instance(name)["callsMaxConcurrent"] == 3
    event = stack.wait_for(
        lambda: [
            e for e in stack.sim.events(name) if e["event"] == "call_settings" and e["data"]["callsMaxConcurrent"] == 3
        ]
    )
    assert str(event[-1]["data"]["callsConfigVersion"]) == answer.json()["version"]
    after = stack.calls_view(fresh_tenant, name)
    assert (after["limit"], after["version"], after["conflict"]) == (3, answer.json()["version"], False)


def test_a_provider_failure_through_the_gateway_is_a_502_and_the_limit_is_unchanged(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    name = calls_instance(fresh_tenant)
    before = stack.calls_view(fresh_tenant, name)
    stack.sim.fault("/instance/call-settings", "error500")

    answer = stack.api(
        "PUT", f"/api/connections/{name}/calls-limit", key=fresh_tenant.admin_key, json={"callsMaxConcurrent": 5}
    )

    assert (answer.status_code, answer.json()["error"]) == (502, "provider_unavailable")
    assert stack.calls_view(fresh_tenant, name)["limit"] == before["limit"]
    assert stack.sim.instance(name)["callsMaxConcurrent"] != 5


def test_another_tenant_cannot_read_or_set_the_limit(stack: Stack, fresh_tenant: SeededTenant) -> None:
    name = calls_instance(fresh_tenant)
    other = stack.new_tenant()

    read = stack.api("GET", f"/api/connections/{name}/calls", key=other.admin_key)
    write = stack.api(
        "PUT", f"/api/connections/{name}/calls-limit", key=other.admin_key, json={"callsMaxConcurrent": 2}
    )

    assert (read.status_code, write.status_code) == (404, 404)

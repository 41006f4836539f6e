"""Preparing a calls connection's webhook subscription, through the API, against the simulator.

The merge must keep URL, secret, filters, enabled state and inheritance; what it cannot fix
without changing something nobody asked for (a global subscription, a disabled or missing
one) is reported, never done silently.
"""

from __future__ import annotations

from typing import Any

import httpx

from devstack.apigw import HttpResponse
from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from tools.support.api import Client, TenantKeys
from tools.support.connections import Connection, register_connection

# Deliveries to HOOK fail fast: nothing listens on port 9.
HOOK = "http://127.0.0.1:9/hooks/calls"
SECRET = "whsec-own-subscription-secret"
GLOBAL_SECRET = "whsec-global-subscription-secret"


def prepare(client: Client, connection: Connection, key: str | None = None, **body: Any) -> HttpResponse:
    return client.post(
        f"/api/connections/{connection.name}/subscription", key=key or connection.admin_key, json_body=body
    )


def own_secret(simulator: Simulator, connection: Connection) -> str | None:
    """The secret the simulator signs with (read from its state: the provider never shows it)."""
    with simulator.app.state.locked() as records:
        subscription = records.instance(connection.sim_id).subscription
        return None if subscription is None else subscription.secret


def set_filters(simulator: Simulator, connection: Connection, filters: dict[str, Any]) -> None:
    answer = httpx.post(
        f"{simulator.base_url}/webhook", headers={"token": connection.sim_token}, json={"filters": filters}
    )
    answer.raise_for_status()


def test_missing_events_are_merged_keeping_url_secret_filters_and_enabled_state(
    client: Client, connect: Any, control: SimulatorControl, simulator: Simulator
) -> None:
    connection = connect(webhookUrl=HOOK, webhookSecret=SECRET, webhookEvents=["message", "call"])
    set_filters(simulator, connection, {"fromMe": False, "groups": ["x"]})

    answer = prepare(client, connection)

    assert answer.status == 200, answer.body
    body = answer.json()
    assert (body["state"], body["ready"], body["changed"], body["missing"]) == ("updated", True, True, [])
    assert body["events"] == ["message", "call", "call_settings", "connection"]
    webhook = control.instance(connection.sim_id)["webhook"]
    assert (webhook["url"], webhook["enabled"], webhook["inherited"]) == (HOOK, True, False)
    assert webhook["filters"] == {"fromMe": False, "groups": ["x"]}
    assert webhook["events"] == ["message", "call", "call_settings", "connection"]
    assert own_secret(simulator, connection) == SECRET
    [audit] = [entry for entry in bootstrap.audit_log().list("acme") if entry.action == "calls_subscription.updated"]
    assert (audit.before or {})["events"] == ["message", "call"]


def test_the_optional_limits_event_is_added_only_when_asked(client: Client, connect: Any) -> None:
    connection = connect(webhookUrl=HOOK, webhookSecret=SECRET)

    no_body = client.post(f"/api/connections/{connection.name}/subscription", key=connection.admin_key)
    without = prepare(client, connection).json()
    with_limits = prepare(client, connection, includeLimits=True).json()

    assert no_body.status == 200, no_body.body
    assert (without["state"], without["changed"]) == ("ready", False)
    assert with_limits["events"] == ["call", "call_settings", "connection", "limits"]


def test_preparing_reads_the_status_for_the_initial_snapshot(client: Client, connect: Any) -> None:
    connection = connect(webhookUrl=HOOK, webhookSecret=SECRET, callsMaxConcurrent=3, callsConfigVersion=2)

    body = prepare(client, connection).json()

    assert body["config"] == {"limit": 3, "version": "2", "updatedAt": body["config"]["updatedAt"], "conflict": False}
    view = client.get(f"/api/connections/{connection.name}/calls", key=connection.admin_key).json()
    assert (view["limit"], view["version"]) == (3, "2")


def test_a_complete_subscription_is_not_ready_when_the_server_does_not_announce_call_settings_events(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    """Without `calls_settings_webhook` the server sends no `call_settings`, whatever is subscribed."""
    control.set_capabilities(calls_settings_webhook=False)
    complete = connect(webhookUrl=HOOK, webhookSecret=SECRET)
    lacking = connect(webhookUrl=HOOK, webhookSecret=SECRET, webhookEvents=["call"])

    body = prepare(client, complete).json()
    merged = prepare(client, lacking).json()

    assert (body["state"], body["ready"], body["changed"]) == ("unannounced", False, False)
    assert body["missing"] == ["calls_settings_webhook"]
    assert "calls_settings_webhook" in body["reason"]
    assert (merged["state"], merged["ready"], merged["changed"]) == ("unannounced", False, True)
    assert merged["events"] == ["call", "call_settings", "connection"]
    assert merged["missing"] == ["calls_settings_webhook"]


def test_a_ready_subscription_has_no_reason(client: Client, connect: Any) -> None:
    body = prepare(client, connect(webhookUrl=HOOK, webhookSecret=SECRET)).json()

    assert (body["state"], body["ready"], body["missing"], body["reason"]) == ("ready", True, [], None)


def test_an_inherited_global_subscription_is_reported_never_overridden(
    client: Client, connect: Any, control: SimulatorControl, simulator: Simulator
) -> None:
    control.set_global_webhook(
        url=HOOK, events=["message", "connection"], filters={"tag": "all"}, enabled=True, secret=GLOBAL_SECRET
    )
    connection = connect()

    body = prepare(client, connection).json()

    assert (body["state"], body["ready"], body["changed"], body["inherited"]) == ("inherited", False, False, True)
    assert body["missing"] == ["call", "call_settings"]
    assert "call, call_settings" in body["reason"]
    assert body["filters"] == {"tag": "all"}
    assert own_secret(simulator, connection) is None  # no instance override was created
    assert control.instance(connection.sim_id)["webhook"]["inherited"] is True


def test_a_complete_inherited_subscription_is_ready_and_stays_inherited(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    control.set_global_webhook(url=HOOK, events=["call", "call_settings", "connection"], secret=GLOBAL_SECRET)
    connection = connect()

    body = prepare(client, connection).json()

    assert (body["state"], body["ready"], body["inherited"], body["missing"]) == ("ready", True, True, [])
    assert control.instance(connection.sim_id)["webhook"]["inherited"] is True


def test_a_disabled_subscription_gets_the_events_but_is_not_enabled(
    client: Client, connect: Any, control: SimulatorControl, simulator: Simulator
) -> None:
    connection = connect(webhookUrl=HOOK, webhookSecret=SECRET, webhookEvents=["message"])
    httpx.post(
        f"{simulator.base_url}/webhook", headers={"token": connection.sim_token}, json={"enabled": False}
    ).raise_for_status()

    body = prepare(client, connection).json()

    assert (body["state"], body["ready"], body["enabled"], body["missing"]) == ("disabled", False, False, [])
    assert control.instance(connection.sim_id)["webhook"]["enabled"] is False
    assert own_secret(simulator, connection) == SECRET


def test_a_missing_subscription_is_reported_not_created(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect()

    body = prepare(client, connection).json()

    assert (body["state"], body["ready"], body["url"]) == ("missing", False, None)
    assert body["missing"] == ["call", "call_settings", "connection"]
    assert control.instance(connection.sim_id)["webhook"] is None


def test_changing_the_global_subscription_needs_the_platform_scope_and_is_not_faked(
    client: Client, connect: Any, platform_key: str
) -> None:
    connection = connect(webhookUrl=HOOK, webhookSecret=SECRET)

    as_admin = prepare(client, connection, scope="global")
    as_platform = prepare(client, connection, key=platform_key, scope="global")

    assert (as_admin.status, as_admin.json()["error"]) == (403, "forbidden")
    assert (as_platform.status, as_platform.json()["error"]) == (422, "unsupported_by_provider")


def test_an_agent_cannot_prepare_a_subscription(client: Client, connect: Any, acme: TenantKeys) -> None:
    connection = connect(webhookUrl=HOOK, webhookSecret=SECRET)
    agent = client.post(
        "/api/api-keys", key=acme.admin, json_body={"name": "Ana", "scopes": ["agent"], "attendantId": "ana"}
    ).json()["key"]

    assert prepare(client, connection, key=agent).status == 403


def test_messages_connections_and_other_providers_are_refused_clearly(
    client: Client, acme: TenantKeys, simulator: Simulator, control: SimulatorControl
) -> None:
    messages = register_connection(
        client, acme, simulator, control, kind="messages", webhookUrl=HOOK, webhookSecret=SECRET
    )
    evolution = register_connection(client, acme, simulator, control, provider_kind="evolution")

    on_messages = prepare(client, messages)
    on_evolution = prepare(client, evolution)

    assert (on_messages.status, on_messages.json()["error"]) == (422, "not_calls_instance")
    assert (on_evolution.status, on_evolution.json()["error"]) == (422, "unsupported_by_provider")
    assert control.instance(messages.sim_id)["webhook"]["events"] == ["message", "receipt", "connection"]


def test_unknown_options_are_refused(client: Client, connect: Any) -> None:
    connection = connect(webhookUrl=HOOK, webhookSecret=SECRET)

    assert prepare(client, connection, enable=True).status == 422
    assert prepare(client, connection, scope="everything").status == 422

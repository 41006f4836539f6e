"""The call limit kept in step through the signed webhook ingest (`POST /webhooks/{provider_id}`).

Envelopes are the simulator's own (its event log), signed as it signs them, and posted through
the in-process HTTP API: signature, binding and dedupe run before our effect handlers.
"""

from __future__ import annotations

import json
import time
from typing import Any

from devstack.apigw import HttpResponse
from devstack.simulator import Simulator, SimulatorControl, signature_header
from tools.support.api import Client
from tools.support.connections import MAX_VERSION, PROVIDER_SECRET, Connection, emitted, register_connection


def post_envelope(
    client: Client, provider_id: str, envelope: dict[str, Any], secret: str = PROVIDER_SECRET
) -> HttpResponse:
    """Sign and post one envelope exactly as the provider does."""
    clean = {name: value for name, value in envelope.items() if name != "delivered"}
    body = json.dumps(clean, separators=(",", ":")).encode()
    stamp = int(time.time())
    headers = {"x-webhook-timestamp": str(stamp), "x-webhook-signature": signature_header((secret,), stamp, body)}
    return client.post(f"/webhooks/{provider_id}", body=body, headers=headers)


def view(client: Client, connection: Connection) -> dict[str, Any]:
    answer: dict[str, Any] = client.get(f"/api/connections/{connection.name}/calls", key=connection.admin_key).json()
    return answer


def test_a_panel_change_from_one_to_two_arrives_by_webhook_and_shows_in_the_read_api(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect()
    client.put(
        f"/api/connections/{connection.name}/calls-limit",
        key=connection.admin_key,
        json_body={"callsMaxConcurrent": 1},
    )

    control.panel_call_settings(connection.sim_id, 2)
    answer = post_envelope(client, connection.provider_id, emitted(control, connection, "call_settings")[-1])

    assert answer.status == 200, answer.body
    assert answer.json()["outcome"] == "applied"
    assert (view(client, connection)["limit"], view(client, connection)["version"]) == (2, "2")


def test_a_redelivered_event_is_a_duplicate_and_an_older_one_changes_nothing(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect()
    control.panel_call_settings(connection.sim_id, 2)
    control.panel_call_settings(connection.sim_id, 3)
    older, newer = emitted(control, connection, "call_settings")

    first = post_envelope(client, connection.provider_id, newer)
    again = post_envelope(client, connection.provider_id, newer)
    late = post_envelope(client, connection.provider_id, older)

    assert [first.json()["outcome"], again.json()["outcome"], late.json()["outcome"]] == [
        "applied",
        "duplicate",
        "applied",
    ]
    assert (view(client, connection)["limit"], view(client, connection)["version"]) == (3, "2")


def test_an_invalid_signature_is_refused_and_changes_nothing(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect()
    control.panel_call_settings(connection.sim_id, 4)

    answer = post_envelope(client, connection.provider_id, emitted(control, connection, "call_settings")[-1], "forged")

    assert answer.status == 401
    assert view(client, connection)["limit"] is None


def test_another_tenants_provider_cannot_change_this_connection(
    client: Client, connect: Any, control: SimulatorControl, make_tenant: Any, simulator: Simulator
) -> None:
    connection = connect()
    intruder = register_connection(client, make_tenant("globex"), simulator, control)
    control.panel_call_settings(connection.sim_id, 6)
    envelope = emitted(control, connection, "call_settings")[-1]

    answer = post_envelope(client, intruder.provider_id, envelope)

    assert answer.status == 404
    assert view(client, connection)["limit"] is None


def test_the_largest_64_bit_version_arrives_exactly(client: Client, connect: Any, control: SimulatorControl) -> None:
    connection = connect(callsConfigVersion=MAX_VERSION - 1)

    control.panel_call_settings(connection.sim_id, 2)
    answer = post_envelope(client, connection.provider_id, emitted(control, connection, "call_settings")[-1])

    assert answer.status == 200, answer.body
    assert view(client, connection)["version"] == str(MAX_VERSION)


def test_a_connection_event_carries_the_config_through_the_ingest(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect(callsMaxConcurrent=5, callsConfigVersion=11)

    control.set_connection(connection.sim_id, True)
    answer = post_envelope(client, connection.provider_id, emitted(control, connection, "connection")[-1])

    assert answer.status == 200, answer.body
    current = view(client, connection)
    assert (current["limit"], current["version"]) == (5, "11")

"""The per-connection call limit through the API, on moto, against the provider simulator.

The simulator is the provider contract (devstack/simulator/README.md). Its events are taken
from its event log and handed to our effect handlers as the webhook ingest would, so each test
controls the order in which answers and events arrive.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.lines.dynamo import line_key
from switchboard.lines.service import snapshot_of_status
from tools.support.api import Client, TenantKeys
from tools.support.connections import MAX_VERSION, Connection, deliver, emitted, register_connection

BIG_VERSIONS = [0, 9007199254740993, MAX_VERSION]


@pytest.fixture
def impatient(monkeypatch: pytest.MonkeyPatch, aws: Any) -> None:
    """A provider read timeout shorter than the simulator's `timeout` fault (1 s)."""
    monkeypatch.setenv("PROVIDER_TIMEOUT_SECONDS", "0.3")
    bootstrap.reset()


def stored_line(connection: Connection) -> dict[str, Any]:
    item: dict[str, Any] = bootstrap.table().get_item(
        Key=line_key(connection.tenant, connection.name), ConsistentRead=True
    )["Item"]
    return item


@pytest.fixture
def bus_events(aws: Any) -> Any:
    """Route the bus's config-changed events to a queue, and read them back."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    events = boto3.client("events", region_name="us-east-1")
    queue_url = sqs.create_queue(QueueName="calls-config-changed")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(
        Name="calls-config-changed",
        EventBusName=aws.bus,
        EventPattern=json.dumps({"detail-type": ["connection.calls.config.changed"]}),
    )
    events.put_targets(Rule="calls-config-changed", EventBusName=aws.bus, Targets=[{"Id": "q", "Arn": arn}])

    def read() -> list[dict[str, Any]]:
        found = []
        while batch := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            for message in batch:
                found.append(json.loads(message["Body"])["detail"])
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        return found

    return read


# --- the read view and the initial snapshot --------------------------------------------------


def test_given_a_new_connection_when_the_status_is_read_then_the_initial_snapshot_is_stored(
    client: Client, connect: Any
) -> None:
    connection = connect(callsMaxConcurrent=3, callsConfigVersion=5)
    instance = connection.instance()
    assert instance is not None
    before = client.get(connection.calls_path, key=connection.admin_key).json()

    bootstrap.calls_config_service().refresh_from_status(instance)

    after = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (before["limit"], before["version"]) == (None, None)
    assert (after["limit"], after["version"], after["conflict"]) == (3, "5", False)
    assert (after["occupancy"], after["available"], after["excess"]) == (0, 3, 0)
    assert after["capabilities"]["callsPerInstanceLimit"] is True
    assert after["capabilities"]["serverDefaultLimit"] == 1
    assert after["capabilities"]["range"] == {"min": 1, "max": 8}


def test_version_zero_is_stored_as_zero_not_as_absent(client: Client, connect: Any) -> None:
    connection = connect(callsConfigVersion=0)
    instance = connection.instance()
    assert instance is not None

    line = bootstrap.calls_config_service().refresh_from_status(instance)

    assert line.version == 0
    assert stored_line(connection)["version"] == 0
    assert client.get(connection.calls_path, key=connection.admin_key).json()["version"] == "0"
    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 1})
    assert answer.json()["version"] == "1"  # 0 was compared as a version, not skipped as absent


# --- setting the limit -----------------------------------------------------------------------


def test_admin_sets_the_limit_and_the_provider_holds_it(
    client: Client, connect: Any, control: SimulatorControl, bus_events: Any
) -> None:
    connection = connect()

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 2})

    assert answer.status == 200, answer.body
    body = answer.json()
    assert (body["limit"], body["version"], body["available"]) == (2, "1", 2)
    assert control.instance(connection.sim_id)["callsMaxConcurrent"] == 2
    assert client.get(connection.calls_path, key=connection.admin_key).json()["limit"] == 2
    [notice] = bus_events()
    assert notice == {
        "instance": connection.name,
        "tenant": "acme",
        "limit": 2,
        "version": "1",
        "updatedAt": notice["updatedAt"],
        "source": "post",
    }
    [audit] = bootstrap.audit_log().list("acme", limit=1)
    assert audit.action == "calls_limit.updated"
    assert (audit.before or {}).get("limit") is None and (audit.after or {})["limit"] == 2


def test_the_limit_can_be_set_while_the_connection_is_disconnected(client: Client, connect: Any) -> None:
    connection = connect(connected=False)

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 4})

    assert answer.status == 200, answer.body
    assert (answer.json()["limit"], answer.json()["connected"]) == (4, False)


@pytest.mark.parametrize("value", [0, 9, -1, 2.5, 8.0001, "2", None, True, [2]])
def test_only_integers_from_one_to_eight_are_accepted(
    client: Client, connect: Any, control: SimulatorControl, value: object
) -> None:
    connection = connect()

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": value})

    assert answer.status == 422, answer.body
    assert answer.json()["error"] == "validation_error"
    assert control.instance(connection.sim_id)["callsConfigVersion"] == 0


def test_an_integral_limit_written_as_a_float_is_that_integer(client: Client, connect: Any) -> None:
    """JSON has one number type: 2.0 is the integer 2, as JSON Schema and the API's other fields read it."""
    connection = connect()

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 2.0})

    assert answer.status == 200, answer.body
    assert answer.json()["limit"] == 2


def test_unknown_fields_and_a_missing_value_are_refused(client: Client, connect: Any) -> None:
    connection = connect()

    for body in ({}, {"callsMaxConcurrent": 2, "version": 7}, {"limit": 2}):
        answer = client.put(connection.limit_path, key=connection.admin_key, json_body=body)
        assert answer.status == 422, (body, answer.body)


def test_an_agent_reads_the_line_but_cannot_set_the_limit(client: Client, connect: Any, acme: TenantKeys) -> None:
    connection = connect()
    agent = client.post(
        "/api/api-keys",
        key=acme.admin,
        json_body={"name": "Ana", "scopes": ["agent"], "attendantId": "ana"},
    ).json()["key"]

    refused = client.put(connection.limit_path, key=agent, json_body={"callsMaxConcurrent": 2})
    read = client.get(connection.calls_path, key=agent)

    assert refused.status == 403 and refused.json()["error"] == "forbidden"
    assert read.status == 200
    assert client.get(connection.calls_path).status == 401


def test_another_tenants_connection_is_not_found(client: Client, connect: Any, make_tenant: Any) -> None:
    connection = connect()
    globex = make_tenant("globex")

    put = client.put(connection.limit_path, key=globex.admin, json_body={"callsMaxConcurrent": 2})
    get = client.get(connection.calls_path, key=globex.admin)
    subscription = client.post(f"/api/connections/{connection.name}/subscription", key=globex.admin, json_body={})

    assert [put.status, get.status, subscription.status] == [404, 404, 404]
    assert put.json()["error"] == "not_found"


def test_a_messages_connection_has_no_call_limit(
    client: Client, acme: TenantKeys, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register_connection(client, acme, simulator, control, kind="messages")

    put = client.put(connection.limit_path, key=acme.admin, json_body={"callsMaxConcurrent": 2})
    get = client.get(connection.calls_path, key=acme.admin)

    assert (put.status, put.json()["error"]) == (422, "not_calls_instance")
    assert (get.status, get.json()["error"]) == (422, "not_calls_instance")


def test_a_server_without_per_instance_limits_is_refused_not_faked(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    control.set_capabilities(calls_per_instance_limit=False)
    connection = connect()

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 2})

    assert answer.status == 422
    assert answer.json()["error"] == "unsupported_by_provider"
    assert answer.json()["missing"] == ["calls_per_instance_limit"]
    assert client.get(connection.calls_path, key=connection.admin_key).json()["limit"] is None


def test_the_read_view_answers_without_capabilities_when_the_server_cannot_be_asked(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect()
    control.fault("/v1/capabilities", "error500")

    answer = client.get(connection.calls_path, key=connection.admin_key)

    assert answer.status == 200, answer.body
    assert answer.json()["capabilities"] is None


# --- remote failures never look like success -------------------------------------------------


def test_a_provider_error_is_a_502_and_nothing_looks_saved(
    client: Client, connect: Any, control: SimulatorControl, bus_events: Any
) -> None:
    connection = connect()
    client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 1})
    bus_events()
    control.fault("/instance/call-settings", "error500")

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 3})

    assert answer.status == 502
    assert answer.json()["error"] == "provider_unavailable"
    view = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (view["limit"], view["version"]) == (1, "1")
    assert control.instance(connection.sim_id)["callsMaxConcurrent"] == 1
    assert bus_events() == []


def test_a_provider_refusal_is_a_502_provider_rejected(client: Client, connect: Any) -> None:
    connection = connect(callsConfigVersion=MAX_VERSION)

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 2})

    assert (answer.status, answer.json()["error"]) == (502, "provider_rejected")


def test_a_timeout_not_applied_is_a_504_and_the_status_is_read_instead_of_a_retry(
    client: Client, connect: Any, control: SimulatorControl, impatient: None
) -> None:
    connection = connect()
    control.fault("/instance/call-settings", "timeout")

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 3})

    assert answer.status == 504
    body = answer.json()
    assert body["error"] == "provider_timeout"
    assert (body["limit"], body["version"]) == (1, "0")
    state = control.instance(connection.sim_id)
    assert (state["callsMaxConcurrent"], state["callsConfigVersion"]) == (1, 0)  # no blind second POST
    view = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (view["limit"], view["version"]) == (1, "0")


def test_a_lost_answer_is_resolved_by_the_status_without_posting_twice(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect()
    control.fault("/instance/call-settings", "drop_response")

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 3})

    assert answer.status == 200, answer.body
    assert (answer.json()["limit"], answer.json()["version"]) == (3, "1")
    assert control.instance(connection.sim_id)["callsConfigVersion"] == 1  # applied once


# --- the snapshot rule across sources ---------------------------------------------------------


def test_a_change_in_the_providers_panel_arrives_by_webhook_without_reconnecting(
    client: Client, connect: Any, control: SimulatorControl, bus_events: Any
) -> None:
    connection = connect()
    client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 1})
    bus_events()

    control.panel_call_settings(connection.sim_id, 2)
    [_, panel_event] = emitted(control, connection, "call_settings")
    deliver(connection, panel_event)

    view = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (view["limit"], view["version"], view["updatedAt"]) == (2, "2", panel_event["data"]["updatedAt"])
    assert [(n["limit"], n["version"], n["source"]) for n in bus_events()] == [(2, "2", "call_settings")]
    assert emitted(control, connection, "connection") == []  # no reconnection was needed


def test_an_old_http_answer_arriving_after_a_newer_webhook_is_ignored(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect()
    instance = connection.instance()
    assert instance is not None
    client_for, target = bootstrap.targets().target_for(instance)
    old_answer = client_for.set_call_settings(target, 2)  # version 1, answer held back
    control.panel_call_settings(connection.sim_id, 5)  # version 2
    deliver(connection, emitted(control, connection, "call_settings")[-1])

    snapshot = snapshot_of_status(old_answer, "post")
    assert snapshot is not None
    result = bootstrap.calls_config_service().apply(instance, snapshot)

    assert result.verdict == "ignore"
    view = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (view["limit"], view["version"]) == (5, "2")


def test_duplicate_and_out_of_order_events_keep_the_newest_config(
    client: Client, connect: Any, control: SimulatorControl, bus_events: Any
) -> None:
    connection = connect()
    for limit in (2, 3, 4):
        control.panel_call_settings(connection.sim_id, limit)
    first, second, third = emitted(control, connection, "call_settings")

    for envelope in (third, first, third, second, first):
        deliver(connection, envelope)

    view = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (view["limit"], view["version"], view["conflict"]) == (4, "3", False)
    assert [n["version"] for n in bus_events()] == ["3"]


def test_a_connection_event_carries_the_config_and_one_without_it_is_reconciled(
    client: Client, connect: Any, control: SimulatorControl
) -> None:
    connection = connect(callsMaxConcurrent=2, callsConfigVersion=7)
    control.set_connection(connection.sim_id, False)
    deliver(connection, emitted(control, connection, "connection")[-1])
    assert client.get(connection.calls_path, key=connection.admin_key).json()["limit"] == 2

    control.panel_call_settings(connection.sim_id, 6)  # its call_settings event is lost
    control.set_connection(connection.sim_id, True, include_calls_config=False)
    bare = emitted(control, connection, "connection")[-1]
    assert "callsMaxConcurrent" not in bare["instance"]
    deliver(connection, bare)

    view = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (view["limit"], view["version"]) == (6, "8")


def test_call_settings_never_creates_a_call(client: Client, connect: Any, control: SimulatorControl) -> None:
    connection = connect()
    control.panel_call_settings(connection.sim_id, 3)

    deliver(connection, emitted(control, connection, "call_settings")[-1])

    view = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (view["calls"], view["reservations"], view["occupancy"]) == ([], [], 0)


def test_equal_version_with_another_value_is_a_conflict_then_reconciled(
    client: Client, connect: Any, control: SimulatorControl, bus_events: Any
) -> None:
    connection = connect(callsMaxConcurrent=2, callsConfigVersion=4)
    instance = connection.instance()
    assert instance is not None
    bootstrap.calls_config_service().refresh_from_status(instance)  # stored (2, v4)
    bus_events()
    forged = {
        "event": "call_settings",
        "eventId": str(uuid.uuid4()),
        "instanceId": connection.sim_id,
        "seq": 99,
        "data": {"kind": "calls", "callsMaxConcurrent": 5, "callsConfigVersion": 4, "updatedAt": "x"},
    }
    control.fault("/instance/status", "error500")  # the inline reconciliation read fails

    deliver(connection, forged)

    flagged = client.get(connection.calls_path, key=connection.admin_key).json()
    assert (flagged["limit"], flagged["version"], flagged["conflict"]) == (2, "4", True)
    assert bus_events() == []

    line = bootstrap.calls_config_service().refresh_from_status(instance)  # the reconciler's read

    assert (line.limit, line.version, line.conflict) == (2, 4, False)
    settled = client.get(connection.calls_path, key=connection.admin_key).json()
    assert settled["conflict"] is False


@pytest.mark.parametrize("version", BIG_VERSIONS)
def test_big_versions_survive_exactly_through_storage_and_the_api(
    client: Client, connect: Any, control: SimulatorControl, version: int
) -> None:
    connection = connect(callsConfigVersion=version)
    instance = connection.instance()
    assert instance is not None

    bootstrap.calls_config_service().refresh_from_status(instance)

    assert stored_line(connection)["version"] == version
    answer = client.get(connection.calls_path, key=connection.admin_key)
    assert answer.json()["version"] == str(version)
    assert f'"version":"{version}"' in answer.body.decode().replace(" ", "")
    if version < MAX_VERSION:
        control.panel_call_settings(connection.sim_id, 3)
        deliver(connection, emitted(control, connection, "call_settings")[-1])
        assert client.get(connection.calls_path, key=connection.admin_key).json()["version"] == str(version + 1)


@pytest.mark.parametrize("start", [2**53, MAX_VERSION - 1])
def test_setting_the_limit_reaches_big_versions_exactly(client: Client, connect: Any, start: int) -> None:
    connection = connect(callsConfigVersion=start)

    answer = client.put(connection.limit_path, key=connection.admin_key, json_body={"callsMaxConcurrent": 2})

    assert answer.status == 200, answer.body
    assert answer.json()["version"] == str(start + 1)
    assert stored_line(connection)["version"] == start + 1

"""Dialing through the API and the dial service, against the provider simulator, on moto.

Slots are read from the line item (`occupants`), the same data the call limit's read view shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.core.errors import IdempotencyKeyReused, InstanceDisconnected, LineBusy
from switchboard.core.identity import Scope
from tools.support.api import Client
from tools.support.aws import AwsResources
from tools.support.builders import admin, agent
from tools.support.connections import around_dial, call_events, deliver, register, set_connected

PEER = "5511988887777"


def agent_key(tenant: str, attendant: str) -> str:
    created = bootstrap.catalog_service().create_api_key(
        admin(tenant), tenant=tenant, name=attendant, environment="LIVE", scopes=[Scope.AGENT], attendant_id=attendant
    )
    return created.plaintext


def reconcile_requests(aws: AwsResources) -> list[str]:
    return [json.loads(message["Body"])["instance"] for message in aws.queue_messages("ReconcileQueue")]


def test_given_a_free_slot_when_an_agent_dials_then_the_reservation_becomes_the_call_owned_by_that_agent(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    key = agent_key("acme", "ana")

    answer = client.post(
        f"/api/connections/{connection.name}/calls",
        key=key,
        json_body={"to": PEER},
        headers={"Idempotency-Key": "dial-1"},
    )

    assert answer.status == 201, answer.body
    body = answer.json()
    assert body["status"] == "connected"
    assert body["call"]["owner"] == "ana"
    assert body["call"]["state"] == "ringing"
    call_id = body["call"]["callId"]
    assert [call["callId"] for call in control.instance(connection.sim_id)["calls"]] == [call_id]
    occupants = connection.line().occupants
    assert list(occupants) == [f"call#{connection.provider_id}#{connection.sim_id}#{call_id}"]
    assert next(iter(occupants.values())).owner == "ana"


def test_given_a_dial_then_the_taken_slot_and_the_agents_call_are_published_once_and_a_replay_publishes_nothing(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl, published: list[tuple[str, dict[str, Any]]]
) -> None:
    connection = register(simulator, control, limit=2)
    published.clear()

    outcome = bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "k")
    deliver(connection, *call_events(control, connection))  # the provider's own word: nothing new
    bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "k")  # replay

    assert outcome.call is not None
    assert published == [
        ("line.occupancy.changed", {"tenant": "acme", "instance": connection.name, "occupied": 1, "limit": 2}),
        (
            "call.state.changed",
            {
                "tenant": "acme",
                "instance": connection.name,
                "callId": outcome.call.call_id,
                "state": "ringing",
                "owner": "ana",
                "attendant": "ana",
            },
        ),
    ]


def test_given_the_provider_refuses_a_dial_then_the_freed_slot_is_published(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl, published: list[tuple[str, dict[str, Any]]]
) -> None:
    connection = register(simulator, control, limit=1)
    control.incoming_call(connection.sim_id, "5511955554444")
    published.clear()

    with pytest.raises(LineBusy):
        bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "k")

    occupancy = [detail["occupied"] for kind, detail in published if kind == "line.occupancy.changed"]
    assert occupancy == [1, 0]


def test_given_no_idempotency_key_when_dialing_then_422_and_nothing_is_reserved(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)

    answer = client.post(
        f"/api/connections/{connection.name}/calls", key=agent_key("acme", "ana"), json_body={"to": PEER}
    )

    # the header is a required parameter of the operation in the OpenAPI document
    assert (answer.status, answer.json()["error"]) == (422, "validation_error")
    assert "idempotency-key" in answer.json()["message"]
    assert connection.line().occupants == {}
    assert control.instance(connection.sim_id)["calls"] == []


def test_given_an_admin_key_without_agent_scope_when_dialing_then_403(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    created = bootstrap.catalog_service().create_api_key(
        admin(), tenant="acme", name="boss", environment="LIVE", scopes=[Scope.ADMIN]
    )

    answer = client.post(
        f"/api/connections/{connection.name}/calls",
        key=created.plaintext,
        json_body={"to": PEER},
        headers={"Idempotency-Key": "k"},
    )

    assert answer.status == 403


def test_given_another_tenants_connection_when_dialing_then_404(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, tenant="globex", limit=1)

    answer = client.post(
        f"/api/connections/{connection.name}/calls",
        key=agent_key("acme", "ana"),
        json_body={"to": PEER},
        headers={"Idempotency-Key": "k"},
    )

    assert answer.status == 404
    assert control.instance(connection.sim_id)["calls"] == []


def test_given_a_dial_when_retried_with_the_same_key_then_the_same_call_and_one_slot(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    dialing = bootstrap.dialing_service()

    first = dialing.dial(agent("ana"), connection.name, PEER, False, "same-key")
    again = dialing.dial(agent("ana"), connection.name, PEER, False, "same-key")

    assert first.call is not None and again.call is not None
    assert again.call.call_id == first.call.call_id
    assert again.reservation_id == first.reservation_id
    assert len(control.instance(connection.sim_id)["calls"]) == 1
    assert connection.occupant_kinds() == ["call"]


def test_given_a_key_when_reused_for_another_number_then_422_and_no_second_call(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    dialing = bootstrap.dialing_service()
    dialing.dial(agent("ana"), connection.name, PEER, False, "k")

    with pytest.raises(IdempotencyKeyReused):
        dialing.dial(agent("ana"), connection.name, "5511977776666", False, "k")

    assert len(control.instance(connection.sim_id)["calls"]) == 1


def test_given_the_same_key_string_from_two_attendants_then_two_distinct_dials(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    dialing = bootstrap.dialing_service()

    ana = dialing.dial(agent("ana"), connection.name, PEER, False, "k")
    bob = dialing.dial(agent("bob"), connection.name, PEER, False, "k")

    assert ana.call is not None and bob.call is not None
    assert ana.call.call_id != bob.call.call_id
    assert connection.occupant_kinds() == ["call", "call"]


def test_given_a_disconnected_connection_when_dialing_then_409_but_the_limit_stays_editable(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    set_connected(connection.tenant, connection.name, False)

    answer = client.post(
        f"/api/connections/{connection.name}/calls",
        key=agent_key("acme", "ana"),
        json_body={"to": PEER},
        headers={"Idempotency-Key": "k"},
    )

    assert answer.status == 409
    assert answer.json()["error"] == "instance_disconnected"
    assert connection.line().occupants == {}
    overview = bootstrap.calls_config_service().set_limit(admin(), connection.name, 3)
    assert overview.line is not None and overview.line.limit == 3


def test_given_a_full_line_when_dialing_then_409_line_busy_with_limit_and_occupants_and_a_reconcile(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "first")

    answer = client.post(
        f"/api/connections/{connection.name}/calls",
        key=agent_key("acme", "bob"),
        json_body={"to": "5511977776666"},
        headers={"Idempotency-Key": "second"},
    )

    assert answer.status == 409
    body = answer.json()
    assert body["error"] == "line_busy"
    assert body["limit"] == 1
    assert [occupant["owner"] for occupant in body["occupants"]] == ["ana"]
    assert len(control.instance(connection.sim_id)["calls"]) == 1
    assert connection.key in reconcile_requests(aws)


def test_given_the_provider_refuses_with_line_busy_then_the_reservation_is_released_and_reconciled(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """An incoming call we have not heard of yet took the provider's only slot."""
    connection = register(simulator, control, limit=1)
    incoming = control.incoming_call(connection.sim_id, "5511955554444")

    with pytest.raises(LineBusy) as refused:
        bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "k")

    assert refused.value.details["limit"] == 1
    assert connection.line().occupants == {}
    assert connection.key in reconcile_requests(aws)
    report = bootstrap.reconciler().reconcile(connection.instance())
    assert report.active == 1
    assert list(connection.line().occupants) == [f"call#{connection.provider_id}#{connection.sim_id}#{incoming}"]


def test_given_the_dial_answer_is_lost_then_the_slot_stays_reserved_and_a_retry_returns_the_same_call(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    control.fault("/call/dial", "drop_response")
    key = agent_key("acme", "ana")
    dial = {"key": key, "json_body": {"to": PEER}, "headers": {"Idempotency-Key": "lost"}}

    pending = client.post(f"/api/connections/{connection.name}/calls", **dial)

    assert pending.status == 202, pending.body
    assert pending.json()["status"] == "pending"
    assert connection.occupant_kinds() == ["reservation"]
    assert len(control.instance(connection.sim_id)["calls"]) == 1  # the provider did apply it
    other = client.post(
        f"/api/connections/{connection.name}/calls",
        key=agent_key("acme", "bob"),
        json_body={"to": "5511977776666"},
        headers={"Idempotency-Key": "other"},
    )
    assert other.status == 409  # the kept reservation still holds the only slot

    retried = client.post(f"/api/connections/{connection.name}/calls", **dial)

    assert retried.status == 201, retried.body
    assert retried.json()["reservationId"] == pending.json()["reservationId"]
    calls = control.instance(connection.sim_id)["calls"]
    assert [call["callId"] for call in calls] == [retried.json()["call"]["callId"]]
    assert connection.occupant_kinds() == ["call"]


def test_given_the_dial_answer_is_lost_then_the_reconciler_resolves_it_by_the_same_key(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    control.fault("/call/dial", "drop_response")
    outcome = bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "lost")
    assert outcome.call is None

    report = bootstrap.reconciler().reconcile(connection.instance())

    assert (report.active, report.reservations_released) == (1, 0)  # the live call was matched to the dial
    calls = control.instance(connection.sim_id)["calls"]
    assert len(calls) == 1
    occupant = next(iter(connection.line().occupants.values()))
    assert (occupant.kind, occupant.call_id, occupant.owner) == ("call", calls[0]["callId"], "ana")
    attempt = bootstrap.call_repository().get_attempt(connection.tenant, connection.name, outcome.reservation_id)
    assert attempt is not None and attempt.state == "connected"


def test_given_a_timeout_that_was_not_applied_then_the_reservation_is_kept_until_resolved(
    aws: AwsResources, monkeypatch: pytest.MonkeyPatch, simulator: Simulator, control: SimulatorControl
) -> None:
    monkeypatch.setenv("PROVIDER_TIMEOUT_SECONDS", "0.3")
    bootstrap.reset()
    connection = register(simulator, control, limit=1)
    control.fault("/call/dial", "timeout")

    outcome = bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "slow")

    assert outcome.call is None
    assert connection.occupant_kinds() == ["reservation"]
    monkeypatch.setenv("PROVIDER_TIMEOUT_SECONDS", "5")
    bootstrap.reset()
    again = bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "slow")
    assert again.call is not None
    assert len(control.instance(connection.sim_id)["calls"]) == 1
    assert connection.occupant_kinds() == ["call"]


def test_given_the_webhook_arrives_before_the_dial_answer_then_one_call_one_slot_owned_by_the_dialer(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = register(simulator, control, limit=1)

    def webhook_first(answer: Any) -> None:
        """The `ringing` webhook is applied before the dial's answer returns."""
        deliver(connection, *call_events(control, connection, answer.call_id))
        occupant = next(iter(connection.line().occupants.values()))
        assert (occupant.kind, occupant.owner) == ("call", "ana")  # bound by the webhook already

    around_dial(monkeypatch, after=webhook_first)

    outcome = bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "k")

    assert outcome.call is not None and outcome.call.owner == "ana"
    assert outcome.call.reservation_id == outcome.reservation_id
    assert connection.occupant_kinds() == ["call"]
    deliver(connection, *call_events(control, connection))  # a duplicate delivery changes nothing
    assert connection.occupant_kinds() == ["call"]


def test_given_a_disconnected_provider_when_dialing_then_the_reservation_is_released(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """Our copy still says connected; the provider knows better."""
    connection = register(simulator, control, limit=1)
    control.set_connection(connection.sim_id, False)

    with pytest.raises(InstanceDisconnected):
        bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "k")

    assert connection.line().occupants == {}


def test_given_two_lost_dials_to_the_same_peer_then_webhooks_wait_and_each_call_goes_to_its_own_dialer(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """The `call` event carries no Idempotency-Key: with two pending dials to one peer, only the keys tell."""
    connection = register(simulator, control, limit=2)
    control.fault("/call/dial", "drop_response", times=2)
    dialing = bootstrap.dialing_service()
    assert dialing.dial(agent("ana"), connection.name, PEER, False, "a").call is None
    assert dialing.dial(agent("bob"), connection.name, PEER, False, "b").call is None

    deliver(connection, *call_events(control, connection))

    assert connection.occupant_kinds() == ["reservation", "reservation"]  # still counted once each
    report = bootstrap.reconciler().reconcile(connection.instance())
    assert report.reservations_bound == 2
    first, second = (call["callId"] for call in control.instance(connection.sim_id)["calls"])
    owners = {occupant.call_id: occupant.owner for occupant in connection.line().occupants.values()}
    assert owners == {first: "ana", second: "bob"}

"""Slots held by calls: the `call` effect on moto, fed with the simulator's own events.

Occupancy is read from the line's `occupants` (what the read view shows), after events delivered
in order, twice, out of order, or lost and recovered by reconciliation.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.calls.dynamo import CallRepository
from switchboard.calls.service import CallService
from switchboard.catalog.domain import Instance
from switchboard.catalog.events import ProviderEvent
from switchboard.core.errors import CallEnded, CallOwned, Forbidden, LineBusy
from switchboard.lines.domain import Snapshot
from switchboard.lines.dynamo import LineRepository
from tools.support.aws import AwsResources
from tools.support.builders import admin, agent, instance, provider_event
from tools.support.connections import around_dial, call_events, deliver, register

CALLER = "5511955554444"


def test_given_an_incoming_call_then_it_takes_a_slot_as_soon_as_it_rings(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    call_id = control.incoming_call(connection.sim_id, CALLER)

    deliver(connection, *call_events(control, connection, call_id))

    occupant = next(iter(connection.line().occupants.values()))
    assert (occupant.kind, occupant.state, occupant.direction, occupant.call_id) == (
        "call",
        "ringing",
        "incoming",
        call_id,
    )


def test_given_video_and_recording_events_twice_then_the_call_counts_once_and_frees_once(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    call_id = control.incoming_call(connection.sim_id, CALLER, video=True)
    for action, details in [("answer", {}), ("active", {}), ("video", {"video": False}), ("video", {"video": True})]:
        control.call_action(connection.sim_id, call_id, action, **details)
    control.call_action(connection.sim_id, call_id, "recording_ready", url="https://rec.example/1")
    events = call_events(control, connection, call_id)

    deliver(connection, *events, *events)

    assert connection.occupant_kinds() == ["call"]
    occupant = next(iter(connection.line().occupants.values()))
    assert (occupant.state, occupant.video) == ("active", True)
    control.call_action(connection.sim_id, call_id, "end", reason="hangup", endedBy="remote")
    control.call_action(connection.sim_id, call_id, "recording_failed")
    late = call_events(control, connection, call_id)[len(events) :]
    deliver(connection, *late, *late, *events)
    assert connection.line().occupants == {}
    record = bootstrap.call_service().get(admin(), connection.name, call_id)
    assert (record.state, record.end_reason, record.ended_by) == ("ended", "hangup", "remote")
    assert record.recording_status == "failed"


def test_given_the_same_call_id_on_two_instances_then_two_calls_on_two_lines(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    first = register(simulator, control, limit=1)
    second = register(simulator, control, limit=1)
    call_id = control.incoming_call(first.sim_id, CALLER)
    offer = call_events(control, first, call_id)[0]
    same_id_elsewhere = {**offer, "eventId": str(uuid.uuid4()), "instanceId": second.sim_id}

    deliver(first, offer)
    deliver(second, same_id_elsewhere)
    ended = {
        **offer,
        "eventId": str(uuid.uuid4()),
        "seq": offer["seq"] + 5,
        "data": {**offer["data"], "type": "ended", "state": "ended"},
    }
    deliver(first, ended)

    assert first.line().occupants == {}
    assert [occupant.call_id for occupant in second.line().occupants.values()] == [call_id]


def test_given_two_live_calls_when_the_limit_drops_to_one_then_both_stay_and_new_dials_are_refused(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    for caller in (CALLER, "5511944443333"):
        call_id = control.incoming_call(connection.sim_id, caller)
        control.call_action(connection.sim_id, call_id, "answer")
    deliver(connection, *call_events(control, connection))

    control.panel_call_settings(connection.sim_id, 1)
    line = bootstrap.calls_config_service().refresh_from_status(connection.instance())

    assert line.limit == 1
    assert (line.occupancy, line.available, line.excess) == (2, 0, 1)
    assert all(call["state"] == "connecting" for call in control.instance(connection.sim_id)["calls"])
    with pytest.raises(LineBusy):
        bootstrap.dialing_service().dial(agent("ana"), connection.name, "5511977776666", False, "k")
    assert connection.occupant_kinds() == ["call", "call"]


def test_given_an_incoming_call_racing_an_outgoing_dial_then_the_provider_admits_one_and_we_count_one(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The incoming call reaches the provider between our admission and our dial."""
    connection = register(simulator, control, limit=1)
    incoming: list[str] = []
    around_dial(monkeypatch, before=lambda: incoming.append(control.incoming_call(connection.sim_id, CALLER)))

    with pytest.raises(LineBusy):
        bootstrap.dialing_service().dial(agent("ana"), connection.name, "5511977776666", False, "k")

    assert connection.line().occupants == {}  # our reservation was released
    deliver(connection, *call_events(control, connection))
    assert [occupant.call_id for occupant in connection.line().occupants.values()] == incoming


def test_given_an_incoming_call_stored_first_then_a_dial_is_refused_locally_without_reaching_the_provider(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    deliver(connection, *call_events(control, connection, control.incoming_call(connection.sim_id, CALLER)))

    with pytest.raises(LineBusy) as refused:
        bootstrap.dialing_service().dial(agent("ana"), connection.name, "5511977776666", False, "k")

    assert [occupant["direction"] for occupant in refused.value.details["occupants"]] == ["incoming"]
    assert [call["direction"] for call in control.instance(connection.sim_id)["calls"]] == ["incoming"]


# --- ownership -----------------------------------------------------------------------------


def test_given_a_dialled_call_then_only_its_owner_or_an_admin_controls_it_and_reloads_keep_the_owner(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    outcome = bootstrap.dialing_service().dial(agent("ana"), connection.name, CALLER, False, "k")
    assert outcome.call is not None
    call_id = outcome.call.call_id
    calls = bootstrap.call_service()

    with pytest.raises(CallOwned):
        calls.claim(agent("bob"), connection.name, call_id, None)
    assert calls.claim(agent("ana"), connection.name, call_id, None).owner == "ana"  # a reload claims again
    with pytest.raises(Forbidden):
        calls.hangup(agent("bob"), connection.name, call_id)
    with pytest.raises(Forbidden):
        calls.stop_video(agent("bob"), connection.name, call_id)
    assert calls.claim(agent("ana"), connection.name, call_id, "bob").owner == "bob"
    assert next(iter(connection.line().occupants.values())).owner == "bob"
    assert calls.claim(admin(), connection.name, call_id, "carol").owner == "carol"

    deliver(connection, *call_events(control, connection, call_id))  # a redelivery keeps the owner
    assert calls.get(admin(), connection.name, call_id).owner == "carol"


def test_given_a_socket_drop_then_nothing_ends_until_the_provider_says_so(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """Camera off keeps the slot; hangup frees it only once the provider reports the end."""
    connection = register(simulator, control, limit=1)
    call_id = control.incoming_call(connection.sim_id, CALLER, video=True)
    control.call_action(connection.sim_id, call_id, "answer")
    deliver(connection, *call_events(control, connection, call_id))
    calls = bootstrap.call_service()
    calls.claim(agent("ana"), connection.name, call_id, None)

    stopped = calls.stop_video(agent("ana"), connection.name, call_id)

    assert stopped.state == "connecting"
    deliver(connection, *call_events(control, connection, call_id))  # media changes arrive as `video` events
    assert calls.get(admin(), connection.name, call_id).video is False
    assert connection.occupant_kinds() == ["call"]
    ended = calls.hangup(agent("ana"), connection.name, call_id)
    assert (ended.state, ended.end_reason, ended.ended_by) == ("ended", "hangup", "local")
    assert connection.line().occupants == {}
    deliver(connection, *call_events(control, connection, call_id))  # the webhooks, late and repeated
    record = calls.get(admin(), connection.name, call_id)
    assert (record.state, record.end_reason, record.owner) == ("ended", "hangup", "ana")
    assert connection.line().occupants == {}
    assert calls.hangup(agent("ana"), connection.name, call_id).end_reason == "hangup"  # again: nothing changes
    with pytest.raises(CallEnded):
        calls.stop_video(agent("ana"), connection.name, call_id)


# --- any order, any duplicates -------------------------------------------------------------


@pytest.fixture
def bare_service(aws: AwsResources) -> Iterator[CallService]:
    yield CallService(CallRepository(bootstrap.table()), bootstrap.catalog_repository(), bootstrap.targets())


SEQUENCE: list[tuple[str, dict[str, Any]]] = [
    ("offer", {"state": "ringing"}),
    ("answered", {"state": "connecting", "answeredAt": "2026-11-30T08:00:05Z"}),
    ("active", {"state": "active", "answeredAt": "2026-11-30T08:00:05Z"}),
    ("video", {"state": "active", "video": True, "answeredAt": "2026-11-30T08:00:05Z"}),
    ("recording_ready", {"state": "active", "recording": {"status": "ready", "url": "https://rec.example/r"}}),
    ("ended", {"state": "ended", "endReason": "hangup", "endedBy": "remote", "answeredAt": "2026-11-30T08:00:05Z"}),
    ("recording_failed", {"state": "ended", "recording": {"status": "failed", "url": None}}),
]


def sequence_event(target: Instance, seq: int) -> ProviderEvent:
    kind, fields = SEQUENCE[seq - 1]
    data = {
        "type": kind,
        "callId": "CALL-1",
        "direction": "incoming",
        "from": CALLER,
        "to": "5511900000000",
        "video": False,
        "createdAt": "2026-11-30T08:00:00Z",
        **fields,
    }
    return provider_event(target, "call", data, seq=seq, event_id=f"evt-{seq}")


def line_instance() -> Instance:
    name = f"line-{uuid.uuid4().hex[:10]}"
    LineRepository(bootstrap.table()).apply_snapshot("acme", name, Snapshot(limit=2, version=1, source="status"))
    return instance(name, kind="calls", state="CONNECTED")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(min_value=1, max_value=len(SEQUENCE)).flatmap(
        lambda size: st.tuples(
            st.just(size),
            st.permutations([*range(1, size + 1), *range(1, size + 1)]).flatmap(
                lambda order: st.lists(st.booleans(), min_size=len(order), max_size=len(order)).map(
                    lambda keep: [seq for seq, kept in zip(order, keep, strict=True) if kept]
                )
            ),
        )
    )
)
def test_any_permutation_and_duplication_of_one_calls_events_reaches_the_same_record_and_occupancy(
    bare_service: CallService, case: tuple[int, list[int]]
) -> None:
    size, shuffled = case
    deliveries = sorted(set(range(1, size + 1)) - set(shuffled)) + shuffled  # every event at least once
    in_order, permuted = line_instance(), line_instance()
    for seq in range(1, size + 1):
        bare_service.on_call_event(sequence_event(in_order, seq))

    for seq in deliveries:
        bare_service.on_call_event(sequence_event(permuted, seq))

    repository = CallRepository(bootstrap.table())
    expected = repository.get_call(in_order.tenant, in_order.name, "prv_1", in_order.provider_instance_id, "CALL-1")
    got = repository.get_call(permuted.tenant, permuted.name, "prv_1", permuted.provider_instance_id, "CALL-1")
    assert expected is not None and got is not None
    ignored = {"instance", "provider_instance_id", "rev", "first_seen"}
    assert got.model_dump(exclude=ignored) == expected.model_dump(exclude=ignored)
    expected_line, got_line = (
        repository.line(in_order.tenant, in_order.name),
        repository.line(permuted.tenant, permuted.name),
    )
    assert expected_line is not None and got_line is not None
    assert got_line.occupancy == expected_line.occupancy == (0 if size >= 6 else 1)

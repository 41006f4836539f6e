"""Reconciliation frees line entries nothing holds (strays), and only those: a reservation whose
attempt is no longer pending once the ambiguous-outcome window is over, a call entry whose record
is not live. The strays are written as a replica with the old admission left them (a raw update
of the line), on moto with the provider simulator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.calls.domain import DialAttempt, occupant_value, reservation_id
from switchboard.calls.reconcile import REDIAL_WINDOW
from switchboard.core.errors import LineBusy
from switchboard.lines.domain import Occupant
from switchboard.lines.dynamo import line_key
from tools.support.aws import AwsResources
from tools.support.builders import agent
from tools.support.connections import Connection, call_events, deliver, register

PEER = "5511977776666"
CALLER = "5511955554444"


def put_entry(connection: Connection, occupant: Occupant) -> None:
    """What a replica running the old admission wrote: the entry, with no record condition."""
    bootstrap.table().update_item(
        Key=line_key(connection.tenant, connection.name),
        UpdateExpression="SET occupants.#id = :occupant",
        ExpressionAttributeNames={"#id": occupant.id},
        ExpressionAttributeValues={":occupant": occupant_value(occupant)},
    )


def aged(attempt: DialAttempt, age: timedelta) -> Occupant:
    return attempt.occupant().model_copy(update={"since": (datetime.now(UTC) - age).isoformat()})


def test_given_the_leaked_reservation_of_a_connected_dial_then_reconciliation_frees_it_after_the_window(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """The state the leak left: the attempt `connected`, its call live, its reservation still listed."""
    connection = register(simulator, control, limit=2)
    dialled = bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "lost-answer")
    assert dialled.call is not None and dialled.attempt.state == "pending"  # as read before the bind
    put_entry(connection, dialled.attempt.occupant())
    with pytest.raises(LineBusy):  # what attendants saw: a limit-2 line with one call is full
        bootstrap.dialing_service().dial(agent("bia"), connection.name, "5511966665555", False, "second")

    young = bootstrap.reconciler().reconcile(connection.instance())
    assert young.strays_released == 0  # within the window a dial's outcome may still be unknown
    put_entry(connection, aged(dialled.attempt, REDIAL_WINDOW + timedelta(seconds=1)))
    report = bootstrap.reconciler().reconcile(connection.instance())

    assert report.strays_released == 1
    assert [(o.kind, o.call_id) for o in connection.line().occupants.values()] == [("call", dialled.call.call_id)]
    second = bootstrap.dialing_service().dial(agent("bia"), connection.name, "5511966665555", False, "second")
    assert second.call is not None
    assert bootstrap.reconciler().reconcile(connection.instance()).strays_released == 0


def test_given_a_reservation_whose_attempt_is_gone_then_it_is_kept_within_the_window_and_freed_after(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    ghost = DialAttempt(
        id=reservation_id(connection.tenant, connection.name, "ana", "ghost"),
        tenant=connection.tenant,
        instance=connection.name,
        attendant="ana",
        to=PEER,
    )
    put_entry(connection, aged(ghost, REDIAL_WINDOW - timedelta(seconds=30)))
    assert bootstrap.reconciler().reconcile(connection.instance()).strays_released == 0
    assert connection.occupant_kinds() == ["reservation"]

    put_entry(connection, aged(ghost, REDIAL_WINDOW + timedelta(seconds=30)))
    assert bootstrap.reconciler().reconcile(connection.instance()).strays_released == 1

    assert connection.line().occupants == {}
    assert control.instance(connection.sim_id)["calls"] == []  # freed, never dialled on a guess


def test_given_pending_reservations_and_live_calls_then_none_of_them_is_a_stray(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROVIDER_TIMEOUT_SECONDS", "0.3")  # the simulator's timeout fault outlasts it
    bootstrap.reset()
    connection = register(simulator, control, limit=3)
    repository = bootstrap.call_repository()
    pending = DialAttempt(
        id=reservation_id(connection.tenant, connection.name, "ana", "in-doubt"),
        tenant=connection.tenant,
        instance=connection.name,
        attendant="ana",
        to=PEER,
        created_at=(datetime.now(UTC) - timedelta(seconds=20)).isoformat(),
    )
    assert repository.create_attempt(pending) is None
    assert repository.reserve(pending)
    control.fault("/call/dial", "timeout")  # its outcome stays unknown through the reconciliation
    incoming = control.incoming_call(connection.sim_id, CALLER)
    deliver(connection, *call_events(control, connection, incoming))

    report = bootstrap.reconciler().reconcile(connection.instance())

    assert (report.strays_released, report.reservations_kept) == (0, 1)
    assert connection.occupant_kinds() == ["call", "reservation"]


def test_given_a_call_entry_whose_record_ended_then_it_is_freed_at_once(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    incoming = control.incoming_call(connection.sim_id, CALLER)
    deliver(connection, *call_events(control, connection, incoming))
    live = next(iter(connection.line().occupants.values()))
    control.call_action(connection.sim_id, incoming, "end", reason="hangup", endedBy="remote")
    deliver(connection, *call_events(control, connection, incoming))
    put_entry(connection, live)  # an old writer put the entry back after the end

    report = bootstrap.reconciler().reconcile(connection.instance())

    assert report.strays_released == 1
    assert connection.line().occupants == {}


def test_a_stray_judged_by_a_read_that_moved_on_is_not_freed(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """The removal is conditioned on what it was judged by: here the attempt was released (a
    stray then), and a retry reopened it and was admitted before the removal ran."""
    connection = register(simulator, control, limit=1)
    repository = bootstrap.call_repository()
    attempt = DialAttempt(
        id=reservation_id(connection.tenant, connection.name, "ana", "retried"),
        tenant=connection.tenant,
        instance=connection.name,
        attendant="ana",
        to=PEER,
        created_at=(datetime.now(UTC) - timedelta(minutes=10)).isoformat(),
    )
    assert repository.create_attempt(attempt) is None
    assert repository.reserve(attempt)
    assert repository.release(attempt, "provider_line_busy")
    judged = repository.get_attempt(connection.tenant, connection.name, attempt.id)
    assert judged is not None and judged.state == "released"
    assert repository.reopen_attempt(attempt)
    assert repository.reserve(attempt)  # the retry holds the slot now

    assert not repository.release_stray(connection.tenant, connection.name, attempt.occupant(), judged)
    assert connection.occupant_kinds() == ["reservation"]

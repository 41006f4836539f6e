"""Admission across replicas: real threads, each with its own boto3 session and services, on the
serialised moto server (`served_aws`), which applies requests one at a time like DynamoDB applies
conditional writes to one item.

The simulator admits more than our line (`sim_limit=8`), so only our own admission is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.calls.domain import DialAttempt, reservation_id
from switchboard.core.errors import CallOwned, LineBusy
from tests.support.threads import at_once
from tools.support.aws import AwsResources
from tools.support.builders import agent
from tools.support.connections import Replica, call_events, deliver, register
from tools.support.fakes import FakeReconcileQueue


def race(count: int, work: Callable[[int, Replica], Any]) -> list[Any]:
    """Run `work` on `count` threads at once, each on its own replica; their results or errors."""
    replicas = [Replica(reconcile=FakeReconcileQueue()) for _ in range(count)]
    return at_once([partial(work, index, replica) for index, replica in enumerate(replicas)])


def attempt_for(connection: Any, attendant: str, key: str) -> DialAttempt:
    return DialAttempt(
        id=reservation_id(connection.tenant, connection.name, attendant, key),
        tenant=connection.tenant,
        instance=connection.name,
        attendant=attendant,
        to="5511977776666",
    )


def test_given_limit_one_when_two_replicas_reserve_at_once_then_exactly_one_is_admitted(
    served_aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1, sim_limit=8)
    attempts = [attempt_for(connection, f"a{index}", "k") for index in range(2)]
    for attempt in attempts:
        assert bootstrap.call_repository().create_attempt(attempt) is None

    reserved = race(2, lambda index, replica: replica.repository.reserve(attempts[index]))
    assert sorted(type(result).__name__ for result in reserved) == ["LineBusy", "bool"]
    assert connection.occupant_kinds() == ["reservation"]

    other = register(simulator, control, limit=1, sim_limit=8)
    dialled = race(
        2, lambda index, replica: replica.dialing.dial(agent(f"a{index}"), other.name, "5511977776666", False, "k")
    )
    assert sorted(type(result).__name__ for result in dialled) == ["DialOutcome", "LineBusy"]
    assert len(control.instance(other.sim_id)["calls"]) == 1
    assert other.occupant_kinds() == ["call"]


def test_given_limit_two_when_three_replicas_dial_at_once_then_two_calls_and_one_line_busy(
    served_aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2, sim_limit=8)

    results = race(
        3,
        lambda index, replica: replica.dialing.dial(
            agent(f"agent{index}"), connection.name, f"551197777000{index}", False, f"key-{index}"
        ),
    )

    refused = [result for result in results if isinstance(result, LineBusy)]
    assert len(refused) == 1, results
    assert refused[0].details["limit"] == 2
    assert len(control.instance(connection.sim_id)["calls"]) == 2
    assert connection.occupant_kinds() == ["call", "call"]


def test_given_one_attendant_retrying_in_two_tabs_then_one_reservation_and_one_call(
    served_aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2, sim_limit=8)

    results = race(
        4, lambda _, replica: replica.dialing.dial(agent("ana"), connection.name, "5511977776666", False, "same")
    )

    call_ids = {result.call.call_id for result in results if not isinstance(result, Exception) and result.call}
    assert len(call_ids) == 1, results
    assert len(control.instance(connection.sim_id)["calls"]) == 1
    assert connection.occupant_kinds() == ["call"]


def test_given_concurrent_events_and_claims_then_one_owner_one_slot_and_the_first_end(
    served_aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """Replicas apply the same events (redeliveries, reconnecting receivers) while two attendants claim."""
    connection = register(simulator, control, limit=2, sim_limit=8)
    call_id = control.incoming_call(connection.sim_id, "5511955554444")
    control.call_action(connection.sim_id, call_id, "answer")
    control.call_action(connection.sim_id, call_id, "active")
    events = call_events(control, connection, call_id)
    instance = connection.instance()
    deliver(connection, events[0], instance=instance)  # the offer is stored: the call can be claimed

    def work(index: int, replica: Replica) -> Any:
        if index < 2:
            return replica.calls.claim(agent(f"agent{index}"), connection.name, call_id, None).owner
        deliver(connection, *(events if index % 2 else reversed(events)), service=replica.calls, instance=instance)
        return None

    results = race(6, work)

    owners = [result for result in results[:2] if isinstance(result, str)]
    assert len(owners) == 1 and isinstance(next(r for r in results[:2] if r not in owners), CallOwned), results
    line = connection.line()
    assert [(occupant.call_id, occupant.owner, occupant.state) for occupant in line.occupants.values()] == [
        (call_id, owners[0], "active")
    ]
    control.call_action(connection.sim_id, call_id, "end", reason="hangup", endedBy="remote")
    ended = call_events(control, connection, call_id)
    race(4, lambda _, replica: deliver(connection, *reversed(ended), service=replica.calls, instance=instance))
    assert connection.line().occupants == {}
    record = bootstrap.call_service().get(agent(owners[0]), connection.name, call_id)
    assert (record.state, record.end_reason, record.owner) == ("ended", "hangup", owners[0])

"""Replays of one Idempotency-Key (a console retrying a lost answer, two tabs) never leave a slot
taken by nothing: a reservation exists only while its attempt is pending, and binding the attempt
to its call frees it for good.

The leak this guards against: a replay reads the attempt while it is pending, another replay
binds it to its call (which frees the reservation), then the first one reserves again; the dial
answers with the same call, the attempt stays `connected` and the reservation stays on the line
for ever (reconciliation only looked at pending attempts). A limit-2 line then admits one dial.
"""

from __future__ import annotations

import random
import time
from functools import partial
from typing import Any

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.calls.dialing import DialOutcome, DialService
from switchboard.calls.domain import DialAttempt
from switchboard.calls.dynamo import CallRepository, call_key
from switchboard.lines.dynamo import line_key
from tests.support.threads import at_once
from tools.support.aws import AwsResources
from tools.support.builders import agent
from tools.support.connections import Connection, Replica, call_events, deliver, register
from tools.support.fakes import FakeReconcileQueue

PEER = "5511977776666"

# The leak was seen in 2 of 43 bursts of evenly timed replays. These bursts spread their replays
# over about one dial's round trip, so they meet the bind far more often: 37 of 40 bursts leaked on
# the code before the fix. A burst that misses it with probability 3/40 lets 20 bursts miss it with
# probability (3/40)^20, about 3e-23; even a rarer interleaving caught in one burst in ten is
# missed by 20 with probability 0.9^20, about 0.12, and by the next run's bursts again.
BURSTS = 20
REPLAYS = 20
SPREAD_SECONDS = 0.1  # about one dial's round trip here: replays land before, during and after the bind


class ReadBeforeTheBind:
    """The repository as a replay sees it when it read the attempt just before another replay
    bound it: its first reads still say `pending`; what it then writes meets the stored state."""

    def __init__(self, inner: CallRepository, stale: DialAttempt, stale_reads: int) -> None:
        self._inner = inner
        self._stale = stale
        self._stale_reads = stale_reads

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create_attempt(self, attempt: DialAttempt) -> DialAttempt | None:
        return self._stale

    def get_attempt(self, tenant: str, instance: str, attempt_id: str) -> DialAttempt | None:
        if self._stale_reads > 0:
            self._stale_reads -= 1
            return self._stale
        return self._inner.get_attempt(tenant, instance, attempt_id)


def test_given_a_replay_that_read_the_attempt_before_it_was_bound_then_it_cannot_reserve_again(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    repository = bootstrap.call_repository()
    first = bootstrap.dialing_service().dial(agent("ana"), connection.name, PEER, False, "lost-answer")
    assert first.call is not None
    stale = first.attempt.model_copy(update={"state": "pending", "call_id": None})
    real = bootstrap.dialing_service()
    late = DialService(
        bootstrap.catalog_repository(),
        ReadBeforeTheBind(repository, stale, stale_reads=1),
        bootstrap.call_service(),
        bootstrap.targets(),
        FakeReconcileQueue(),
        capabilities=real._capabilities,
        refresh_limit=real._refresh_limit,
    )

    replay = late.dial(agent("ana"), connection.name, PEER, False, "lost-answer")

    assert replay.call is not None and replay.call.call_id == first.call.call_id
    assert connection.occupant_kinds() == ["call"]
    assert len(control.instance(connection.sim_id)["calls"]) == 1
    other = bootstrap.dialing_service().dial(agent("bia"), connection.name, "5511966665555", False, "another")
    assert other.call is not None  # the line's second slot is still free


def live_provider_calls(control: SimulatorControl, connection: Connection) -> list[str]:
    return [
        call["callId"]
        for call in control.instance(connection.sim_id)["calls"]
        if call["state"] in ("ringing", "connecting", "active")
    ]


def forget_finished_dial(connection: Connection, reservation: str, call_id: str) -> None:
    """Delete a finished burst's attempt and ended call, as their TTL would: moto copies the whole
    table for each transaction, so a table that keeps growing makes every later burst slower."""
    partition = line_key(connection.tenant, connection.name)["pk"]
    table = bootstrap.table()
    table.delete_item(Key={"pk": partition, "sk": f"DIAL#{reservation}"})
    table.delete_item(
        Key=call_key(connection.tenant, connection.name, connection.provider_id, connection.sim_id, call_id)
    )


def test_given_bursts_of_concurrent_replays_of_one_key_then_occupancy_never_exceeds_the_live_calls(
    served_aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """20 replicas replay one key per burst, each after a random pause within one dial's time;
    after every burst the line holds exactly the call on the provider, and after its end nothing."""
    connection = register(simulator, control, limit=2, sim_limit=8)
    replicas = [Replica(reconcile=FakeReconcileQueue()) for _ in range(REPLAYS)]
    started = time.monotonic()

    for burst in range(BURSTS):
        key = f"burst-{burst}"

        def replay(replica: Replica, pause: float, key: str = key) -> DialOutcome:
            time.sleep(pause)
            return replica.dialing.dial(agent("ana"), connection.name, PEER, False, key)

        results = at_once([partial(replay, replica, random.uniform(0, SPREAD_SECONDS)) for replica in replicas])

        assert all(isinstance(result, DialOutcome) for result in results), (burst, results)
        if any(result.call is None for result in results):
            # A dial answer slower than the client's timeout (a loaded machine) is an unknown
            # outcome: its reservation is kept until the reconciler resolves it, as in production.
            bootstrap.reconciler().reconcile(connection.instance())
        live = live_provider_calls(control, connection)
        assert len(live) == 1, (burst, live)
        occupants = connection.line().occupants
        assert sorted((o.kind, o.call_id) for o in occupants.values()) == [("call", live[0])], (burst, occupants)
        assert {result.call.call_id for result in results if result.call} <= {live[0]}
        control.call_action(connection.sim_id, live[0], "end", reason="hangup", endedBy="local")
        deliver(connection, *call_events(control, connection, live[0]))
        assert connection.line().occupants == {}, (burst, connection.line().occupants)
        forget_finished_dial(connection, results[0].reservation_id, live[0])

    print(f"{BURSTS} bursts of {REPLAYS} replays in {time.monotonic() - started:.1f} s")

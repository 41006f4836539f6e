"""A state machine over dials, replays of one Idempotency-Key taken step by step, dial answers,
binds, provider refusals, webhooks, ends and reconciliations, on moto with the real repository,
call service, dial service and reconciler (a provider kept in memory answers them).

After every step the line's occupants are exactly the live calls that hold a slot plus the
reservations of pending attempts, and nothing else (but the strays a replica with the old
admission would have written, which the next reconciliation must free).

A replay is taken apart into what the dial service does (read the attempt, ask for the
reservation, dial, bind or release): hypothesis then interleaves two or three replays of one key
as threads might, with each step acting on what that replay read, stale or not.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Key
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from switchboard import bootstrap
from switchboard.calls.dialing import DialService
from switchboard.calls.domain import LIVE_STATES, AttemptNotPending, DialAttempt, occupant_value, reservation_id
from switchboard.calls.dynamo import CallRepository
from switchboard.calls.reconcile import REDIAL_WINDOW, Reconciler
from switchboard.calls.service import CallService
from switchboard.connection_state.domain import Check
from switchboard.core.errors import LineBusy
from switchboard.lines.domain import Line, Snapshot
from switchboard.lines.dynamo import LineRepository, line_key
from switchboard.providers.base import Capabilities, DialResult, ProviderCall, ProviderTarget
from tools.support.aws import AwsResources
from tools.support.builders import agent, instance, provider_event
from tools.support.fakes import FakeCatalog, FakeReconcileQueue, FakeTargets

LIMIT = 2
KEYS = ("k0", "k1")
ATTENDANT = "ana"


def peer_of(key: str) -> str:
    return f"551197777000{KEYS.index(key)}"


class CallsProvider:
    """The provider's side of calls: a dial with a known Idempotency-Key returns the same call."""

    def __init__(self) -> None:
        self.calls: dict[str, ProviderCall] = {}
        self.by_key: dict[str, str] = {}

    def dial(self, target: ProviderTarget, phone: str, video: bool, idempotency_key: str) -> DialResult:
        if idempotency_key not in self.by_key:
            call_id = uuid.uuid4().hex.upper()
            self.calls[call_id] = ProviderCall(call_id=call_id, state="ringing", direction="outgoing", peer=phone)
            self.by_key[idempotency_key] = call_id
        return DialResult(call_id=self.by_key[idempotency_key])

    def ring_in(self, phone: str) -> ProviderCall:
        call = ProviderCall(call_id=uuid.uuid4().hex.upper(), state="ringing", direction="incoming", peer=phone)
        self.calls[call.call_id] = call
        return call

    def end(self, call_id: str) -> ProviderCall:
        ended = self.calls[call_id].model_copy(update={"state": "ended", "end_reason": "hangup", "ended_by": "remote"})
        self.calls[call_id] = ended
        return ended

    def active_calls(self, target: ProviderTarget) -> list[ProviderCall]:
        return [call for call in self.calls.values() if call.state in LIVE_STATES]

    def get_call(self, target: ProviderTarget, call_id: str) -> ProviderCall | None:
        return self.calls.get(call_id)

    def call_history(self, target: ProviderTarget) -> list[ProviderCall]:
        return list(self.calls.values())


OUTCOMES = ("answered", "refused", "abandoned")  # what a replay's dial comes to
STEPS = {
    "answered": ("read", "reserve", "dial", "bind"),
    "refused": ("read", "reserve", "refuse"),  # the provider refused it for good (its line busy)
    "abandoned": ("read", "reserve"),  # the answer never came: the reservation is in doubt
}


@dataclass
class Replay:
    """One replay of a key in flight, as the dial service runs it: what it read, and then."""

    key: str
    outcome: str
    read: DialAttempt | None = None
    reserved: bool = False
    call_id: str | None = None
    done: int = 0

    @property
    def steps(self) -> tuple[str, ...]:
        return STEPS[self.outcome]


class Occupancy(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.line = instance(f"line-{uuid.uuid4().hex[:10]}", kind="calls", state="CONNECTED")
        table = bootstrap.table()
        LineRepository(table).apply_snapshot(
            self.line.tenant, self.line.name, Snapshot(limit=LIMIT, version=1, source="status")
        )
        self.provider = CallsProvider()
        self.targets = targets = FakeTargets(self.provider)
        catalog = FakeCatalog([self.line])
        self.repository = CallRepository(table)
        self.repository.ensure_line(self.line.tenant, self.line.name)
        self.calls = CallService(self.repository, catalog, targets)
        self.dialing = DialService(
            catalog,
            self.repository,
            self.calls,
            targets,
            FakeReconcileQueue(),
            capabilities=lambda _: Capabilities(calls=True, calls_video=True),
            refresh_limit=lambda line: Line(instance=line.name, tenant=line.tenant),
        )
        self.reconciler = Reconciler(
            catalog,
            self.repository,
            self.calls,
            targets,
            read_status=lambda _: (Check(state="CONNECTED"), None),
            apply_limit=lambda *_: None,
        )
        self.strays: set[str] = set()  # entries an old replica wrote, until a reconciliation
        self.seq = 0

    def attempt(self, key: str) -> DialAttempt:
        return DialAttempt(
            id=reservation_id(self.line.tenant, self.line.name, ATTENDANT, key),
            tenant=self.line.tenant,
            instance=self.line.name,
            attendant=ATTENDANT,
            to=peer_of(key),
        )

    def deliver(self, call: ProviderCall, kind: str) -> None:
        """The provider's `call` webhook for `call` as it is now."""
        self.seq += 1
        outgoing = call.direction == "outgoing"
        data: dict[str, Any] = {
            "type": kind,
            "callId": call.call_id,
            "state": call.state,
            "direction": call.direction,
            "from": "5511900000000" if outgoing else call.peer,
            "to": call.peer if outgoing else "5511900000000",
            "video": False,
        }
        if call.state == "ended":
            data |= {"endReason": call.end_reason, "endedBy": call.ended_by}
        self.calls.on_call_event(provider_event(self.line, "call", data, seq=self.seq))

    # --- whole dials ---------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS))
    def dial(self, key: str) -> None:
        with contextlib.suppress(LineBusy):  # a full line refuses, and is a fine state to go on from
            self.dialing.dial(agent(ATTENDANT), self.line.name, peer_of(key), False, key)

    # --- replays of one key at once ------------------------------------------------------

    @rule(
        key=st.sampled_from(KEYS),
        outcomes=st.lists(st.sampled_from(OUTCOMES), min_size=2, max_size=3),
        data=st.data(),
    )
    def replays_at_once(self, key: str, outcomes: list[str], data: st.DataObject) -> None:
        """Two or three replays of one key, their steps interleaved in an order hypothesis picks
        (as threads might run them), each step acting on what its own replay read."""
        replays = [Replay(key=key, outcome=outcome) for outcome in outcomes]
        turns = [index for index, replay in enumerate(replays) for _ in replay.steps]
        for index in data.draw(st.permutations(turns)):
            self.step(replays[index])

    def step(self, replay: Replay) -> None:
        name = replay.steps[replay.done]
        replay.done += 1
        if name == "read":  # stores the attempt or reads it; a released one is reopened, as a retry does
            existing = self.repository.create_attempt(self.attempt(replay.key))
            replay.read = existing or self.attempt(replay.key)
            if replay.read.state == "released":
                self.repository.reopen_attempt(replay.read)
                replay.read = replay.read.model_copy(update={"state": "pending", "release_reason": None})
        elif replay.read is None or replay.read.state != "pending":
            return  # it read the call already made: it answers with it and takes no slot
        elif name == "reserve":
            try:
                self.repository.reserve(replay.read)
            except (LineBusy, AttemptNotPending):
                return
            replay.reserved = True
        elif not replay.reserved:
            return
        elif name == "dial":
            client, target = self.targets.target_for(self.line)
            replay.call_id = client.dial(target, peer_of(replay.key), False, replay.read.id).call_id
        elif name == "bind" and replay.call_id is not None:
            self.calls.bind_dial(self.line, replay.read, replay.call_id)
        elif name == "refuse":
            self.repository.release(replay.read, "provider_line_busy")

    # --- the provider's own facts ----------------------------------------------------------

    @rule(data=st.data())
    def ringing_webhook(self, data: st.DataObject) -> None:
        """The `ringing` webhook of an outgoing call, maybe before its dial answer is bound."""
        outgoing = sorted(c for c, call in self.provider.calls.items() if call.direction == "outgoing")
        if outgoing:
            self.deliver(self.provider.calls[data.draw(st.sampled_from(outgoing))], "ringing")

    @rule()
    def incoming_call(self) -> None:
        self.deliver(self.provider.ring_in("5511955554444"), "offer")

    @rule(data=st.data(), heard=st.booleans())
    def end(self, data: st.DataObject, heard: bool) -> None:
        """A live call ends; its webhook may be lost (then only a reconciliation learns it)."""
        live = sorted(c for c, call in self.provider.calls.items() if call.state in LIVE_STATES)
        if live:
            ended = self.provider.end(data.draw(st.sampled_from(live)))
            if heard:
                self.deliver(ended, "ended")

    @rule()
    def reconcile(self) -> None:
        self.reconciler.reconcile(self.line)
        left = self.strays & set(self.occupants())
        assert not left, f"strays survived a reconciliation: {left}"
        self.strays.clear()

    @rule(key=st.sampled_from(KEYS))
    def old_replica_reserves_again(self, key: str) -> None:
        """What the admission without the attempt check let a late replay do: put back the
        reservation of an attempt already bound (its entry as old as a dial long finished)."""
        attempt = self.repository.get_attempt(self.line.tenant, self.line.name, self.attempt(key).id)
        if attempt is None or attempt.state != "connected":
            return
        since = (datetime.now(UTC) - REDIAL_WINDOW - timedelta(minutes=1)).isoformat()
        bootstrap.table().update_item(
            Key=line_key(self.line.tenant, self.line.name),
            UpdateExpression="SET occupants.#id = :occupant",
            ExpressionAttributeNames={"#id": attempt.id},
            ExpressionAttributeValues={
                ":occupant": occupant_value(attempt.occupant().model_copy(update={"since": since}))
            },
        )
        self.strays.add(attempt.id)

    def teardown(self) -> None:
        """Forget this example's line partition: moto copies the whole table for each transaction,
        so a table that kept every example's items would make each example slower than the last."""
        table = bootstrap.table()
        items = table.query(KeyConditionExpression=Key("pk").eq(line_key(self.line.tenant, self.line.name)["pk"]))
        with table.batch_writer() as batch:
            for item in items["Items"]:
                batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})

    # --- the invariant ---------------------------------------------------------------------

    def occupants(self) -> dict[str, str]:
        line = self.repository.line(self.line.tenant, self.line.name)
        return {key: occupant.kind for key, occupant in (line.occupants.items() if line else [])}

    @invariant()
    def occupants_are_live_calls_plus_pending_reservations(self) -> None:
        occupants = self.occupants()
        holding = {
            record.occupant_id
            for record in self.repository.live_calls(self.line.tenant, self.line.name)
            if record.occupant() is not None
        }
        reservations = {key for key, kind in occupants.items() if kind == "reservation"}
        attempts = self.repository.attempts(self.line.tenant, self.line.name, reservations)
        pending = {key for key in reservations if key in attempts and attempts[key].state == "pending"}
        assert {key for key, kind in occupants.items() if kind == "call"} == holding
        assert reservations - self.strays == pending, {key: attempts.get(key) for key in reservations - pending}
        assert len(occupants) == len(holding) + len(pending) + len(self.strays & reservations)


def test_occupants_are_always_the_live_calls_plus_the_reservations_of_pending_attempts(aws: AwsResources) -> None:
    run_state_machine_as_test(
        Occupancy,
        settings=settings(
            max_examples=20,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )

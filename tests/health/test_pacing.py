"""Pacing per number: the rules (hypothesis), the send worker passing a paced number over and
deferring when every number is paced, and replicas sharing one budget on the serialised
endpoint (real threads)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

import boto3
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard import bootstrap
from switchboard.catalog.domain import PacingLimits
from switchboard.core.buckets import BucketMoved, Claim
from switchboard.core.settings import get_settings
from switchboard.health.dynamo import DynamoPaceStore
from switchboard.health.pacing import PACING_NEW_CONTACTS, PACING_RATE, Pacer, new_contact_budget
from switchboard.messages.domain import MessageStatus
from switchboard.pool.domain import Affinity, NumberRoutes, SendingConfig
from tests.messages.test_valid_for import DelayedJobs
from tests.support.sending import SendWorld, instance_tokens, sending_service
from tests.support.threads import at_once
from tools.support import builders
from tools.support.aws import AwsResources

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class MemoryPaceStore:
    """DynamoPaceStore's conditions, in memory."""

    def __init__(self) -> None:
        self.tats: dict[str, int] = {}
        self.contacts: dict[tuple[str, date], int] = {}

    def take(self, number_id: str, claim: Claim, expires_at: int) -> int:
        tat = self.tats.get(number_id)
        if claim.idle:
            if tat is not None and tat > claim.now:
                raise BucketMoved(tat)
            self.tats[number_id] = claim.now + claim.add
        else:
            if tat is None or not claim.now < tat <= claim.limit:
                raise BucketMoved(tat)
            self.tats[number_id] = tat + claim.add
        return self.tats[number_id]

    def count_new_contact(self, number_id: str, day: date, budget: int) -> bool:
        counted = self.contacts.get((number_id, day), 0)
        if counted >= budget:
            return False
        self.contacts[(number_id, day)] = counted + 1
        return True


def number_of(name: str, *, registered: datetime = T0 - timedelta(days=30)) -> NumberRoutes:
    source = builders.connected(name, created_at=registered)
    routes = (builders.route_through(source),)
    return NumberRoutes(number_id=source.number_id, digits=f"5511999{len(name):06d}", routes=routes)


# --- the rules ---------------------------------------------------------------------------


@given(first=st.integers(0, 100), step=st.integers(0, 100), most=st.integers(0, 1000), age=st.integers(0, 400))
def test_the_new_contact_budget_starts_at_the_first_days_grows_each_day_and_never_passes_the_maximum(
    first: int, step: int, most: int, age: int
) -> None:
    limits = PacingLimits(per_minute=1, new_contacts_first_day=first, new_contacts_step=step, new_contacts_max=most)

    assert new_contact_budget(0, limits) == min(first, most)
    assert new_contact_budget(age, limits) <= new_contact_budget(age + 1, limits) <= most
    assert new_contact_budget(age, limits) == min(most, first + step * age)


@settings(max_examples=60, deadline=None)
@given(
    per_minute=st.integers(1, 600),
    burst=st.integers(1, 20),
    gaps=st.lists(st.floats(min_value=0, max_value=5, allow_nan=False), min_size=1, max_size=80),
)
def test_a_number_never_sends_more_than_its_burst_plus_its_rate_over_any_stretch_of_time(
    per_minute: int, burst: int, gaps: list[float]
) -> None:
    now = [T0]
    pacer = Pacer(MemoryPaceStore(), PacingLimits(per_minute=per_minute, burst=burst), clock=lambda: now[0])
    number = number_of("a")
    admitted: list[datetime] = []
    for gap in gaps:
        now[0] += timedelta(seconds=gap)
        held = pacer.admit(number, new_contact=False)
        if held is None:
            admitted.append(now[0])
        else:
            assert held.reason == PACING_RATE and held.wait_seconds >= 1

    for start, first in enumerate(admitted):
        for end in range(start, len(admitted)):
            seconds = (admitted[end] - first).total_seconds()
            assert end - start + 1 <= burst + seconds * per_minute / 60 + 1e-6


@settings(max_examples=40, deadline=None)
@given(
    sends=st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=1, max_size=60),
    first_day=st.integers(0, 10),
)
def test_new_contacts_are_counted_against_the_days_budget_and_replies_never_are(
    sends: list[tuple[bool, int]], first_day: int
) -> None:
    """Each send: new contact or reply, and how many hours later it comes."""
    now = [T0]
    store = MemoryPaceStore()
    limits = PacingLimits(per_minute=10_000, burst=10_000, new_contacts_first_day=first_day, new_contacts_step=0)
    pacer = Pacer(store, limits, clock=lambda: now[0])
    number = number_of("a")
    admitted_new: dict[date, int] = {}
    for new_contact, hours in sends:
        now[0] += timedelta(hours=hours)
        held = pacer.admit(number, new_contact=new_contact)
        if not new_contact:
            assert held is None
        elif held is None:
            admitted_new[now[0].date()] = admitted_new.get(now[0].date(), 0) + 1
        else:
            assert held.reason == PACING_NEW_CONTACTS
            assert admitted_new.get(now[0].date(), 0) == first_day
    assert all(count <= first_day for count in admitted_new.values())


# --- the send worker ---------------------------------------------------------------------


class PacedWorld(SendWorld):
    def __init__(self, *numbers: NumberRoutes, limits: PacingLimits) -> None:
        super().__init__(SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", pool=numbers))
        self.now = T0
        self.jobs = DelayedJobs()
        self.pacer = Pacer(MemoryPaceStore(), limits, clock=lambda: self.now)
        self.service = sending_service(
            self.messages,
            configs=self,
            tickets=self.tickets,
            secrets=instance_tokens(),
            client_for=lambda kind: self.provider,
            notifier=self.notifier,
            max_attempts=5,
            jobs=self.jobs,
            pacer=self.pacer,
            clock=lambda: self.now,
        )


def test_a_paced_number_is_passed_over_and_when_every_number_is_paced_the_message_comes_back_later() -> None:
    world = PacedWorld(number_of("a"), number_of("bb"), limits=PacingLimits(per_minute=6, burst=1))

    outcomes = [world.process(world.queue_message(f"55119888800{index:02d}")) for index in range(3)]

    assert [(outcome.status, outcome.instance) for outcome in outcomes[:2]] == [
        (MessageStatus.SENT, "a"),
        (MessageStatus.SENT, "bb"),
    ]
    third = outcomes[2]
    assert third.status is MessageStatus.QUEUED
    stored = world.messages.items[third.message_id]
    assert (stored.status, stored.last_error) == (MessageStatus.QUEUED, PACING_RATE)
    skipped = [
        (e.data["reason"], e.data["retryAfterSeconds"]) for e in stored.trace if e.stage == "pool.number.skipped"
    ]
    assert skipped == [(PACING_RATE, 10), (PACING_RATE, 10)]
    assert [(job.message_id, delay) for job, delay in world.jobs.queued] == [(third.message_id, 10)]

    world.now += timedelta(seconds=10)
    again = world.service.process(world.jobs.queued[0][0], 1)
    assert again.status is MessageStatus.SENT
    assert len(world.provider.sent) == 3


def test_a_reply_to_an_attached_recipient_is_not_held_back_by_the_new_contact_budget() -> None:
    limits = PacingLimits(per_minute=600, burst=100, new_contacts_first_day=1, new_contacts_step=0)
    world = PacedWorld(number_of("a"), limits=limits)
    assert world.process(world.queue_message("5511988880001")).status is MessageStatus.SENT
    held = world.process(world.queue_message("5511988880002"))
    assert held.status is MessageStatus.QUEUED
    assert world.messages.items[held.message_id].last_error == PACING_NEW_CONTACTS

    number = world.config.pool[0]
    world.messages.affinities[("acme", "5511988880003")] = Affinity(
        number_id=number.number_id, number=number.digits, sent_at=T0 - timedelta(days=2)
    )
    assert world.process(world.queue_message("5511988880003")).status is MessageStatus.SENT


def test_a_reply_to_a_recipient_who_wrote_to_the_number_within_a_day_is_not_held_back_by_the_budget() -> None:
    limits = PacingLimits(per_minute=600, burst=100, new_contacts_first_day=1, new_contacts_step=0)
    world = PacedWorld(number_of("a"), limits=limits)
    assert world.process(world.queue_message("5511988880001")).status is MessageStatus.SENT  # the day's budget
    number = world.config.pool[0]
    world.messages.affinities[("acme", "5511988880002")] = Affinity(heard={number.number_id: T0 - timedelta(hours=1)})
    world.messages.affinities[("acme", "5511988880003")] = Affinity(heard={number.number_id: T0 - timedelta(hours=25)})

    replied = world.process(world.queue_message("5511988880002"))
    stale = world.process(world.queue_message("5511988880003"))

    assert replied.status is MessageStatus.SENT
    assert stale.status is MessageStatus.QUEUED
    assert world.messages.items[stale.message_id].last_error == PACING_NEW_CONTACTS


def test_a_young_number_has_a_smaller_budget_than_an_old_one() -> None:
    limits = PacingLimits(per_minute=600, burst=100, new_contacts_first_day=2, new_contacts_step=3)
    store = MemoryPaceStore()
    pacer = Pacer(store, limits, clock=lambda: T0)
    young, old = (
        number_of("young", registered=T0 - timedelta(hours=2)),
        number_of("old", registered=T0 - timedelta(days=2)),
    )

    admitted = {
        number.number_id: sum(pacer.admit(number, new_contact=True) is None for _ in range(20))
        for number in (young, old)
    }

    assert admitted == {young.number_id: 2, old.number_id: 8}


# --- replicas ----------------------------------------------------------------------------


def test_fifty_replicas_at_once_never_exceed_a_numbers_budget_or_its_burst(served_aws: AwsResources) -> None:
    """50 threads, each a container with its own boto3 session and pacer, on the serialised
    endpoint; the clock stands still, so the bucket never refills."""
    number = number_of("a")
    budget_limits = PacingLimits(per_minute=60_000, burst=1_000, new_contacts_first_day=7, new_contacts_step=0)
    rate_limits = PacingLimits(per_minute=60, burst=5)
    bootstrap.table()  # binds the item models, once per process as in a container

    def replica(limits: PacingLimits, new_contact: bool, _: int) -> int:
        table = boto3.session.Session().resource("dynamodb").Table(get_settings().table_name)
        pacer = Pacer(DynamoPaceStore(table), limits, clock=lambda: T0)
        return sum(pacer.admit(number, new_contact=new_contact) is None for _ in range(2))

    contacts = at_once([partial(replica, budget_limits, True, index) for index in range(50)])
    sends = at_once([partial(replica, rate_limits, False, index) for index in range(50)])

    assert not [result for result in [*contacts, *sends] if isinstance(result, Exception)]
    print(f"pacing replicas: {sum(contacts)} new contacts of a budget of 7, {sum(sends)} sends of a burst of 5")
    assert sum(contacts) == 7
    table: Any = boto3.session.Session().resource("dynamodb").Table(get_settings().table_name)
    assert DynamoPaceStore(table).new_contacts_on(number.number_id, T0.date()) == 7
    assert sum(sends) <= 5

"""A number's own pacing over the deployment's: the merge, and the send worker pacing each pool
number by its own limits."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from switchboard.catalog.domain import PacingLimits, PacingOverride
from switchboard.catalog.schemas import PacingBody
from switchboard.health.pacing import PACING_RATE, Pacer
from switchboard.messages.domain import MessageStatus
from switchboard.pool.domain import NumberRoutes
from tests.health.test_pacing import T0, MemoryPaceStore, PacedWorld, number_of

DEFAULTS = PacingLimits(per_minute=30, burst=5, new_contacts_first_day=20, new_contacts_step=10, new_contacts_max=100)


def paced(name: str, **override: float | None) -> NumberRoutes:
    return number_of(name).model_copy(update={"pacing": PacingOverride.model_validate(override)})


# --- the merge ---------------------------------------------------------------------------


@given(
    rate=st.none() | st.floats(min_value=0, max_value=1000),
    burst=st.none() | st.integers(1, 100),
    first=st.none() | st.integers(0, 100),
    step=st.none() | st.integers(0, 100),
    most=st.none() | st.integers(0, 1000),
)
def test_each_field_the_override_sets_replaces_the_default_and_the_others_follow_it(
    rate: float | None, burst: int | None, first: int | None, step: int | None, most: int | None
) -> None:
    override = PacingOverride(
        messages_per_minute=rate,
        burst=burst,
        new_contacts_first_day=first,
        new_contacts_step=step,
        new_contacts_max=most,
    )

    merged = DEFAULTS.overridden_by(override)

    assert merged.per_minute == (DEFAULTS.per_minute if rate is None else rate)
    assert merged.burst == (DEFAULTS.burst if burst is None else burst)
    assert merged.new_contacts_first_day == (DEFAULTS.new_contacts_first_day if first is None else first)
    assert merged.new_contacts_step == (DEFAULTS.new_contacts_step if step is None else step)
    assert merged.new_contacts_max == (DEFAULTS.new_contacts_max if most is None else most)


def test_no_override_is_the_defaults() -> None:
    pacer = Pacer(MemoryPaceStore(), DEFAULTS)
    assert DEFAULTS.overridden_by(None) == DEFAULTS
    assert pacer.limits_for(number_of("a")) == DEFAULTS


def test_an_empty_or_all_null_body_clears_the_override() -> None:
    assert PacingBody.model_validate({}).override() is None
    assert PacingBody.model_validate({"burst": None, "messagesPerMinute": None}).override() is None
    assert PacingBody.model_validate({"messagesPerMinute": 0}).override() == PacingOverride(messages_per_minute=0)


def test_a_rate_of_zero_turns_pacing_off_for_that_number_only() -> None:
    pacer = Pacer(MemoryPaceStore(), PacingLimits(per_minute=6, burst=1), clock=lambda: T0)
    free, ruled = paced("free", messages_per_minute=0), number_of("ruled")

    assert all(pacer.admit(free, new_contact=True) is None for _ in range(50))
    assert pacer.admit(ruled, new_contact=False) is None
    held = pacer.admit(ruled, new_contact=False)
    assert held is not None and (held.reason, held.wait_seconds) == (PACING_RATE, 10)


def test_a_rate_above_zero_paces_that_number_while_the_deployment_default_is_off() -> None:
    pacer = Pacer(MemoryPaceStore(), PacingLimits(), clock=lambda: T0)
    ruled, free = paced("ruled", messages_per_minute=2, burst=2), number_of("free")

    admitted = sum(pacer.admit(ruled, new_contact=False) is None for _ in range(10))

    assert admitted == 2
    held = pacer.admit(ruled, new_contact=False)
    assert held is not None and (held.reason, held.wait_seconds) == (PACING_RATE, 30)
    assert all(pacer.admit(free, new_contact=True) is None for _ in range(50))


def test_an_override_of_the_ramp_alone_keeps_the_default_rate() -> None:
    pacer = Pacer(MemoryPaceStore(), PacingLimits(per_minute=600, burst=100), clock=lambda: T0)
    number = paced("young", new_contacts_first_day=3, new_contacts_max=3)

    admitted = sum(pacer.admit(number, new_contact=True) is None for _ in range(10))

    assert admitted == 3
    assert pacer.limits_for(number).per_minute == 600


# --- the send worker ---------------------------------------------------------------------


def test_a_pool_number_with_its_own_rate_is_paced_by_it_while_the_other_follows_the_default() -> None:
    """Deployment default: 6 a minute, burst 1. `quick` may send 60 a minute with a burst of 3."""
    world = PacedWorld(
        number_of("slow"), paced("quick", messages_per_minute=60, burst=3), limits=PacingLimits(per_minute=6, burst=1)
    )

    outcomes = [world.process(world.queue_message(f"55119888800{index:02d}")) for index in range(5)]

    sent_by = [(outcome.status, outcome.instance) for outcome in outcomes]
    # The rotation: slow, quick, slow (held: its one token is spent), quick, slow (held).
    assert sent_by[:4] == [
        (MessageStatus.SENT, "slow"),
        (MessageStatus.SENT, "quick"),
        (MessageStatus.SENT, "quick"),
        (MessageStatus.SENT, "quick"),
    ]
    # quick's burst of 3 is spent and slow's token too: the fifth waits for quick's next token (1 s).
    assert sent_by[4] == (MessageStatus.QUEUED, None)
    stored = world.messages.items[outcomes[4].message_id]
    skipped = {e.data["number"]: e.data["retryAfterSeconds"] for e in stored.trace if e.stage == "pool.number.skipped"}
    assert skipped == {world.config.pool[0].digits: 10, world.config.pool[1].digits: 1}
    assert [delay for _, delay in world.jobs.queued] == [1]

    world.now += timedelta(seconds=1)
    assert world.service.process(world.jobs.queued[0][0], 1).instance == "quick"

"""The send pipeline's gates, with fakes: the ban watch, the spam guard and pacing pass a route or
a number over, each skip traced as its route comes up."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from switchboard.catalog.domain import Instance
from switchboard.core.text import text_hash
from switchboard.messages.domain import Message, PendingRoute, TraceEvent
from switchboard.messages.ports import Hold, InstanceHealth
from switchboard.messages.sending.gates import Gates, MessageGates
from switchboard.messages.sending.plan import Plan
from switchboard.messages.spam_guard import SPAM_GUARD, SentText, SpamGuard
from switchboard.pool.domain import NumberPlan, NumberRoutes, Route, SendingConfig
from tests.support.sending import claimed
from tools.support import builders
from tools.support.fakes import FakeMessages, FakeSpamHistory

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
RECIPIENT = "5511988880001"


def instance(name: str, *, guarded: bool = False) -> Instance:
    return builders.connected(name, spamguard_enabled=guarded)


def number_of(digits: str, *sources: Instance) -> NumberRoutes:
    routes = tuple(builders.route_through(source) for source in sources)
    return NumberRoutes(number_id=f"num_{digits}", digits=digits, routes=routes)


@dataclass(frozen=True)
class Reason:
    code: str


@dataclass
class Health:
    """An instance paused (`state` for every recipient) or paused for new contacts only."""

    state: str
    new_contacts_only: bool = False

    def blocks(self, now: datetime, *, new_contact: bool) -> str | None:
        return self.state if new_contact or not self.new_contacts_only else None

    def active_reasons(self, now: datetime) -> Sequence[Reason]:
        return [Reason("throttled")]


@dataclass
class Watch:
    health: dict[str, Health] = field(default_factory=dict)
    reads: list[list[str]] = field(default_factory=list)
    unreadable: bool = False

    @property
    def now(self) -> datetime:
        return T0

    def health_of(self, instance_keys: Collection[str]) -> Mapping[str, InstanceHealth]:
        if self.unreadable:
            raise RuntimeError("health table unreachable")
        self.reads.append(list(instance_keys))
        return {key: self.health[key] for key in instance_keys if key in self.health}

    def sent(self, instance: Instance, recipient: str | None = None, text: str | None = None) -> None:
        raise AssertionError("the gates only read the ban watch")

    def refused(self, instance: Instance, provider_code: str | None) -> None:
        raise AssertionError("the gates only read the ban watch")


@dataclass(frozen=True)
class Paced:
    reason: str
    wait_seconds: int


@dataclass
class Pacer:
    """Holds back the numbers in `held`; records each number asked."""

    held: dict[str, Paced] = field(default_factory=dict)
    asked: list[tuple[str, bool]] = field(default_factory=list)

    def admit(self, number: NumberRoutes, *, new_contact: bool) -> Hold | None:
        self.asked.append((number.number_id, new_contact))
        return self.held.get(number.number_id)


def plan_of(config: SendingConfig, message: Message) -> Plan:
    numbers = list(config.pool) or ([config.default] if config.default else [])
    return Plan(config, message, None, NumberPlan(numbers=numbers, resolved={}), numbers, [])


def pool(*numbers: NumberRoutes) -> SendingConfig:
    return SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", pool=numbers)


def opened(gates: Gates, config: SendingConfig, message: Message) -> MessageGates:
    return gates.open(plan_of(config, message))


def names(routes: list[Route]) -> list[str | None]:
    return [route.instance for route in routes]


def reasons(events: list[TraceEvent]) -> list[tuple[str, object, object]]:
    return [(event.stage, event.data["instance"], event.data["reason"]) for event in events]


A, B = instance("a"), instance("b")


def test_a_paused_instance_is_passed_over_with_its_reasons_and_the_next_route_may_send() -> None:
    watch = Watch(health={A.key: Health("paused")})
    number = number_of("5511999990001", A, B)
    message = claimed(FakeMessages())
    events: list[TraceEvent] = []

    routes = list(opened(Gates(health=watch), pool(number), message).routes(number, message, events))

    assert names(routes) == ["b"]
    assert reasons(events) == [("pool.instance.skipped", "a", "health_paused")]
    assert events[0].data["healthReasons"] == ["throttled"]
    assert watch.reads == [[A.key, B.key]]


def test_paused_for_new_contacts_holds_back_a_pool_number_for_a_new_contact_only_and_never_the_default() -> None:
    watch = Watch(health={A.key: Health("paused_new", new_contacts_only=True)})
    number = number_of("5511999990001", A)
    message = claimed(FakeMessages())
    default = SendingConfig(tenant="acme", api_key_id="key_1", mode="default", default=number)
    pooled_events: list[TraceEvent] = []

    pooled = list(opened(Gates(health=watch), pool(number), message).routes(number, message, pooled_events))
    defaulted = list(opened(Gates(health=watch), default, message).routes(number, message, []))

    assert (names(pooled), reasons(pooled_events)) == ([], [("pool.instance.skipped", "a", "health_paused_new")])
    assert names(defaulted) == ["a"]


def test_an_unreadable_ban_watch_holds_nothing_back() -> None:
    number = number_of("5511999990001", A)
    message = claimed(FakeMessages())

    routes = list(opened(Gates(health=Watch(unreadable=True)), pool(number), message).routes(number, message, []))

    assert names(routes) == ["a"]


def test_a_spam_guard_refusing_the_text_passes_its_route_over_and_each_instance_is_read_once() -> None:
    history = FakeSpamHistory()
    guarded = instance("a", guarded=True)
    history.replace(guarded.key, RECIPIENT, [SentText(hash=text_hash("hello"), at=T0)], T0)
    number = number_of("5511999990001", guarded, B)
    message = claimed(FakeMessages(), RECIPIENT, "hello")
    gates = opened(Gates(spam_guard=SpamGuard(history, clock=lambda: T0)), pool(number), message)
    events: list[TraceEvent] = []

    first = list(gates.routes(number, message, events))
    again = list(gates.routes(number, message, events))

    assert names(first) == names(again) == ["b"]
    assert reasons(events) == [("pool.instance.skipped", "a", SPAM_GUARD)] * 2
    assert history.reads == 1


def test_the_history_kept_after_a_send_is_built_from_the_read_that_let_the_text_through() -> None:
    history = FakeSpamHistory()
    guarded = instance("a", guarded=True)
    number = number_of("5511999990001", guarded, B)
    message = claimed(FakeMessages(), RECIPIENT, "hello")
    gates = opened(Gates(spam_guard=SpamGuard(history, clock=lambda: T0)), pool(number), message)

    list(gates.routes(number, message, []))
    kept = gates.kept_after(number.routes[0])

    assert kept is not None
    assert (kept.instance, kept.recipient, kept.texts) == (
        guarded.key,
        RECIPIENT,
        (SentText(hash=text_hash("hello"), at=T0),),
    )
    assert gates.kept_after(number.routes[1]) is None  # its guard is off: nothing was read, nothing to keep
    assert history.reads == 1


def test_pacing_is_asked_once_per_number_when_its_first_usable_route_comes_up() -> None:
    watch = Watch(health={A.key: Health("paused")})
    pacer = Pacer()
    held_back, usable = number_of("5511999990001", A), number_of("5511999990002", B)
    message = claimed(FakeMessages())
    gates = opened(Gates(health=watch, pacer=pacer), pool(held_back, usable), message)

    assert names(list(gates.routes(held_back, message, []))) == []
    assert names(list(gates.routes(usable, message, []))) == ["b"]
    assert pacer.asked == [(usable.number_id, True)]  # the paused number spent nothing


def test_a_paced_number_is_passed_over_and_the_hold_that_frees_up_soonest_is_kept() -> None:
    first, second, free = number_of("5511999990001", A), number_of("5511999990002", B), number_of("5511999990003")
    pacer = Pacer(held={first.number_id: Paced("pacing_rate", 30), second.number_id: Paced("pacing_rate", 10)})
    message = claimed(FakeMessages())
    gates = opened(Gates(pacer=pacer), pool(first, second, free), message)
    events: list[TraceEvent] = []

    for number in (first, second):
        assert list(gates.routes(number, message, events)) == []
        events.extend(gates.passed_over(number))

    assert [(event.stage, event.data["reason"], event.data["retryAfterSeconds"]) for event in events] == [
        ("pool.number.skipped", "pacing_rate", 30),
        ("pool.number.skipped", "pacing_rate", 10),
    ]
    assert gates.held == Paced("pacing_rate", 10)
    assert [event.data["reason"] for event in gates.passed_over(free)] == ["no_instance_could_send"]


def test_the_pending_route_of_a_number_comes_first() -> None:
    number = number_of("5511999990001", A, B)
    pending = PendingRoute(number_id=number.number_id, instance="b", provider_id="prv_1", kind="wuzapi")
    message = claimed(FakeMessages(), pending=pending)

    routes = list(opened(Gates(), pool(number), message).routes(number, message, []))

    assert names(routes) == ["b", "a"]

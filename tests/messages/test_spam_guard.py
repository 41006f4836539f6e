"""The per-instance spam guard in the send worker, with fakes: a guarded instance does not send a
recipient one of the last 2 texts it sent them within 24 h; the pool tries the next route."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from switchboard.catalog.domain import Instance
from switchboard.core.text import normalised, text_hash
from switchboard.messages.domain import MessageStatus
from switchboard.messages.spam_guard import SPAM_GUARD, SpamGuard
from switchboard.pool.domain import NumberRoutes, SendingConfig
from tests.support.sending import SendWorld
from tools.support import builders
from tools.support.fakes import FakeClock, FakeSpamHistory

RECIPIENT = "5511988880001"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def instance(name: str, *, guarded: bool = True) -> Instance:
    return builders.connected(name, spamguard_enabled=guarded)


def number_of(digits: str, *instances: Instance) -> NumberRoutes:
    routes = tuple(builders.route_through(source) for source in instances)
    return NumberRoutes(number_id=f"num_{digits}", digits=digits, routes=routes)


class GuardedWorld(SendWorld):
    def __init__(self, *numbers: NumberRoutes) -> None:
        self.clock = FakeClock(T0.timestamp())
        history = FakeSpamHistory()
        guard = SpamGuard(history, clock=lambda: datetime.fromtimestamp(self.clock.now, UTC))
        config = SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", pool=numbers)
        super().__init__(config, spam_guard=guard)
        # The guard reads the history the send's record writes, as both use one table.
        self.messages.spam_history = self.history = history

    def send(self, text: str, to: str = RECIPIENT) -> MessageStatus | str:
        message = self.queue_message(to, text)
        self.process(message)
        return self.stored(message).status

    def later(self, delta: timedelta) -> None:
        self.clock.now += delta.total_seconds()


def test_texts_are_compared_trimmed_with_inner_whitespace_collapsed_and_casefolded() -> None:
    assert normalised("  Olá\t  MUNDO \n") == "olá mundo"
    assert text_hash("Straße  a") == text_hash("STRASSE a")
    assert text_hash("a b") != text_hash("ab")


def test_given_a_guarded_instance_then_a_repeat_of_either_of_the_last_two_texts_fails_spam_guard() -> None:
    world = GuardedWorld(number_of("5511999990001", instance("main")))
    assert [world.send(text) for text in ("first", "second")] == [MessageStatus.SENT] * 2

    repeat = world.queue_message(RECIPIENT, "  FIRST ")
    outcome = world.process(repeat)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, SPAM_GUARD)
    skipped = [event.data for event in world.stored(repeat).trace if event.stage == "pool.instance.skipped"]
    assert skipped == [{"number": "5511999990001", "instance": "main", "providerId": "prv_1", "reason": SPAM_GUARD}]
    assert world.provider.bodies == ["first", "second"]


def test_given_a_third_text_then_the_oldest_is_forgotten_and_other_recipients_are_not_affected() -> None:
    world = GuardedWorld(number_of("5511999990001", instance("main")))
    for text in ("one", "two", "three"):
        world.send(text)

    assert world.send("one") is MessageStatus.SENT
    assert world.send("three", to="5511988880002") is MessageStatus.SENT
    assert world.send("three") is MessageStatus.FAILED
    [(texts, _)] = [value for key, value in world.history.items.items() if key == ("acme:main", RECIPIENT)]
    assert [text.hash for text in texts] == [text_hash("one"), text_hash("three")]


def test_given_24_hours_passed_then_the_same_text_goes_again_and_the_history_expires_a_day_after_it() -> None:
    world = GuardedWorld(number_of("5511999990001", instance("main")))
    world.send("hello")
    world.later(timedelta(hours=23, minutes=59))
    assert world.send("hello") is MessageStatus.FAILED

    world.later(timedelta(minutes=2))

    assert world.send("hello") is MessageStatus.SENT
    _, expires_at = world.history.items[("acme:main", RECIPIENT)]
    assert expires_at == T0 + timedelta(hours=24, minutes=1) + timedelta(hours=24)


def test_given_a_refusing_guard_then_the_next_instance_and_then_the_next_number_send() -> None:
    first, second = instance("first"), instance("second")
    world = GuardedWorld(number_of("5511999990001", first, second), number_of("5511999990002", instance("other")))
    world.send("promo")  # through `first`
    world.history.replace("acme:second", RECIPIENT, world.history.recent("acme:first", RECIPIENT), T0)

    repeat = world.queue_message(RECIPIENT, "promo")
    outcome = world.process(repeat)

    assert (outcome.status, outcome.instance) == (MessageStatus.SENT, "other")
    skipped = [event.data["instance"] for event in world.stored(repeat).trace if event.stage == "pool.instance.skipped"]
    assert skipped == ["first", "second"]


def test_given_an_unguarded_instance_then_repeats_are_sent_and_nothing_is_kept() -> None:
    world = GuardedWorld(number_of("5511999990001", instance("main", guarded=False)))

    assert [world.send("same") for _ in range(3)] == [MessageStatus.SENT] * 3
    assert world.history.items == {}


def test_a_message_reads_each_guarded_instance_history_once_and_keeps_it_only_where_it_was_sent() -> None:
    first, second = instance("first"), instance("second")
    world = GuardedWorld(number_of("5511999990001", first, second))
    world.send("promo")  # through `first`
    world.history.reads = 0

    repeat = world.queue_message(RECIPIENT, "promo")
    outcome = world.process(repeat)

    assert (outcome.status, outcome.instance) == (MessageStatus.SENT, "second")
    assert world.history.reads == 2  # `first` refused it, `second` let it through: one read each
    assert [text.hash for text in world.history.recent("acme:first", RECIPIENT)] == [text_hash("promo")]
    assert [text.hash for text in world.history.recent("acme:second", RECIPIENT)] == [text_hash("promo")]

"""The send pipeline's attempt step, with fakes: the route is recorded in flight before the provider
is called, and the provider's answer is sorted into what the pipeline does next."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from switchboard.catalog.domain import Instance
from switchboard.core.errors import (
    ProviderDisconnected,
    ProviderRejected,
    ProviderThrottled,
    ProviderTimeout,
    ProviderUnavailable,
)
from switchboard.messages.domain import Message, MessageStatus, PendingRoute, TraceEvent
from switchboard.messages.ports import InstanceHealth
from switchboard.messages.sending.attempt import Attempts, Lost, Refused, Sent, Throttled, Transient, Tried
from switchboard.pool.domain import NumberRoutes
from tests.support.sending import claimed, instance_tokens
from tools.support import builders
from tools.support.fakes import FakeMessages, FakeProvider, FakeSecrets

SOURCE = builders.connected("inst-a", number_id="num_1")
ROUTE = builders.route_through(SOURCE)
NUMBER = NumberRoutes(number_id="num_1", digits="5511999990001", routes=(ROUTE,))
MARKED = PendingRoute(number_id="num_1", instance="inst-a", provider_id="prv_1", kind="wuzapi")


@dataclass
class Watch:
    """Hears the refusals: (instance name, provider code)."""

    refusals: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def now(self) -> datetime:
        raise AssertionError("an attempt reads no health")

    def health_of(self, instance_keys: object) -> dict[str, InstanceHealth]:
        raise AssertionError("an attempt reads no health")

    def sent(self, instance: Instance, recipient: str | None = None, text: str | None = None) -> None:
        raise AssertionError("a send is counted by the outcome")

    def refused(self, instance: Instance, provider_code: str | None) -> None:
        self.refusals.append((instance.name, provider_code))


class World:
    def __init__(self, secrets: FakeSecrets | None = None) -> None:
        self.messages = FakeMessages()
        self.provider = FakeProvider(expected_token=lambda target: f"token-of-{target.provider_instance_id}")
        self.watch = Watch()
        self.attempts = Attempts(
            self.messages,
            secrets=secrets or instance_tokens(),
            client_for=lambda kind: self.provider,
            health=self.watch,
        )
        self.message = claimed(self.messages)
        self.events: list[TraceEvent] = []

    def attempt(self, message: Message | None = None) -> Tried:
        return self.attempts.make(message or self.message, NUMBER, ROUTE, self.events)

    def fail_with(self, error: Exception) -> Tried:
        self.provider.failures["inst-a"] = [error]
        return self.attempt()

    def trace(self) -> list[tuple[str, object]]:
        return [(event.stage, event.data.get("reason")) for event in self.events]


def test_a_send_is_recorded_in_flight_first_then_sent_with_the_instance_token_and_the_message_id_as_key() -> None:
    world = World()

    tried = world.attempt()

    assert isinstance(tried, Sent)
    assert tried.provider_message_id == "wamid-1"
    assert tried.message.in_flight == MARKED
    assert world.messages.items[world.message.id].in_flight == MARKED
    [sent] = world.provider.sent
    assert (sent.token, sent.phone, sent.key) == ("token-of-inst-a", world.message.to, world.message.id)
    assert [(e.stage, e.data["providerMessageId"]) for e in world.events] == [("message.sent", "wamid-1")]


def test_a_route_already_in_flight_is_not_recorded_again() -> None:
    world = World()
    marked = world.messages.record_in_flight(world.message, MARKED)

    class Unwritable(FakeMessages):
        def record_in_flight(self, message: Message, route: PendingRoute) -> Message:
            raise AssertionError("recorded twice")

    world.attempts = Attempts(Unwritable(), secrets=instance_tokens(), client_for=lambda kind: world.provider)

    assert isinstance(world.attempt(marked), Sent)


def test_a_lost_lease_sends_nothing() -> None:
    world = World()
    world.messages.items[world.message.id] = world.message.model_copy(update={"status": MessageStatus.SENT})

    tried = world.attempt()

    assert isinstance(tried, Lost)
    assert (world.provider.sent, world.events) == ([], [])


def test_a_rejection_is_a_refusal_the_ban_watch_hears() -> None:
    world = World()

    tried = world.fail_with(ProviderRejected("bad phone", provider_code="131026"))

    assert isinstance(tried, Refused)
    assert tried.code == "provider_rejected"
    assert tried.message.in_flight == MARKED
    assert world.trace() == [("pool.instance.skipped", "provider_rejected")]
    assert world.watch.refusals == [("inst-a", "131026")]


def test_a_disconnected_instance_is_passed_over_without_a_refusal_of_the_message() -> None:
    world = World()

    tried = world.fail_with(ProviderDisconnected("logged out"))

    assert isinstance(tried, Refused)
    assert tried.code is None
    assert world.trace() == [("pool.instance.skipped", "provider_disconnected")]
    assert world.watch.refusals == []


def test_a_throttled_number_is_heard_by_the_ban_watch_with_the_provider_code() -> None:
    world = World()

    tried = world.fail_with(ProviderThrottled("timelock", provider_code="463"))

    assert isinstance(tried, Throttled)
    assert tried.error.code == "provider_throttled"
    assert [(e.data["reason"], e.data["providerCode"]) for e in world.events] == [("provider_throttled", "463")]
    assert world.watch.refusals == [("inst-a", "463")]


def test_a_timeout_is_transient_and_traced_as_a_failed_attempt() -> None:
    world = World()

    tried = world.fail_with(ProviderTimeout("no answer"))

    assert isinstance(tried, Transient)
    assert isinstance(tried.error, ProviderTimeout)
    assert world.trace() == [("send.attempt.failed", "provider_timeout")]
    assert world.watch.refusals == []


def test_unreadable_credentials_are_a_transient_unavailable_provider() -> None:
    world = World(secrets=FakeSecrets(failure=RuntimeError("parameter store down")))

    tried = world.attempt()

    assert isinstance(tried, Transient)
    assert isinstance(tried.error, ProviderUnavailable)
    assert world.provider.sent == []
    assert world.trace() == [("send.attempt.failed", "provider_unavailable")]

"""The send pipeline's outcome step, with fakes: how a send ends, one write each, then the client
is told; a message finished meanwhile by another delivery ends SKIPPED and nothing is told."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from switchboard.catalog.domain import Instance
from switchboard.core.errors import ProviderThrottled, ProviderTimeout, ProviderUnavailable, RetryLater
from switchboard.messages.domain import EXPIRED, Message, MessageStatus, PendingRoute, SendJob, SendOutcome, TraceEvent
from switchboard.messages.ports import InstanceHealth
from switchboard.messages.sending.outcome import NO_NUMBER, Outcomes, retry_delay_seconds
from switchboard.messages.sending.plan import AMBIGUOUS_OUTCOME
from switchboard.messages.spam_guard import SPAM_GUARD
from switchboard.pool.domain import NumberRoutes, Route, SendingConfig
from tests.support.sending import claimed
from tools.support import builders
from tools.support.fakes import FakeMessages, FakeNotifier, FakeUsage

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WEBHOOK = "https://client.example/hooks"
CONFIG = SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", webhook_url=WEBHOOK)
SOURCE = builders.connected("inst-a", number_id="num_1")
WUZAPI, EVOLUTION = builders.route_through(SOURCE), builders.route_through(SOURCE, "evolution")  # resend safe, and not
NUMBER = NumberRoutes(number_id="num_1", digits="5511999990001", routes=(WUZAPI,))


@dataclass(frozen=True)
class Paced:
    reason: str
    wait_seconds: int


@dataclass
class DelayedJobs:
    queued: list[tuple[SendJob, int]] = field(default_factory=list)

    def send_later(self, body: str, delay_seconds: int) -> None:
        self.queued.append((SendJob.model_validate_json(body), delay_seconds))


@dataclass
class Watch:
    """Counts each send it hears: (instance name, recipient)."""

    sends: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def now(self) -> datetime:
        raise AssertionError("an outcome reads no health")

    def health_of(self, instance_keys: object) -> dict[str, InstanceHealth]:
        raise AssertionError("an outcome reads no health")

    def sent(self, instance: Instance, recipient: str | None = None, text: str | None = None) -> None:
        self.sends.append((instance.name, recipient))

    def refused(self, instance: Instance, provider_code: str | None) -> None:
        raise AssertionError("a refusal is heard by the attempt")


class World:
    def __init__(self, *, jobs: bool = True, max_attempts: int = 3) -> None:
        self.messages = FakeMessages()
        self.notifier = FakeNotifier()
        self.usage = FakeUsage()
        self.jobs = DelayedJobs()
        self.watch = Watch()
        self.outcomes = Outcomes(
            self.messages,
            notifier=self.notifier,
            max_attempts=max_attempts,
            usage=self.usage,
            jobs=self.jobs if jobs else None,
            health=self.watch,
            clock=lambda: T0,
        )

    def job(self, message: Message) -> SendJob:
        return SendJob(message_id=message.id, tenant=message.tenant, api_key_id=message.api_key_id, to=message.to)

    def stored(self, message: Message) -> Message:
        return self.messages.items[message.id]

    def finish_elsewhere(self, message: Message) -> None:
        self.messages.items[message.id] = message.model_copy(update={"status": MessageStatus.SENT})

    def unsent(
        self,
        message: Message,
        events: list[TraceEvent] | None = None,
        *,
        refusal: str | None = None,
        throttled: ProviderThrottled | None = None,
        held: Paced | None = None,
    ) -> SendOutcome:
        return self.outcomes.unsent(
            self.job(message), message, CONFIG, events or [], refusal=refusal, throttled=throttled, held=held, attempt=1
        )


def stages(message: Message) -> list[str]:
    return [event.stage for event in message.trace]


def test_the_backoff_doubles_from_10_seconds_up_to_5_minutes() -> None:
    assert [retry_delay_seconds(attempt) for attempt in (0, 1, 2, 3, 5, 10)] == [10, 10, 20, 40, 160, 300]


def test_a_send_is_recorded_then_counted_heard_by_the_ban_watch_and_told_to_the_client() -> None:
    world = World()
    message = claimed(world.messages)

    outcome = world.outcomes.sent(
        message,
        config=CONFIG,
        number=NUMBER,
        route=WUZAPI,
        provider_message_id="wamid-1",
        events=[],
        remember_affinity=True,
        spam_history=None,
    )

    assert (outcome.status, outcome.source_number, outcome.instance) == (MessageStatus.SENT, NUMBER.digits, "inst-a")
    assert world.stored(message).provider_message_id == "wamid-1"
    assert (world.messages.counted, world.usage.sent_on) == (["inst-a"], ["inst-a"])
    assert world.watch.sends == [("inst-a", message.to)]
    assert world.notifier.changes == [(message.id, MessageStatus.SENT, WEBHOOK)]


def test_a_message_finished_meanwhile_is_skipped_and_nobody_is_told() -> None:
    world = World()
    message = claimed(world.messages)
    world.finish_elsewhere(message)

    failed = world.outcomes.failed(message, CONFIG, NO_NUMBER, [])

    assert failed.status == "SKIPPED"
    assert (world.notifier.changes, world.messages.counted, world.usage.sent_on, world.watch.sends) == ([], [], [], [])


def test_a_failure_without_a_configuration_queues_no_client_webhook_url() -> None:
    world = World()
    message = claimed(world.messages)

    outcome = world.outcomes.failed(message, None, "api_key_revoked", [])

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "api_key_revoked")
    assert stages(world.stored(message)) == ["message.failed"]
    assert world.notifier.changes == [(message.id, MessageStatus.FAILED, None)]


def test_a_timeout_where_a_resend_is_safe_is_retried_through_the_same_route_first() -> None:
    world = World()
    message = claimed(world.messages)

    with pytest.raises(RetryLater) as raised:
        world.outcomes.transient(
            message, config=CONFIG, number=NUMBER, route=WUZAPI, error=ProviderTimeout("t"), events=[], attempt=2
        )

    assert raised.value.details["delay"] == 20
    stored = world.stored(message)
    assert (stored.status, stored.last_error) == (MessageStatus.QUEUED, "provider_timeout")
    assert stored.pending == PendingRoute(number_id="num_1", instance="inst-a", provider_id="prv_1", kind="wuzapi")
    assert stages(stored) == ["send.retry.scheduled"]
    assert world.notifier.changes == []


@pytest.mark.parametrize(("route", "attempt"), [(EVOLUTION, 1), (WUZAPI, 3)], ids=["may-copy", "last-attempt"])
def test_a_timeout_that_may_not_be_resent_ends_ambiguous(route: Route, attempt: int) -> None:
    world = World(max_attempts=3)
    message = claimed(world.messages)

    outcome = world.outcomes.transient(
        message, config=CONFIG, number=NUMBER, route=route, error=ProviderTimeout("t"), events=[], attempt=attempt
    )

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, AMBIGUOUS_OUTCOME)


def test_an_unavailable_provider_is_retried_keeping_the_pending_route_it_had_and_fails_on_the_last_attempt() -> None:
    world = World(max_attempts=2)
    pending = PendingRoute(number_id="num_9", instance="inst-z", provider_id="prv_1", kind="wuzapi")
    first = claimed(world.messages, pending=pending)
    last = claimed(world.messages, to="5511988880002")
    unavailable = ProviderUnavailable("down")

    with pytest.raises(RetryLater):
        world.outcomes.transient(
            first, config=CONFIG, number=NUMBER, route=EVOLUTION, error=unavailable, events=[], attempt=1
        )
    ended = world.outcomes.transient(
        last, config=CONFIG, number=NUMBER, route=WUZAPI, error=unavailable, events=[], attempt=2
    )

    assert world.stored(first).pending == pending
    assert (ended.status, ended.failure_reason) == (MessageStatus.FAILED, "provider_unavailable")
    assert world.outcomes.retries_left(1) and not world.outcomes.retries_left(2)


def test_every_number_paced_sends_the_message_back_to_queued_with_a_delayed_job_of_its_own() -> None:
    world = World()
    message = claimed(world.messages)

    outcome = world.unsent(message, held=Paced("pacing_rate", 2000))

    assert outcome.status is MessageStatus.QUEUED
    assert world.stored(message).last_error == "pacing_rate"
    assert stages(world.stored(message)) == ["send.deferred"]
    assert world.jobs.queued == [(world.job(message), 900)]  # at most SQS's 15 minutes away


def test_a_worker_that_cannot_queue_jobs_leaves_a_paced_message_to_sqs_backoff() -> None:
    world = World(jobs=False)
    message = claimed(world.messages)

    with pytest.raises(RetryLater) as raised:
        world.unsent(message, held=Paced("pacing_rate", 30))

    assert raised.value.details["delay"] == 30
    assert world.stored(message).status is MessageStatus.SENDING


def test_every_number_throttled_is_retried_later_not_failed() -> None:
    world = World()
    message = claimed(world.messages)

    with pytest.raises(RetryLater):
        world.unsent(message, throttled=ProviderThrottled("timelock", provider_code="463"))

    assert world.stored(message).last_error == "provider_throttled"


def test_a_provider_refusal_wins_over_pacing_and_throttling_and_fails_the_message_with_its_code() -> None:
    world = World()
    message = claimed(world.messages, expires_at=T0 + timedelta(hours=1))

    outcome = world.unsent(
        message, refusal="provider_rejected", held=Paced("pacing_rate", 5), throttled=ProviderThrottled("t")
    )

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "provider_rejected")


def test_a_message_with_validity_left_waits_for_a_wake_job_and_the_client_is_told_once() -> None:
    world = World()
    message = claimed(world.messages, expires_at=T0 + timedelta(hours=1))

    outcome = world.unsent(message)

    assert outcome.status is MessageStatus.WAITING
    [(wake, delay)] = world.jobs.queued
    assert wake == world.job(message).model_copy(update={"wake": message.lease_token})
    assert delay > 0
    assert stages(world.stored(message)) == ["message.waiting"]
    assert world.notifier.changes == [(message.id, MessageStatus.WAITING, WEBHOOK)]


def test_a_spam_guard_refusal_fails_the_message_even_with_validity_left() -> None:
    world = World()
    message = claimed(world.messages, expires_at=T0 + timedelta(hours=1))
    refused = TraceEvent(stage="pool.instance.skipped", data={"reason": SPAM_GUARD})

    outcome = world.unsent(message, [refused])

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, SPAM_GUARD)
    assert world.jobs.queued == []


@pytest.mark.parametrize(
    ("expires_at", "reason"), [(None, NO_NUMBER), (T0, EXPIRED)], ids=["no-validity", "validity-spent"]
)
def test_nothing_sent_without_validity_left_fails(expires_at: datetime | None, reason: str) -> None:
    world = World()
    message = claimed(world.messages, expires_at=expires_at)

    outcome = world.unsent(message)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, reason)
    assert world.jobs.queued == []

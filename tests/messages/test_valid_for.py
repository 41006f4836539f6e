"""A message with `validFor` waits for a number instead of failing, with fakes: it waits WAITING,
is woken by a fresh delayed job through the normal selection, and ends FAILED `expired`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from switchboard.core.clock import utcnow
from switchboard.core.errors import RetryLater
from switchboard.messages.domain import (
    EXPIRED,
    Message,
    MessageStatus,
    SendJob,
    SendOutcome,
    next_check_seconds,
)
from switchboard.pool.domain import Affinity, SendingConfig
from tests.support.sending import SendWorld, instance_tokens, number, sending_service
from tools.support.fakes import FakeMessages

RECIPIENT = "5511988880001"
HOOKS = "https://client.example/hooks"
A, B = "5511999990001", "5511999990002"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def pool(*numbers: object) -> SendingConfig:
    return SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", pool=numbers, webhook_url=HOOKS)


class DelayedJobs:
    """The send queue's delayed jobs, in order: (job, delay seconds)."""

    def __init__(self) -> None:
        self.queued: list[tuple[SendJob, int]] = []
        self.on_send: Any = None

    def send_later(self, body: str, delay_seconds: int) -> None:
        self.queued.append((SendJob.model_validate_json(body), delay_seconds))
        if self.on_send is not None:
            self.on_send()


class WaitWorld(SendWorld):
    """A send worker that can wait, on a clock the test moves."""

    def __init__(self, config: SendingConfig) -> None:
        super().__init__(config)
        self.now = T0
        self.messages = FakeMessages()
        self.jobs = DelayedJobs()
        self.service = sending_service(
            self.messages,
            configs=self,
            tickets=self.tickets,
            secrets=instance_tokens(),
            client_for=lambda kind: self.provider,
            notifier=self.notifier,
            max_attempts=5,
            jobs=self.jobs,
            clock=lambda: self.now,
        )

    def queue_valid_message(self, valid_for: int) -> Message:
        message = self.queue_message(RECIPIENT)
        valid = message.model_copy(
            update={
                "created_at": self.now,
                "valid_for": valid_for,
                "expires_at": self.now + timedelta(seconds=valid_for),
            }
        )
        self.messages.items[message.id] = valid
        return valid

    def wake(self) -> SendOutcome:
        """The clock moves to the next delayed job, which SQS then delivers."""
        job, delay = self.jobs.queued.pop(0)
        self.now += timedelta(seconds=delay)
        return self.service.process(job, 1)


def test_given_no_validity_when_no_number_is_connected_then_it_fails_at_once_as_before() -> None:
    world = WaitWorld(pool(number(A, connected=False)))
    message = world.queue_message(RECIPIENT)

    outcome = world.process(message)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "no_number_available")
    assert world.jobs.queued == []
    assert world.notifier.changes == [(message.id, MessageStatus.FAILED, HOOKS)]


def test_given_a_validity_when_every_number_is_down_then_it_waits_and_is_sent_through_the_normal_selection() -> None:
    world = WaitWorld(pool(number(A, connected=False), number(B, connected=False)))
    # The recipient is attached to B: A reconnecting first must still serve it (fallback), not pin it.
    world.messages.affinities[("acme", RECIPIENT)] = Affinity(number_id=f"num_{B}", number=B, sent_at=utcnow())
    message = world.queue_valid_message(600)

    first = world.process(message)
    still_down = world.wake()

    assert first.status is still_down.status is MessageStatus.WAITING
    waiting = world.stored(message)
    assert (waiting.attempts, waiting.wait_checks) == (1, 2)
    assert [stage for stage, *_ in stages(waiting)] == [
        "pool.number.resolved",
        "pool.number.skipped",
        "pool.number.skipped",
        "message.waiting",
    ]  # the re-check added nothing to the trace
    assert world.notifier.changes == [(message.id, MessageStatus.WAITING, HOOKS)]  # once, when it began waiting
    assert world.provider.sent == []

    world.config = pool(number(A), number(B, connected=False))
    outcome = world.wake()

    assert (outcome.status, outcome.source_number) == (MessageStatus.SENT, A)
    sent = world.stored(message)
    assert sent.status is MessageStatus.SENT and sent.attempts == 2
    resolved = [e.data for e in sent.trace if e.stage == "pool.number.resolved"][-1]
    assert (resolved["affinityNumber"], resolved["resolvedNumber"]) == (B, A)
    assert world.messages.affinities[("acme", RECIPIENT)].number == B  # it goes home once B is back
    assert [(sent.phone, sent.key) for sent in world.provider.sent] == [(RECIPIENT, message.id)]
    assert world.notifier.changes[-1] == (message.id, MessageStatus.SENT, HOOKS)
    assert world.jobs.queued == []


def test_given_the_numbers_stay_down_then_it_expires_failed_on_time_and_the_client_is_told() -> None:
    world = WaitWorld(pool(number(A, connected=False)))
    message = world.queue_valid_message(30)

    outcomes = [world.process(message)]
    while world.jobs.queued:
        outcomes.append(world.wake())

    assert [o.status for o in outcomes] == [MessageStatus.WAITING] * 3 + [MessageStatus.FAILED]
    assert outcomes[-1].failure_reason == EXPIRED
    assert world.now == message.expires_at  # checks after 5, 10, then the 15 s left: never past it
    failed = world.stored(message)
    assert (failed.status, failed.failure_reason) == (MessageStatus.FAILED, "expired")
    assert failed.trace[-1].stage == "message.failed" and failed.trace[-1].data == {"reason": "expired"}
    assert world.notifier.changes == [
        (message.id, MessageStatus.WAITING, HOOKS),
        (message.id, MessageStatus.FAILED, HOOKS),
    ]
    assert world.provider.sent == []


def test_given_a_number_back_after_the_validity_ran_out_then_the_message_is_not_sent() -> None:
    world = WaitWorld(pool(number(A, connected=False)))
    message = world.queue_valid_message(5)
    world.process(message)
    world.config = pool(number(A))

    outcome = world.wake()

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "expired")
    assert world.provider.sent == []


def test_only_the_latest_wake_job_claims_a_waiting_message() -> None:
    world = WaitWorld(pool(number(A, connected=False)))
    message = world.queue_valid_message(600)
    world.process(message)
    stale, _ = world.jobs.queued[0]
    world.wake()  # still down: a newer job now holds the wake

    world.config = pool(number(A))
    again_original = world.process(message)  # SQS redelivers the job of the first attempt
    again_stale = world.service.process(stale, 2)

    assert again_original.status == again_stale.status == "SKIPPED"
    assert world.stored(message).status is MessageStatus.WAITING
    assert world.wake().status is MessageStatus.SENT
    assert len(world.provider.sent) == 1


def test_a_wake_job_delivered_before_waiting_is_recorded_comes_back_later_instead_of_being_dropped() -> None:
    world = WaitWorld(pool(number(A, connected=False)))
    message = world.queue_valid_message(600)
    early: list[BaseException] = []

    def deliver_at_once() -> None:
        job, _ = world.jobs.queued[-1]
        with pytest.raises(RetryLater) as retry:
            world.service.process(job, 1)
        early.append(retry.value)

    world.jobs.on_send = deliver_at_once
    world.process(message)
    world.jobs.on_send = None

    assert len(early) == 1  # SQS makes it visible again after the backoff
    assert world.stored(message).status is MessageStatus.WAITING
    world.config = pool(number(A))
    assert world.wake().status is MessageStatus.SENT


def test_the_recheck_interval_grows_from_5_to_60_seconds_and_never_passes_the_validity() -> None:
    assert [next_check_seconds(checks, 86400) for checks in range(7)] == [5, 10, 20, 40, 60, 60, 60]
    assert next_check_seconds(3, 12.2) == 13  # SQS delays are whole seconds: rounded up, never early
    assert next_check_seconds(5000, 86400) == 60


def stages(message: Message) -> list[tuple[str, object]]:
    return [(event.stage, event.data.get("reason")) for event in message.trace]

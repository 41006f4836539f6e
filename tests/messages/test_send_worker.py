"""The send worker's failure handling, with fakes: instance and number fallback, retries, redelivery."""

from __future__ import annotations

import pytest

from switchboard.core.errors import (
    NotFound,
    ProviderDisconnected,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    RetryLater,
)
from switchboard.messages.domain import Message, MessageStatus, PendingRoute, SendJob
from switchboard.messages.sending import SendWorker
from switchboard.pool.domain import NumberRoutes, Route, SendingConfig
from tests.support.sending import SendWorld, instance_tokens, number, sending_service
from tools.support.builders import instance, route_through
from tools.support.fakes import FakeBackoff, FakeMessages, FakeSecrets, FakeUsage

RECIPIENT = "5511988880001"


def pool(*numbers: object, webhook_url: str | None = "https://client.example/hooks") -> SendingConfig:
    return SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", pool=numbers, webhook_url=webhook_url)


def stages(world: SendWorld, message_id: str) -> list[tuple[str, object, object]]:
    return [
        (event.stage, event.data.get("instance"), event.data.get("reason"))
        for event in world.messages.items[message_id].trace
    ]


def test_given_a_disconnected_instance_when_sending_then_the_next_instance_of_the_number_sends() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1", "a2"))))
    world.provider.failures["a1"] = [ProviderDisconnected("not connected")]
    message = world.queue_message(RECIPIENT)

    outcome = world.process(message)

    assert (outcome.status, outcome.source_number, outcome.instance) == (MessageStatus.SENT, "5511999990001", "a2")
    assert ("pool.instance.skipped", "a1", "provider_disconnected") in stages(world, message.id)
    stored = world.stored(message)
    assert (stored.instance, stored.source_number, stored.attempts) == ("a2", "5511999990001", 1)


def test_given_every_instance_of_a_number_fails_when_sending_then_the_next_pool_number_sends() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",)), number("5511999990002", instances=("b1",))))
    world.provider.failures["a1"] = [ProviderRejected("refused")]
    message = world.queue_message(RECIPIENT)

    outcome = world.process(message)

    assert (outcome.source_number, outcome.instance) == ("5511999990002", "b1")
    trace = stages(world, message.id)
    assert ("pool.instance.skipped", "a1", "provider_rejected") in trace
    assert ("pool.number.skipped", None, "no_instance_could_send") in trace
    assert trace[-1][0] == "message.sent"


def test_given_a_rejection_everywhere_then_the_message_fails_with_the_providers_reason() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",))))
    world.provider.failures["a1"] = [ProviderRejected("refused")]
    message = world.queue_message(RECIPIENT)

    outcome = world.process(message)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "provider_rejected")
    assert world.notifier.changes == [(message.id, MessageStatus.FAILED, "https://client.example/hooks")]


def test_given_a_timeout_then_the_job_is_retried_later_on_the_same_instance_with_the_same_key() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",)), number("5511999990002", instances=("b1",))))
    world.provider.failures["a1"] = [ProviderTimeout("no answer")]
    message = world.queue_message(RECIPIENT)

    with pytest.raises(RetryLater) as retry:
        world.process(message, attempt=1)

    assert retry.value.details["delay"] > 0
    assert world.stored(message).status is MessageStatus.QUEUED
    assert world.stored(message).last_error == "provider_timeout"
    # The second delivery would pick b1 by round-robin: the pending route goes first instead.
    outcome = world.process(message, attempt=2)
    assert outcome.instance == "a1"
    assert [(sent.instance, sent.phone, sent.key) for sent in world.provider.sent] == [("a1", RECIPIENT, message.id)]
    assert world.stored(message).attempts == 2
    assert any(stage == "send.retry.pending_route" for stage, _, _ in stages(world, message.id))


def test_given_a_provider_5xx_on_the_last_attempt_then_the_message_fails_instead_of_going_to_the_dlq() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",))), max_attempts=3)
    world.provider.failures["a1"] = [ProviderUnavailable("503")]
    message = world.queue_message(RECIPIENT)

    outcome = world.process(message, attempt=3)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "provider_unavailable")


def test_given_a_redelivered_job_of_a_sent_message_then_nothing_is_sent_again() -> None:
    world = SendWorld(pool(number("5511999990001")))
    message = world.queue_message(RECIPIENT)
    world.process(message)

    again = world.process(message)

    assert again.status == "SKIPPED"
    assert len(world.provider.sent) == 1
    assert len(world.notifier.changes) == 1


def test_given_a_sent_message_then_the_client_webhook_is_queued_with_the_keys_url() -> None:
    world = SendWorld(pool(number("5511999990001")))
    message = world.queue_message(RECIPIENT)

    world.process(message)

    assert world.notifier.changes == [(message.id, MessageStatus.SENT, "https://client.example/hooks")]


def test_given_the_client_webhook_cannot_be_queued_then_the_send_still_succeeds() -> None:
    world = SendWorld(pool(number("5511999990001")))

    def broken(message: Message, webhook_url: str | None) -> None:
        raise RuntimeError("sqs down")

    world.notifier.message_changed = broken  # type: ignore[method-assign]  # the notifier broken for this test alone
    message = world.queue_message(RECIPIENT)

    assert world.process(message).status is MessageStatus.SENT
    assert world.stored(message).status is MessageStatus.SENT


def test_given_the_key_was_revoked_after_queuing_then_the_message_fails() -> None:
    world = SendWorld(pool(number("5511999990001")))

    def revoked(tenant: str, api_key_id: str) -> SendingConfig:
        raise NotFound("API key not found")

    world.get = revoked  # type: ignore[method-assign]  # the key revoked for this test alone
    message = world.queue_message(RECIPIENT)

    outcome = world.process(message)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "api_key_revoked")
    assert world.provider.sent == []


def test_given_a_sent_message_then_the_recipient_keeps_its_number_for_the_next_message() -> None:
    world = SendWorld(pool(number("5511999990001"), number("5511999990002"), number("5511999990003")))
    first = world.process(world.queue_message(RECIPIENT))
    for other in ("5511988880002", "5511988880003"):
        world.process(world.queue_message(other))

    second = world.process(world.queue_message(RECIPIENT))

    assert second.source_number == first.source_number == "5511999990001"


def test_worker_sets_the_backoff_of_a_retried_record_and_drops_a_malformed_one() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",))))
    world.provider.failures["a1"] = [ProviderTimeout("no answer")]
    message = world.queue_message(RECIPIENT)
    backoff = FakeBackoff()
    worker = SendWorker(world.service, backoff)
    body = SendJob(message_id=message.id, tenant="acme", api_key_id="key_1", to=RECIPIENT).model_dump_json()

    with pytest.raises(RetryLater):
        worker.handle(body, "receipt-1", 2)

    assert backoff.delays == [("receipt-1", 20)]
    assert worker.handle("{not json", "receipt-2", 1) is None


def test_given_the_recipients_number_is_down_then_another_serves_it_and_it_comes_back_after() -> None:
    home, other = number("5511999990001"), number("5511999990002")
    world = SendWorld(pool(home, other))
    world.process(world.queue_message(RECIPIENT))  # attached to home

    world.config = pool(number("5511999990001", connected=False), other)
    away = world.process(world.queue_message(RECIPIENT))
    world.config = pool(home, other)
    back = world.process(world.queue_message(RECIPIENT))

    assert (away.source_number, back.source_number) == ("5511999990002", "5511999990001")


def test_given_another_worker_holds_the_message_then_a_duplicate_job_sends_nothing() -> None:
    world = SendWorld(pool(number("5511999990001")))
    message = world.queue_message(RECIPIENT)
    assert world.messages.claim(message.id, "acme", "lease_other", 60) is not None  # worker 1, still sending

    duplicate = world.process(message)

    assert duplicate.status == "SKIPPED"
    assert world.provider.sent == []
    assert world.stored(message).status is MessageStatus.SENDING


def test_a_sent_message_counts_once_on_its_instances_usage() -> None:
    a1 = instance("a1", provider_instance_id="a1", number_id="n")
    routes = (route_through(a1),)
    usage = FakeUsage()
    world = SendWorld(pool(NumberRoutes(number_id="n", digits="5511999990001", routes=routes)), usage=usage)
    message = world.queue_message(RECIPIENT)

    world.process(message)
    world.process(message)  # redelivered: skipped, not counted again

    assert (world.messages.counted, usage.sent_on) == (["a1"], ["a1"])


def test_given_the_instance_token_cannot_be_read_then_the_job_is_retried_and_finally_fails() -> None:
    unavailable = FakeSecrets(failure=RuntimeError("ssm throttled"))
    world = SendWorld(pool(number("5511999990001", instances=("a1",))), max_attempts=2, secrets=unavailable)
    message = world.queue_message(RECIPIENT)

    with pytest.raises(RetryLater):
        world.process(message, attempt=1)
    final = world.process(message, attempt=2)

    assert (final.status, final.failure_reason) == (MessageStatus.FAILED, "provider_unavailable")
    assert world.provider.sent == []


def test_given_an_unexpected_error_then_sqs_retries_and_the_last_attempt_ends_failed_not_stuck_sending() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",))), max_attempts=3)
    world.provider.failures["a1"] = [RuntimeError("a bug, not a provider answer")] * 3
    message = world.queue_message(RECIPIENT)

    with pytest.raises(RuntimeError):
        world.process(message, attempt=2)
    world.messages.items[message.id] = message  # the lease of attempt 2 has expired
    outcome = world.process(message, attempt=3)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "internal_error")
    assert world.stored(message).status == MessageStatus.FAILED
    assert world.notifier.changes == [(message.id, MessageStatus.FAILED, world.config.webhook_url)]


def evolution_number(digits: str, name: str) -> NumberRoutes:
    route = Route(provider_id="prv_e", kind="evolution", base_url="http://127.0.0.1:9", provider_instance_id=name)
    return NumberRoutes(
        number_id=f"num_{digits}",
        digits=digits,
        added_at=number(digits).added_at,
        routes=(route.model_copy(update={"instance": name}),),
    )


def test_given_a_timeout_on_a_kind_that_cannot_resend_safely_then_failed_ambiguous_and_never_sent_again() -> None:
    world = SendWorld(pool(evolution_number("5511999990001", "e1"), number("5511999990002", instances=("b1",))))
    world.provider.failures["e1"] = [ProviderTimeout("no answer")]
    message = world.queue_message(RECIPIENT)

    outcome = world.process(message, attempt=1)

    assert (outcome.status, outcome.failure_reason) == (MessageStatus.FAILED, "ambiguous_outcome")
    assert world.provider.sent == []  # the lost answer may have been a delivery: no second copy anywhere
    assert world.notifier.changes == [(message.id, MessageStatus.FAILED, "https://client.example/hooks")]
    assert world.process(message, attempt=2).status == "SKIPPED"


def test_given_a_timeout_then_no_other_route_sends_it_while_its_route_cannot_and_it_ends_ambiguous() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",)), number("5511999990002", instances=("b1",))))
    # The first answer is lost after the provider took the message (it may be on the phone); then
    # that instance goes down: another number's copy would be a second one nobody can dedupe.
    world.provider.failures["a1"] = [ProviderTimeout("no answer")] + [ProviderDisconnected("down")] * 4
    message = world.queue_message(RECIPIENT)

    for attempt in (1, 2, 3, 4):
        with pytest.raises(RetryLater):
            world.process(message, attempt=attempt)
        assert world.stored(message).status is MessageStatus.QUEUED
    assert world.stored(message).last_error == "pending_route_unavailable"
    outcome = world.process(message, attempt=5)

    assert (outcome.status, world.stored(message).failure_reason) == (MessageStatus.FAILED, "ambiguous_outcome")
    assert world.provider.sent == []  # b1 never sent it


def test_given_a_timeout_then_its_route_back_sends_it_again_with_the_same_key() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1",)), number("5511999990002", instances=("b1",))))
    world.provider.failures["a1"] = [ProviderTimeout("no answer"), ProviderDisconnected("down")]
    message = world.queue_message(RECIPIENT)

    for attempt in (1, 2):
        with pytest.raises(RetryLater):
            world.process(message, attempt=attempt)
    outcome = world.process(message, attempt=3)

    assert outcome.instance == "a1"
    assert [(sent.instance, sent.key) for sent in world.provider.sent] == [("a1", message.id)]


def test_given_a_key_that_accepts_copies_then_a_timeout_falls_back_to_another_number_when_its_route_cannot() -> None:
    config = pool(number("5511999990001", instances=("a1",)), number("5511999990002", instances=("b1",)))
    world = SendWorld(config.model_copy(update={"at_least_once": True}))
    world.provider.failures["a1"] = [ProviderTimeout("no answer"), ProviderDisconnected("down")]
    message = world.queue_message(RECIPIENT)

    with pytest.raises(RetryLater):
        world.process(message, attempt=1)

    assert world.process(message, attempt=2).instance == "b1"


def test_given_a_key_that_asked_for_at_least_once_then_a_timeout_is_retried_even_where_a_copy_may_result() -> None:
    config = pool(evolution_number("5511999990001", "e1")).model_copy(update={"at_least_once": True})
    world = SendWorld(config)
    world.provider.failures["e1"] = [ProviderTimeout("no answer")]
    message = world.queue_message(RECIPIENT)

    with pytest.raises(RetryLater):
        world.process(message, attempt=1)
    assert world.process(message, attempt=2).status is MessageStatus.SENT


class MarksCounted(FakeMessages):
    """The fake records, keeping the route of each in-flight mark written apart from the claim."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[str | None] = []

    def record_in_flight(self, message: Message, route: PendingRoute) -> Message:
        self.marks.append(route.instance)
        return super().record_in_flight(message, route)


def test_the_claim_marks_the_first_route_in_flight_and_only_a_later_route_writes_its_own() -> None:
    world = SendWorld(pool(number("5511999990001", instances=("a1", "a2"))))
    world.messages = messages = MarksCounted()
    world.service = sending_service(
        messages,
        configs=world,
        tickets=world.tickets,
        secrets=instance_tokens(),
        client_for=lambda kind: world.provider,
        notifier=world.notifier,
        max_attempts=5,
    )
    first, second = world.queue_message(RECIPIENT), world.queue_message("5511988880002")
    world.provider.failures["a1"] = [ProviderDisconnected("not connected")]

    outcomes = [world.process(message).instance for message in (first, second)]

    assert outcomes == ["a2", "a1"]
    assert messages.marks == ["a2"]  # the first message's fallback; every first route came with its claim

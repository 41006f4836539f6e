"""The delivery log's rules on fakes: what each attempt of a client webhook records, that the last
failed attempt ends `failed` (and is not retried), that a log that cannot be written never loses a
final outcome, and that a replay is queued once, put back when the queue refuses it, and skipped in
a range when another replay got there first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from switchboard.core.errors import DeliveryInProgress, InvalidInput, QueueUnavailable, RetryLater
from switchboard.core.identity import Principal, Scope
from switchboard.messages.client_webhooks import ClientWebhookDeliverer, retry_delay_seconds
from switchboard.messages.delivery_log import (
    Delivery,
    DeliveryAttempt,
    DeliveryFilter,
    DeliveryLog,
    DeliveryPage,
)
from switchboard.messages.domain import ClientWebhookJob
from tools.support.fakes import FakeAudit, FakeKeys, FakeSecrets

AT = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
URL = "https://hooks.example/switchboard"
ADMIN = Principal(tenant="acme", key_id="key_admin", scopes=frozenset({Scope.ADMIN}))


def job(webhook_id: str = "whk_1") -> ClientWebhookJob:
    return ClientWebhookJob(
        id=webhook_id, tenant="acme", api_key_id="key_1", event="message.sent", timestamp=AT, data={"messageId": "m"}
    )


class Poster:
    def __init__(self, *answers: int | Exception) -> None:
        self.answers = list(answers)

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Recorder:
    def __init__(self, failing: bool = False) -> None:
        self.attempts: list[tuple[DeliveryAttempt, datetime | None]] = []
        self.failing = failing

    def attempted(self, webhook: ClientWebhookJob, attempt: DeliveryAttempt, next_retry_at: datetime | None) -> None:
        if self.failing:
            raise RuntimeError("table unavailable")
        self.attempts.append((attempt, next_retry_at))


def deliverer(poster: Poster, log: Recorder, *, max_attempts: int = 3) -> ClientWebhookDeliverer:
    ticks = iter(float(n) / 10 for n in range(1000))
    return ClientWebhookDeliverer(
        FakeKeys(URL),
        FakeSecrets({"api-keys/key_1/webhook-secret": "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}),
        poster,
        FakeAudit(),
        local_mode=False,
        log=log,
        max_attempts=max_attempts,
        retry_seconds=30,
        clock=lambda: AT,
        monotonic=lambda: next(ticks),
    )


def test_a_refused_attempt_is_logged_retrying_with_its_answer_and_its_next_try() -> None:
    log = Recorder()

    with pytest.raises(RetryLater) as raised:
        deliverer(Poster(503), log).deliver(job(), attempt=2)

    ((attempt, next_retry_at),) = log.attempts
    assert (attempt.outcome, attempt.status_code, attempt.error, attempt.latency_ms) == (
        "retrying",
        503,
        "answered 503",
        100,
    )
    assert next_retry_at == AT + timedelta(seconds=retry_delay_seconds(2, 30)) == AT + timedelta(seconds=60)
    assert raised.value.details["delay"] == 60


def test_no_answer_is_logged_by_the_errors_kind_never_its_text() -> None:
    log = Recorder()

    with pytest.raises(RetryLater):
        deliverer(Poster(ConnectionError(f"cannot reach {URL}?token=s3cr3t")), log).deliver(job(), attempt=1)

    ((attempt, _),) = log.attempts
    assert (attempt.status_code, attempt.error) == (None, "no answer (ConnectionError)")


def test_the_last_failed_attempt_ends_failed_and_is_not_retried() -> None:
    log = Recorder()

    delivered = deliverer(Poster(500), log, max_attempts=3).deliver(job(), attempt=3)

    assert delivered is False
    ((attempt, next_retry_at),) = log.attempts
    assert (attempt.outcome, next_retry_at) == ("failed", None)


def test_a_delivered_attempt_is_logged_and_a_log_failure_does_not_undo_it() -> None:
    log = Recorder()
    assert deliverer(Poster(204), log).deliver(job(), attempt=1) is True
    assert [attempt.outcome for attempt, _ in log.attempts] == ["delivered"]

    assert deliverer(Poster(204), Recorder(failing=True)).deliver(job(), attempt=1) is True


def test_a_final_outcome_the_log_cannot_keep_fails_the_delivery_so_the_queue_keeps_it() -> None:
    with pytest.raises(RuntimeError):
        deliverer(Poster(500), Recorder(failing=True), max_attempts=1).deliver(job(), attempt=1)


def test_a_refused_url_is_logged_dropped_with_the_reason() -> None:
    log = Recorder()

    dropped = deliverer(Poster(InvalidInput("URL host does not resolve")), log).deliver(job(), attempt=1)

    assert dropped is False
    ((attempt, _),) = log.attempts
    assert (attempt.outcome, attempt.error) == ("dropped", "URL host does not resolve")


# --- replays ------------------------------------------------------------------------------------


def delivery(webhook_id: str, status: str = "failed") -> Delivery:
    return Delivery.model_validate(
        {
            "tenant": "acme",
            "id": webhook_id,
            "event": "message.sent",
            "api_key_id": "key_1",
            "status": status,
            "attempts": 8,
            "created_at": AT,
            "updated_at": AT,
            "job": job(webhook_id),
        }
    )


class Store:
    def __init__(self, *deliveries: Delivery) -> None:
        self.deliveries = {each.id: each for each in deliveries}
        self.put_back: list[str] = []

    def record_attempt(self, webhook: ClientWebhookJob, attempt: DeliveryAttempt, next_retry_at: Any) -> None:
        raise AssertionError("not here")

    def get(self, tenant: str, delivery_id: str) -> Delivery:
        return self.deliveries[delivery_id]

    def page(self, tenant: str, query: DeliveryFilter) -> DeliveryPage:
        assert query.dead_letters
        return DeliveryPage(items=list(self.deliveries.values()))

    def mark_replaying(self, tenant: str, delivery_id: str, now: datetime) -> Delivery:
        before = self.deliveries[delivery_id]
        if before.status in ("retrying", "replaying"):
            raise DeliveryInProgress("in progress")
        self.deliveries[delivery_id] = before.model_copy(update={"status": "replaying"})
        return before

    def unmark_replaying(self, tenant: str, before: Delivery) -> None:
        self.deliveries[before.id] = before
        self.put_back.append(before.id)


class Queue:
    def __init__(self, failing: bool = False) -> None:
        self.bodies: list[str] = []
        self.failing = failing

    def send(self, body: str) -> None:
        if self.failing:
            raise RuntimeError("queue unavailable")
        self.bodies.append(body)


def test_a_replay_queues_the_job_as_it_was_first_queued_and_is_audited() -> None:
    queue, audit = Queue(), FakeAudit()
    log = DeliveryLog(Store(delivery("whk_1")), queue, audit, clock=lambda: AT)

    replaying = log.replay(ADMIN, "whk_1")

    assert (replaying.status, replaying.replays, replaying.replayed_at) == ("replaying", 1, AT)
    assert [ClientWebhookJob.model_validate_json(body) for body in queue.bodies] == [job("whk_1")]
    assert [action for action, _, _ in audit.records] == ["webhook_delivery.replayed"]


def test_a_replay_the_queue_refuses_puts_the_delivery_back_as_it_was() -> None:
    store = Store(delivery("whk_1"))

    with pytest.raises(QueueUnavailable):
        DeliveryLog(store, Queue(failing=True), FakeAudit()).replay(ADMIN, "whk_1")

    assert store.put_back == ["whk_1"]
    assert store.deliveries["whk_1"].status == "failed"


def test_a_range_replay_skips_what_another_replay_took_first_and_refuses_an_inverted_range() -> None:
    store = Store(delivery("whk_1"), delivery("whk_2", status="replaying"))
    log = DeliveryLog(store, Queue(), FakeAudit())

    replayed = log.replay_failed(ADMIN, AT - timedelta(hours=1), AT)

    assert (replayed.replayed, replayed.skipped) == (["whk_1"], ["whk_2"])
    with pytest.raises(InvalidInput):
        log.replay_failed(ADMIN, AT, AT - timedelta(hours=1))

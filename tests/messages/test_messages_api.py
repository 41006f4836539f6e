"""The send API and the send worker, through the gateway emulator and the template's functions, on moto.

The provider is a recording fake (`provider`); the full stack with the simulator is in tests/e2e.
Sending through a pool, end to end inside the API and the worker.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from devstack.apigw import HttpApi
from switchboard import bootstrap
from switchboard.core.errors import ProviderTimeout
from tests.support.samples import sample_event
from tools.support.api import Client
from tools.support.aws import AwsResources
from tools.support.builders import sender
from tools.support.fakes import FakeProvider, Sent
from tools.support.pool import NUMBERS, PoolWorld, build_world

RECIPIENT = "5511988880001"


@pytest.fixture
def world(client: Client, make_tenant: Any, provider: FakeProvider) -> PoolWorld:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key(default_number=NUMBERS[2])
    return world


def test_a_message_is_stored_queued_and_answered_202(world: PoolWorld, aws: AwsResources) -> None:
    answer = world.client.post("/api/messages", key=world.send_key, json_body={"to": f"+{RECIPIENT}", "text": "hi"})

    assert answer.status == 202, answer.body
    assert answer.json()["status"] == "QUEUED"
    jobs = [json.loads(m["Body"]) for m in aws.queue_messages("SendQueue")]
    assert jobs == [
        {"message_id": answer.json()["id"], "tenant": "acme", "api_key_id": world.send_key_id, "to": RECIPIENT}
    ]
    stored = world.message(answer.json()["id"])
    assert (stored["status"], stored["to"], stored["attempts"]) == ("QUEUED", RECIPIENT, 0)


def test_default_mode_sends_from_the_default_number(world: PoolWorld, provider: FakeProvider, run_worker: Any) -> None:
    message_id = world.send(RECIPIENT, "hello there")

    run_worker()

    message = world.message(message_id)
    assert (message["status"], message["sourceNumber"], message["instance"]) == (
        "SENT",
        NUMBERS[2],
        world.instances[NUMBERS[2]],
    )
    assert message["attempts"] == 1
    assert message["providerMessageId"] == "wamid-1"
    resolved = next(event for event in message["trace"] if event["stage"] == "pool.number.resolved")
    assert resolved["data"] == {
        "selectionMode": "default",
        "affinityNumber": None,
        "resolvedNumber": NUMBERS[2],
        "roundRobinIndex": None,
        "poolSize": 0,
    }
    assert provider.sent == [
        Sent(
            instance=world.instances[NUMBERS[2]],
            token=f"token-of-{world.instances[NUMBERS[2]]}-0123456789",
            phone=RECIPIENT,
            body="hello there",
            key=message_id,
        )
    ]


def test_pool_mode_sends_round_robin_then_keeps_each_recipient_on_its_number(
    world: PoolWorld, provider: FakeProvider, run_worker: Any
) -> None:
    world.use_pool(*NUMBERS)
    recipients = [f"55119888800{i:02d}" for i in range(1, 4)]

    first = [world.send(to) for to in recipients]
    run_worker()
    again = [world.send(to) for to in reversed(recipients)]
    run_worker()

    sources = {world.message(m)["to"]: world.message(m)["sourceNumber"] for m in first}
    assert sources == dict(zip(recipients, NUMBERS, strict=True))
    for message_id in again:
        message = world.message(message_id)
        assert message["sourceNumber"] == sources[message["to"]]
        resolved = next(e for e in message["trace"] if e["stage"] == "pool.number.resolved")["data"]
        assert resolved["affinityNumber"] == sources[message["to"]]
        assert resolved["roundRobinIndex"] is None
        assert resolved["poolSize"] == 3
    assert len(provider.sent) == 6


def test_pool_number_disconnected_then_back_moves_the_recipient_away_and_home(
    world: PoolWorld, provider: FakeProvider, run_worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POOL_CONFIG_CACHE_SECONDS", "0")
    bootstrap.reset()
    world.use_pool(NUMBERS[0], NUMBERS[1])
    home = world.send(RECIPIENT)
    run_worker()
    assert world.message(home)["sourceNumber"] == NUMBERS[0]

    world.set_connected(NUMBERS[0], False)
    away = world.send(RECIPIENT)
    run_worker()
    world.set_connected(NUMBERS[0], True)
    back = world.send(RECIPIENT)
    run_worker()

    away_message = world.message(away)
    assert away_message["sourceNumber"] == NUMBERS[1]
    resolved = next(e for e in away_message["trace"] if e["stage"] == "pool.number.resolved")["data"]
    assert (resolved["affinityNumber"], resolved["resolvedNumber"]) == (NUMBERS[0], NUMBERS[1])
    assert world.message(back)["sourceNumber"] == NUMBERS[0]


def test_a_number_removed_from_the_pool_loses_its_recipients(
    world: PoolWorld, provider: FakeProvider, run_worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POOL_CONFIG_CACHE_SECONDS", "0")
    bootstrap.reset()
    world.use_pool(NUMBERS[0], NUMBERS[1])
    world.send(RECIPIENT)
    run_worker()  # RECIPIENT is now attached to NUMBERS[0]
    base = f"/api/api-keys/{world.send_key_id}/pool"
    assert world.client.delete(f"{base}/{world.numbers[NUMBERS[0]]}", key=world.tenant.admin).status == 204
    re_added = world.client.post(
        base, key=world.tenant.admin, json_body={"whatsappNumberId": world.numbers[NUMBERS[0]]}
    )
    assert re_added.status == 201

    after = world.send(RECIPIENT)  # the round-robin ticket 2 points at NUMBERS[0] again (now 2nd)
    run_worker()

    resolved = next(e for e in world.message(after)["trace"] if e["stage"] == "pool.number.resolved")["data"]
    assert resolved["affinityNumber"] == NUMBERS[0]
    assert resolved["roundRobinIndex"] is not None  # the old affinity no longer decides


def test_nothing_connected_fails_with_no_number_available(
    world: PoolWorld, provider: FakeProvider, run_worker: Any
) -> None:
    world.use_pool(NUMBERS[0])
    world.set_connected(NUMBERS[0], False)
    message_id = world.send(RECIPIENT)

    run_worker()

    message = world.message(message_id)
    assert (message["status"], message["failureReason"]) == ("FAILED", "no_number_available")
    assert provider.sent == []


def test_a_message_the_worker_fails_is_published_once_failed_and_its_acceptance_not_at_all(
    world: PoolWorld, run_worker: Any, published: list[tuple[str, dict[str, Any]]]
) -> None:
    world.use_pool(NUMBERS[0])
    world.set_connected(NUMBERS[0], False)
    published.clear()
    message_id = world.send(RECIPIENT)

    run_worker()
    run_worker()  # nothing left: nothing more told

    changes = [
        (detail["messageId"], detail["status"]) for kind, detail in published if kind == "message.status.changed"
    ]
    assert changes == [(message_id, "FAILED")]


def test_a_timeout_goes_back_to_the_queue_and_a_redelivery_after_success_sends_nothing(
    world: PoolWorld, provider: FakeProvider, run_worker: Any, aws: AwsResources
) -> None:
    provider.failures[world.instances[NUMBERS[2]]] = [ProviderTimeout("no answer")]
    message_id = world.send(RECIPIENT)

    responses = run_worker()

    assert responses[0]["batchItemFailures"]  # the record failed: SQS redelivers it after the backoff
    queued = world.message(message_id)
    assert (queued["status"], queued["lastError"], queued["attempts"]) == ("QUEUED", "provider_timeout", 1)
    # Redelivery: the job is sent, then the same job arrives once more.
    job = json.dumps({"message_id": message_id, "tenant": "acme", "api_key_id": world.send_key_id, "to": RECIPIENT})
    for _ in range(2):
        bootstrap.send_queue().send(job)
    run_worker()
    assert world.message(message_id)["status"] == "SENT"
    assert [sent.key for sent in provider.sent] == [message_id]


def test_idempotency_key_answers_the_same_message_and_refuses_another_body(world: PoolWorld, aws: AwsResources) -> None:
    headers = {"Idempotency-Key": "order-42"}
    first = world.client.post(
        "/api/messages", key=world.send_key, json_body={"to": RECIPIENT, "text": "a"}, headers=headers
    )
    again = world.client.post(
        "/api/messages", key=world.send_key, json_body={"to": RECIPIENT, "text": "a"}, headers=headers
    )
    other = world.client.post(
        "/api/messages", key=world.send_key, json_body={"to": RECIPIENT, "text": "b"}, headers=headers
    )

    assert (first.status, again.status) == (202, 202)
    assert first.json() == again.json()
    assert (other.status, other.json()["error"]) == (422, "idempotency_key_reused")
    assert len(aws.queue_messages("SendQueue")) == 1


def test_idempotency_key_still_in_flight_is_a_409(world: PoolWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = bootstrap.send_queue()
    entered, release = threading.Event(), threading.Event()
    real_send = queue.send

    def slow_send(body: str) -> None:
        entered.set()
        release.wait(10)
        real_send(body)

    monkeypatch.setattr(queue, "send", slow_send)
    principal = sender(world.send_key_id)
    answers: list[Any] = []
    # The first request runs in its own "container" (the service, not this process's resolver).
    first = threading.Thread(
        target=lambda: answers.append(bootstrap.message_service().submit(principal, RECIPIENT, "a", "k-1"))
    )
    first.start()
    assert entered.wait(10)

    second = world.client.post(
        "/api/messages",
        key=world.send_key,
        json_body={"to": RECIPIENT, "text": "a"},
        headers={"Idempotency-Key": "k-1"},
    )
    release.set()
    first.join(10)

    assert (second.status, second.json()["error"]) == (409, "idempotency_key_in_flight")
    assert answers[0].status == "QUEUED"


def test_a_failed_enqueue_is_a_5xx_and_the_keyed_retry_queues_the_same_message(
    world: PoolWorld, aws: AwsResources, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = bootstrap.send_queue()
    real_send = queue.send

    def broken(body: str) -> None:
        raise RuntimeError("sqs unavailable")

    monkeypatch.setattr(queue, "send", broken)
    request = {"json_body": {"to": RECIPIENT, "text": "a"}, "headers": {"Idempotency-Key": "k-2"}}
    failed = world.client.post("/api/messages", key=world.send_key, **request)
    monkeypatch.setattr(queue, "send", real_send)
    retried = world.client.post("/api/messages", key=world.send_key, **request)

    assert (failed.status, failed.json()["error"]) == (500, "queue_unavailable")
    assert retried.status == 202, retried.body
    jobs = [json.loads(m["Body"]) for m in aws.queue_messages("SendQueue")]
    assert [job["message_id"] for job in jobs] == [retried.json()["id"]]
    assert world.message(retried.json()["id"])["status"] == "QUEUED"


def test_a_failed_enqueue_without_a_key_leaves_no_message_waiting(
    world: PoolWorld, override: Callable[..., object]
) -> None:
    class BrokenQueue:
        def send(self, body: str) -> None:
            raise RuntimeError("sqs unavailable")

    override(send_queue=BrokenQueue())

    failed = world.client.post("/api/messages", key=world.send_key, json_body={"to": RECIPIENT, "text": "a"})

    assert (failed.status, failed.json()["error"]) == (500, "queue_unavailable")


@pytest.mark.parametrize(
    "case",
    [
        ({"to": "12345", "text": "hi"}, {}, 422, "validation_error"),
        ({"to": "5511abc88880001", "text": "hi"}, {}, 422, "validation_error"),
        ({"to": RECIPIENT, "text": ""}, {}, 422, "validation_error"),
        ({"to": RECIPIENT, "text": "   "}, {}, 422, "validation_error"),
        ({"to": RECIPIENT, "text": "x" * 4097}, {}, 422, "validation_error"),
        ({"to": RECIPIENT}, {}, 422, "validation_error"),
        ({"to": RECIPIENT, "text": "hi", "from": "5511999990001"}, {}, 422, "validation_error"),
        ({"to": RECIPIENT, "text": "hi"}, {"Idempotency-Key": "has space"}, 400, "invalid_idempotency_key"),
    ],
)
def test_bad_requests_are_refused_with_a_clear_error(
    world: PoolWorld, aws: AwsResources, case: tuple[Any, dict[str, str], int, str]
) -> None:
    body, headers, status, error = case
    answer = world.client.post("/api/messages", key=world.send_key, json_body=body, headers=headers)

    assert (answer.status, answer.json()["error"]) == (status, error), answer.body
    assert aws.queue_messages("SendQueue") == []


def test_sending_needs_the_send_scope_and_messages_stay_in_their_tenant(
    world: PoolWorld, make_tenant: Any, client: Client
) -> None:
    message_id = world.send(RECIPIENT)
    globex = make_tenant("globex")

    assert client.post("/api/messages", key=world.tenant.admin, json_body={"to": RECIPIENT, "text": "x"}).status == 403
    assert client.get(f"/api/messages/{message_id}", key=globex.admin).status == 404
    assert client.get(f"/api/messages/{message_id}", key=world.tenant.admin).status == 200


def test_the_sample_sqs_event_runs_through_the_worker(http_api: HttpApi, aws: AwsResources) -> None:
    """events/sqs_send.json (also for `sam local invoke`): a job whose message is unknown is acknowledged."""
    event = sample_event("sqs_send.json")

    assert http_api.functions.invoke("SendWorkerFunction", event) == {"batchItemFailures": []}


def test_a_refusal_names_the_fields_as_the_api_spells_them_never_the_validators_inside(
    world: PoolWorld, aws: AwsResources
) -> None:
    """A menu's header is a text or a file: a wrong file type is told at `interactive.header.type`."""
    menu = {"type": "buttons", "body": "Confirma?", "buttons": [{"id": "y", "title": "Sim"}]}
    header = {"type": "audio", "mediaId": "med_0123456789abcdef"}
    body = {"to": RECIPIENT, "interactive": {**menu, "header": header}}

    answer = world.client.post("/api/messages", key=world.send_key, json_body=body)

    assert answer.status == 422, answer.body
    fields = {problem["field"] for problem in answer.json()["fields"]}
    assert fields == {"interactive.header", "interactive.header.type"}
    assert "interactive.header.type: Input should be 'image', 'video' or 'document'" in answer.json()["message"]
    assert b"function-after" not in answer.body and b"InteractiveHeaderBody" not in answer.body
    assert aws.queue_messages("SendQueue") == []

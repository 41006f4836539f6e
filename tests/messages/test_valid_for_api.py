"""`validFor` through the gateway emulator and the template's send worker, on moto: the field's
validation, its view, and a wait that rides a fresh delayed SQS job, never the redrive budget."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import boto3
import moto.core.utils
import moto.sqs.models
import pytest

from switchboard import bootstrap
from switchboard.core.clock import utcnow
from switchboard.core.settings import get_settings
from switchboard.messages.domain import Message, MessageStatus, SendJob, body_hash
from switchboard.messages.dynamo import MessageRepository
from tests.pool.test_pool_concurrency import container, pool_key
from tools.support.api import Client
from tools.support.aws import REGION, AwsResources
from tools.support.fakes import FakeProvider
from tools.support.pool import NUMBERS, PoolWorld, build_world

RECIPIENT = "5511988880001"
HOOKS = "http://127.0.0.1:9/hooks"  # never called: the webhook jobs are only read off their queue


@pytest.fixture
def world(client: Client, make_tenant: Any, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> PoolWorld:
    monkeypatch.setenv("POOL_CONFIG_CACHE_SECONDS", "0")  # the worker sees each connection change at once
    bootstrap.reset()
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key(webhook_url=HOOKS)
    world.use_pool(NUMBERS[0], NUMBERS[1])
    return world


def send(world: PoolWorld, body: dict[str, Any]) -> Any:
    return world.client.post("/api/messages", key=world.send_key, json_body={"to": RECIPIENT, "text": "hi", **body})


def queue_counts(aws: AwsResources, logical_id: str) -> dict[str, int]:
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    sqs = boto3.client("sqs", region_name=REGION)
    attributes = sqs.get_queue_attributes(QueueUrl=aws.queues[logical_id], AttributeNames=names)["Attributes"]
    return {name.removeprefix("ApproximateNumberOfMessages") or "Visible": int(attributes[name]) for name in names}


def sqs_clock_ahead(monkeypatch: pytest.MonkeyPatch, seconds: int) -> None:
    """moto's SQS clock, `seconds` later: its delayed messages become receivable (no sleeping)."""
    real = moto.core.utils.unix_time_millis  # the clock moto's SQS models imported by name

    def later(*args: Any) -> float:
        return float(real(*args)) + seconds * 1000

    monkeypatch.setattr(moto.sqs.models, "unix_time_millis", later)


@pytest.mark.parametrize("valid_for", [-1, 86401, "60", 1.5, True, None])
def test_a_validity_out_of_range_or_not_an_integer_is_refused_with_our_error_body(
    world: PoolWorld, aws: AwsResources, valid_for: object
) -> None:
    answer = send(world, {"validFor": valid_for})

    assert answer.status == 422, answer.body
    assert answer.json()["error"] == "validation_error"
    assert "message" in answer.json()
    assert aws.queue_messages("SendQueue") == []


def test_the_view_and_the_openapi_document_carry_the_validity(world: PoolWorld, client: Client) -> None:
    day = send(world, {"validFor": 86400})
    plain = send(world, {})

    assert day.status == plain.status == 202
    viewed = world.message(day.json()["id"])
    assert viewed["validFor"] == 86400
    created, expires = datetime.fromisoformat(viewed["createdAt"]), datetime.fromisoformat(viewed["expiresAt"])
    assert expires - created == timedelta(days=1)
    assert (world.message(plain.json()["id"])["validFor"], world.message(plain.json()["id"])["expiresAt"]) == (0, None)
    schemas = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert schemas["SendMessage"]["properties"]["validFor"]["maximum"] == 86400
    assert {"validFor", "expiresAt", "nextCheckAt"} <= set(schemas["MessageView"]["properties"])
    assert "WAITING" in schemas["MessageStatus"]["enum"]


def test_an_idempotency_key_replayed_with_another_validity_is_another_body(world: PoolWorld, aws: AwsResources) -> None:
    headers = {"Idempotency-Key": "otp-7"}

    def post(valid_for: int) -> Any:
        body = {"to": RECIPIENT, "text": "hi", "validFor": valid_for}
        return world.client.post("/api/messages", key=world.send_key, json_body=body, headers=headers)

    first, again, other = post(60), post(60), post(120)

    assert (first.status, again.status) == (202, 202) and first.json() == again.json()
    assert (other.status, other.json()["error"]) == (422, "idempotency_key_reused")
    assert len(aws.queue_messages("SendQueue")) == 1


def test_a_waiting_message_rides_a_fresh_delayed_job_and_leaves_when_a_number_is_back(
    world: PoolWorld,
    provider: FakeProvider,
    aws: AwsResources,
    run_worker: Callable[[], list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for digits in NUMBERS[:2]:
        world.set_connected(digits, False)
    message_id = send(world, {"validFor": 600}).json()["id"]

    assert run_worker() == [{"batchItemFailures": []}]  # the first job is done with, not retried

    waiting = world.message(message_id)
    assert (waiting["status"], waiting["attempts"]) == ("WAITING", 1)
    assert datetime.fromisoformat(waiting["nextCheckAt"]) < datetime.fromisoformat(waiting["expiresAt"])
    assert queue_counts(aws, "SendQueue") == {"Visible": 0, "NotVisible": 0, "Delayed": 1}
    assert sum(queue_counts(aws, "SendDLQ").values()) == 0
    [change] = [json.loads(m["Body"]) for m in aws.queue_messages("ClientWebhookQueue")]  # from the bus's rule
    assert (change["detail-type"], change["detail"]["status"]) == ("message.status.changed", "WAITING")
    assert datetime.fromisoformat(change["detail"]["expiresAt"]) == datetime.fromisoformat(waiting["expiresAt"])

    world.set_connected(NUMBERS[1], True)
    first_job = {"message_id": message_id, "tenant": "acme", "api_key_id": world.send_key_id, "to": RECIPIENT}
    bootstrap.send_queue().send(json.dumps(first_job))  # SQS delivers the first job once more
    run_worker()
    assert (world.message(message_id)["status"], provider.sent) == ("WAITING", [])  # only the wake job claims it

    sqs_clock_ahead(monkeypatch, 5)
    run_worker()

    sent = world.message(message_id)
    assert (sent["status"], sent["sourceNumber"], sent["attempts"]) == ("SENT", NUMBERS[1], 2)
    assert [s.key for s in provider.sent] == [message_id]
    assert queue_counts(aws, "SendQueue") == {"Visible": 0, "NotVisible": 0, "Delayed": 0}
    stages = [event["stage"] for event in sent["trace"]]
    assert stages.count("message.waiting") == 1 and stages[-1] == "message.sent"


@pytest.mark.stack
def test_concurrent_deliveries_of_a_wake_job_and_of_the_stale_first_job_send_the_waiting_message_once(
    served_aws: AwsResources,
) -> None:
    """SQS may deliver a job twice, at once; the first job may come back too. Eight containers."""
    key_id = pool_key()
    table = boto3.resource("dynamodb", region_name=REGION).Table(get_settings().table_name)
    now = utcnow()
    message = Message(
        tenant="acme",
        id="msg_waiting",
        api_key_id=key_id,
        to=RECIPIENT,
        text="hi",
        body_hash=body_hash(RECIPIENT, "hi", 600),
        status=MessageStatus.WAITING,
        valid_for=600,
        expires_at=now + timedelta(seconds=600),
        wake_token="lease_wake",
        wait_checks=1,
        attempts=1,
    )
    MessageRepository(bootstrap.table()).create(message)
    first = SendJob(message_id=message.id, tenant="acme", api_key_id=key_id, to=RECIPIENT)
    wake = first.model_copy(update={"wake": "lease_wake"})
    provider = FakeProvider()
    jobs = [wake] * 6 + [first] * 2
    start = threading.Barrier(len(jobs))
    outcomes: list[Any] = []

    def deliver(job: SendJob) -> None:
        service = container(provider)  # each thread is one Lambda container
        start.wait(10)
        outcomes.append(service.process(job, 1).status)

    threads = [threading.Thread(target=deliver, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert sorted(outcomes) == ["SENT"] + ["SKIPPED"] * 7
    assert [sent.key for sent in provider.sent] == [message.id]
    stored = MessageRepository(table).get("acme", message.id)
    assert (stored.status, stored.attempts) == (MessageStatus.SENT, 2)

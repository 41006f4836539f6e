"""Provider receipts move a message forward only; client webhooks are signed and retried. On moto."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from standardwebhooks import Webhook

from switchboard import bootstrap
from switchboard.bootstrap.messages import message_repository
from switchboard.catalog.domain import instance_key
from switchboard.core.clock import new_id
from switchboard.messages.domain import Message, MessageStatus, PendingRoute, SendJob, SentAs, body_hash
from switchboard.providers.content import Template
from tools.support.api import Client
from tools.support.aws import REGION, AwsResources
from tools.support.builders import provider_event, run_effects
from tools.support.fakes import FakeProvider
from tools.support.pool import NUMBERS, PoolWorld, build_world

Drain = Callable[[str, str], list[Any]]
RECIPIENT = "5511988880001"


class Receiver:
    """A client's webhook endpoint: records each request; answers `statuses` in turn, then 204."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.statuses: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 204)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.requests]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    endpoint = Receiver()
    yield endpoint
    endpoint.server.shutdown()


@pytest.fixture
def world(client: Client, make_tenant: Any, provider: FakeProvider, receiver: Receiver) -> PoolWorld:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key(default_number=NUMBERS[0], webhook_url=receiver.url)
    return world


def receipt(world: PoolWorld, provider_message_id: str, status: str) -> None:
    instance = bootstrap.catalog_repository().find_instance(instance_key("acme", world.instances[NUMBERS[0]]))
    assert instance is not None
    data = {"id": provider_message_id, "status": status, "timestamp": "2026-11-30T08:00:00Z"}
    run_effects(provider_event(instance, "receipt", data, provider_id=world.provider_id))


def sent_message(world: PoolWorld, run_worker: Callable[[], list[Any]]) -> dict[str, Any]:
    message_id = world.send(RECIPIENT)
    run_worker()
    message = world.message(message_id)
    assert message["status"] == "SENT"
    return message


def test_receipts_move_the_status_forward_only_and_once(
    world: PoolWorld, run_worker: Any, drain: Drain, receiver: Receiver
) -> None:
    message = sent_message(world, run_worker)

    receipt(world, message["providerMessageId"], "delivered")
    receipt(world, message["providerMessageId"], "delivered")  # duplicate
    receipt(world, message["providerMessageId"], "read")
    receipt(world, message["providerMessageId"], "delivered")  # late
    receipt(world, message["providerMessageId"], "failed")  # after read: ignored
    receipt(world, "wamid-unknown", "read")  # not ours

    after = world.message(message["id"])
    assert after["status"] == "READ"
    assert after["deliveredAt"] is not None and after["readAt"] is not None
    assert [e["stage"] for e in after["trace"] if e["stage"].startswith("receipt.")] == [
        "receipt.delivered",
        "receipt.read",
    ]
    drain("ClientWebhookQueue", "ClientWebhooksFunction")
    assert [event["event"] for event in receiver.events()] == ["message.sent", "message.delivered", "message.read"]


def test_a_failed_receipt_after_sent_ends_the_message_failed(world: PoolWorld, run_worker: Any) -> None:
    message = sent_message(world, run_worker)

    receipt(world, message["providerMessageId"], "failed")
    receipt(world, message["providerMessageId"], "delivered")

    after = world.message(message["id"])
    assert (after["status"], after["failureReason"]) == ("FAILED", "provider_receipt_failed")


def test_each_committed_status_is_published_once_and_a_duplicate_or_late_receipt_is_not(
    world: PoolWorld, run_worker: Any, published: list[tuple[str, dict[str, Any]]]
) -> None:
    published.clear()
    message = sent_message(world, run_worker)
    receipt(world, message["providerMessageId"], "delivered")
    receipt(world, message["providerMessageId"], "delivered")  # duplicate
    receipt(world, message["providerMessageId"], "read")
    receipt(world, message["providerMessageId"], "delivered")  # late
    receipt(world, message["providerMessageId"], "failed")  # after read: ignored

    changes = [detail for detail_type, detail in published if detail_type == "message.status.changed"]
    assert [change["status"] for change in changes] == ["SENT", "DELIVERED", "READ"]
    for change in changes:
        assert (change["tenant"], change["keyId"], change["messageId"]) == ("acme", world.send_key_id, message["id"])
    assert [change.get("sourceNumber") for change in changes] == [NUMBERS[0], NUMBERS[0], NUMBERS[0]]


def test_a_failed_receipt_is_published_as_failed(
    world: PoolWorld, run_worker: Any, published: list[tuple[str, dict[str, Any]]]
) -> None:
    message = sent_message(world, run_worker)
    published.clear()

    receipt(world, message["providerMessageId"], "failed")

    assert [(kind, detail["status"]) for kind, detail in published] == [("message.status.changed", "FAILED")]


def test_client_webhook_is_signed_with_standard_webhooks_and_carries_the_source_number(
    world: PoolWorld, run_worker: Any, drain: Drain, receiver: Receiver, client: Client
) -> None:
    secret = client.post(f"/api/api-keys/{world.send_key_id}/webhook-secret", key=world.tenant.admin).json()["secret"]
    message = sent_message(world, run_worker)

    drain("ClientWebhookQueue", "ClientWebhooksFunction")

    [(headers, body)] = receiver.requests
    verified = Webhook(secret).verify(body, headers)
    assert verified == {
        "event": "message.sent",
        "timestamp": verified["timestamp"],
        "data": {
            "messageId": message["id"],
            "sourceNumber": NUMBERS[0],
            "destinationNumber": RECIPIENT,
            "status": "SENT",
            "sentAt": verified["data"]["sentAt"],
            "failureReason": None,
            "expiresAt": None,
            "sentAs": None,
        },
    }
    assert headers["webhook-id"].startswith("whk_")
    with pytest.raises(Exception, match="signature"):
        Webhook("whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=").verify(body, headers)


def test_a_failing_client_endpoint_is_retried_with_backoff_and_the_same_webhook_id(
    world: PoolWorld, aws: AwsResources, run_worker: Any, drain: Drain, receiver: Receiver
) -> None:
    receiver.statuses = [500]
    sent_message(world, run_worker)
    sqs = boto3.client("sqs", region_name=REGION)
    url = aws.queues["ClientWebhookQueue"]
    [job] = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0)["Messages"]  # a peek

    first = drain("ClientWebhookQueue", "ClientWebhooksFunction")

    assert first[0]["batchItemFailures"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (attributes["ApproximateNumberOfMessages"], attributes["ApproximateNumberOfMessagesNotVisible"]) == (
        "0",
        "1",
    )  # kept, invisible for the backoff
    # When the backoff has elapsed SQS delivers the same job again: same webhook-id, now accepted.
    assert bootstrap.client_webhook_worker().handle(job["Body"], "receipt-handle", 2) is True
    assert [headers["webhook-id"] for headers, _ in receiver.requests] == [receiver.requests[0][0]["webhook-id"]] * 2


def test_sending_never_waits_for_or_fails_on_the_client_webhook(
    world: PoolWorld, run_worker: Any, drain: Drain, receiver: Receiver
) -> None:
    receiver.statuses = [500] * 10
    message = sent_message(world, run_worker)

    drain("ClientWebhookQueue", "ClientWebhooksFunction")

    assert world.message(message["id"])["status"] == "SENT"
    assert len(receiver.requests) == 1


# --- a send Meta accepted and then failed for the customer-service window ---------------------

HELLO = Template(name="hello_world", language="en_US")


def sent_directly(world: PoolWorld, provider_message_id: str, *, fallback: Template | None) -> str:
    """A free-form message recorded SENT through the first number, as the worker records it."""
    repository = message_repository()
    message = Message(
        tenant="acme",
        id=new_id("msg"),
        api_key_id=world.send_key_id,
        to=RECIPIENT,
        text="sua fatura",
        body_hash=body_hash(RECIPIENT, "sua fatura"),
        fallback_template=fallback,
    )
    repository.create(message)
    claimed = repository.claim(message.id, "acme", "lease-1", 60)
    assert claimed is not None
    repository.record_sent(
        claimed,
        number_id=world.numbers[NUMBERS[0]],
        source_number=NUMBERS[0],
        instance=world.instances[NUMBERS[0]],
        provider_id=world.provider_id,
        provider_message_id=provider_message_id,
        events=[],
        remember_affinity=False,
    )
    return message.id


def window_refusal(world: PoolWorld, provider_message_id: str) -> None:
    """Meta's `failed` status of an accepted send, 131047, as the ingest maps it."""
    instance = bootstrap.catalog_repository().find_instance(instance_key("acme", world.instances[NUMBERS[0]]))
    assert instance is not None
    data = {
        "id": provider_message_id,
        "status": "failed",
        "errors": [{"code": 131047, "title": "Re-engagement message"}],
        "reason": "outside_service_window",
    }
    run_effects(provider_event(instance, "receipt", data, provider_id=world.provider_id))


def test_a_window_refusal_queues_the_fallback_template_once_through_the_number_the_message_left_from(
    world: PoolWorld, aws: AwsResources, published: list[tuple[str, dict[str, Any]]]
) -> None:
    message_id = sent_directly(world, "wamid-late-1", fallback=HELLO)

    window_refusal(world, "wamid-late-1")
    first = message_repository().get("acme", message_id)
    window_refusal(world, "wamid-late-1")  # the status again, under another event id

    again = message_repository().get("acme", message_id)
    assert (again.status, again.window_refused_at) == (MessageStatus.QUEUED, first.window_refused_at)
    assert (again.provider_code, again.failure_reason) == ("131047", None)  # Meta's words, not a failure
    assert [e.stage for e in again.trace].count("receipt.failed") == 1
    jobs = [SendJob.model_validate_json(m["Body"]) for m in aws.queue_messages("SendQueue")]
    assert {job.message_id for job in jobs} == {message_id}  # a second copy finds it claimed
    assert all(job.template for job in jobs)
    left = PendingRoute(
        number_id=world.numbers[NUMBERS[0]], instance=world.instances[NUMBERS[0]], provider_id=world.provider_id
    )
    assert all(job.fallback == left for job in jobs)
    statuses = [
        d["status"] for kind, d in published if kind == "message.status.changed" and d["messageId"] == message_id
    ]
    assert "FAILED" not in statuses


def test_without_a_fallback_template_a_window_refusal_ends_the_message_failed_with_metas_code(
    world: PoolWorld, aws: AwsResources, drain: Drain, receiver: Receiver
) -> None:
    message_id = sent_directly(world, "wamid-late-2", fallback=None)

    window_refusal(world, "wamid-late-2")

    failed = world.message(message_id)
    assert (failed["status"], failed["failureReason"]) == ("FAILED", "outside_service_window")
    assert (failed["providerCode"], failed["providerMessage"]) == ("131047", "Re-engagement message")
    assert aws.queue_messages("SendQueue") == []
    drain("ClientWebhookQueue", "ClientWebhooksFunction")
    [event] = receiver.events()
    assert (event["event"], event["data"]["failureReason"]) == ("message.failed", "outside_service_window")


def test_once_sent_as_its_template_the_refused_sends_late_receipts_change_nothing(world: PoolWorld) -> None:
    repository = message_repository()
    message_id = sent_directly(world, "wamid-late-3", fallback=HELLO)
    window_refusal(world, "wamid-late-3")
    claimed = repository.claim(message_id, "acme", "lease-2", 60)
    assert claimed is not None
    repository.record_sent(
        claimed,
        number_id=world.numbers[NUMBERS[0]],
        source_number=NUMBERS[0],
        instance=world.instances[NUMBERS[0]],
        provider_id=world.provider_id,
        provider_message_id="wamid-template-3",
        events=[],
        remember_affinity=False,
        sent_as=SentAs.template(HELLO),
    )

    window_refusal(world, "wamid-late-3")  # redelivered after the template left
    receipt(world, "wamid-late-3", "delivered")
    assert world.message(message_id)["status"] == "SENT"
    receipt(world, "wamid-template-3", "delivered")

    after = world.message(message_id)
    assert (after["status"], after["type"]) == ("DELIVERED", "text")
    assert after["sentAs"] == {"type": "template", "name": "hello_world", "language": "en_US"}
    row = world.client.get(f"/api/messages?to={RECIPIENT}", key=world.tenant.admin).json()["items"][0]
    assert (row["type"], row["outcome"]) == ("text", "sent as template hello_world (en_US)")
    assert row["sentAs"] == after["sentAs"]


def test_an_instances_test_message_tells_no_client_webhook_though_the_admin_key_that_sent_it_has_one(
    world: PoolWorld, run_worker: Any, drain: Drain, receiver: Receiver
) -> None:
    body = {"name": "ops admin", "scopes": ["admin"], "webhookUrl": receiver.url}
    admin = world.client.post("/api/api-keys", key=world.tenant.admin, json_body=body).json()["key"]
    instance = world.instances[NUMBERS[0]]
    test = {"to": RECIPIENT, "text": "teste"}
    queued = world.client.post(f"/api/instances/{instance}/test-message", key=admin, json_body=test)
    assert queued.status == 202, queued.body
    run_worker()
    message = world.message(queued.json()["id"])
    assert (message["status"], message["pinnedInstance"]) == ("SENT", instance)

    receipt(world, message["providerMessageId"], "delivered")

    assert world.message(message["id"])["status"] == "DELIVERED"
    drain("ClientWebhookQueue", "ClientWebhooksFunction")
    assert receiver.events() == []

"""Webhook ingest: AWS requests per event, latency in-process, and exactly-once under concurrent redelivery.

1. In-process moto, the real composition root (`bootstrap`) and effects: N signed `message` events
   (first deliveries), the same N again (duplicates) and N `connection` events, counting every
   DynamoDB, SQS and SSM request with a botocore `before-call` hook, beside the targets (a first
   delivery at most 3 requests, a duplicate at most 2). The container is warm: its view of the
   provider was read by an earlier delivery.
2. Contention: 10 threads (own session and service each, like 10 containers) deliver the same
   event at once against the serialised local DynamoDB endpoint; 20 rounds; each must apply the
   effect exactly once.

3. Replies in parts: in-process moto, the real outbox (`bootstrap`) before a provider that
   records sends (no network): the AWS requests of one reply that fits a message and of one of
   9,000 characters through a Cloud API instance (three parts), and the time to cut a reply of
   Chatwoot's longest content (150,000 characters) at the Cloud API's 4,096.

It prints figures, returns them for docs/measurements.md and asserts nothing.
`python -m tools.bench routing`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import os
import secrets
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import boto3
from moto import mock_aws

from devstack.aws_endpoint import AwsEndpoint
from switchboard import bootstrap
from switchboard.catalog.domain import Instance
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.catalog.events import ProviderEvent
from switchboard.core.errors import SwitchboardError
from switchboard.core.observability import logger
from switchboard.core.secrets import SecretStore
from switchboard.providers.base import ProviderTarget, SentMessage, WebhookRequest
from switchboard.routing.outbox import OutboxService, Reply
from switchboard.routing.outbox_dynamo import OutboxRepository
from switchboard.routing.parts import split_text
from switchboard.webhooks.dynamo import EventStore
from switchboard.webhooks.service import IngestService
from tools.bench import tenant
from tools.bench.measurements import Figures

REGION = "us-east-1"
EVENTS = 100
THREADS = 10
ROUNDS = 20
SECRET = secrets.token_urlsafe(24)  # a fresh one per run
PREFIX = "/switchboard/bench"
FORWARD_QUEUE = {"FORWARD_QUEUE_URL": "ForwardQueue"}
TARGETS = {"message, first delivery": 3, "message, duplicate": 2}  # AWS requests per event, at most


def _catalog() -> tuple[str, str]:
    """A tenant with one provider and one instance; returns (provider id, provider instance id)."""
    service = tenant.made()
    number = service.create_number(tenant.ADMIN, "5511999990001", "bench", None)
    provider = tenant.one_instance(
        number,
        provider="p",
        kind="wuzapi",
        base_url="http://127.0.0.1:9",
        webhook_secret=SECRET,
        instance="bench-1",
        provider_instance_id="inst-1",
    )
    return provider.id, "inst-1"


def _signed(name: str, data: dict[str, Any], seq: int, event_id: str | None = None) -> WebhookRequest:
    body = json.dumps(
        {"event": name, "eventId": event_id or str(uuid.uuid4()), "instanceId": "inst-1", "seq": seq, "data": data},
        separators=(",", ":"),
    ).encode()
    stamp = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return WebhookRequest(headers={"x-webhook-timestamp": stamp, "x-webhook-signature": f"v1={digest}"}, body=body)


def in_process() -> list[Figures]:
    rows: list[Figures] = []
    with mock_aws():
        tenant.environment(secrets_prefix=PREFIX, queues=FORWARD_QUEUE)
        provider_id, _ = _catalog()
        ingest = bootstrap.ingest_service()
        requests: Counter[str] = Counter()
        clients = [bootstrap.table().meta.client, bootstrap.current().client("sqs"), bootstrap.current().client("ssm")]
        for aws_client in clients:
            aws_client.meta.events.register(
                "before-call", lambda model, **_: requests.update([f"{model.service_model.service_name}.{model.name}"])
            )
        messages = [
            _signed("message", {"id": f"m{n}", "from": "5511988887777", "text": "hi"}, n) for n in range(EVENTS)
        ]
        with contextlib.redirect_stdout(io.StringIO()):
            ingest.receive(provider_id, messages[0])  # warm: the provider's view read, clients built
        for label, batch in (
            ("message, first delivery", messages[1:]),
            ("message, duplicate", messages[1:]),
            ("connection", [_signed("connection", {"connected": n % 2 == 0}, EVENTS + n) for n in range(EVENTS)]),
        ):
            requests.clear()
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):  # the effects' metrics (EMF lines)
                outcomes = Counter(ingest.receive(provider_id, event).outcome for event in batch)
            seconds = time.perf_counter() - started
            per_event = {name: round(count / len(batch), 2) for name, count in sorted(requests.items())}
            target = f" (target <= {TARGETS[label]})" if label in TARGETS else ""
            print(f"  {label}: {len(batch)} events, {dict(outcomes)}, {1000 * seconds / len(batch):.1f} ms/event")
            print(f"    AWS requests per event: {sum(requests.values()) / len(batch):.2f}{target} {per_event}")
            rows.append(
                {
                    "event": label,
                    "events": len(batch),
                    "requests": round(sum(requests.values()) / len(batch), 2),
                    "target": TARGETS.get(label),
                    "by_operation": per_event,
                }
            )
    return rows


def contention() -> Figures:
    endpoint = AwsEndpoint(port=0).start()
    try:
        tenant.environment(secrets_prefix=PREFIX, queues=FORWARD_QUEUE, endpoint=endpoint.url)
        provider_id, _ = _catalog()
        sessions = [boto3.session.Session() for _ in range(THREADS)]
        services = []
        effect_table = sessions[0].resource("dynamodb", region_name=REGION).Table(os.environ["TABLE_NAME"])
        for session in sessions:
            table = session.resource("dynamodb", region_name=REGION).Table(os.environ["TABLE_NAME"])

            def effect(event: ProviderEvent, table: Any = table) -> None:
                table.update_item(
                    Key={"pk": "BENCH#EFFECT", "sk": event.event_id},
                    UpdateExpression="ADD applied :one",
                    ExpressionAttributeValues={":one": 1},
                )

            services.append(
                IngestService(
                    CatalogRepository(table),
                    SecretStore(session.client("ssm", region_name=REGION), PREFIX, 60),
                    EventStore(table),
                    {"message": [effect]},
                )
            )
        exact = 0
        outcomes: Counter[str] = Counter()
        started = time.perf_counter()
        for seq in range(ROUNDS):
            event_id = str(uuid.uuid4())
            delivery = _signed("message", {"id": "m", "from": "5511988887777", "text": "hi"}, seq, event_id)
            outcomes.update(_round(services, provider_id, delivery))
            item = effect_table.get_item(Key={"pk": "BENCH#EFFECT", "sk": event_id}, ConsistentRead=True).get("Item")
            exact += bool(item) and int(item["applied"]) == 1
        seconds = time.perf_counter() - started
    finally:
        endpoint.stop()
    print(f"contention: the same event from {THREADS} threads at once, {ROUNDS} rounds (serialised local endpoint)")
    print(f"  rounds with the effect applied exactly once: {exact}/{ROUNDS}; answers: {dict(outcomes)}")
    print(f"  {THREADS * ROUNDS} deliveries in {seconds:.2f} s")
    return {"threads": THREADS, "rounds": ROUNDS, "exact": exact}


def _round(services: list[IngestService], provider_id: str, delivery: WebhookRequest) -> list[str]:
    barrier = threading.Barrier(len(services))
    answers: list[str] = []
    lock = threading.Lock()

    def deliver(service: IngestService) -> None:
        barrier.wait()
        answer: str
        try:
            answer = service.receive(provider_id, delivery).outcome
        except SwitchboardError as error:
            answer = error.code
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=deliver, args=(service,)) for service in services]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


class _Recorder:
    """A provider client that accepts every send at once (the outbox's own cost is what is measured)."""

    def __init__(self) -> None:
        self.sent = 0

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        self.sent += 1
        return SentMessage(provider_message_id=f"wamid.{self.sent}")


class _CloudTargets:
    def __init__(self, client: _Recorder) -> None:
        self._client = client

    def target_for(self, instance: Instance) -> tuple[Any, ProviderTarget]:
        target = ProviderTarget(kind="meta", base_url="http://127.0.0.1:9", provider_instance_id="1065")
        return self._client, target


def replies() -> Figures:
    paragraph = ("Obrigado pelo contato. Seguem os detalhes do seu pedido, item a item. " * 17).strip()
    long_reply = "\n\n".join(f"{n + 1}. {paragraph}" for n in range(8))
    with mock_aws():
        tenant.environment(secrets_prefix=PREFIX, queues=FORWARD_QUEUE)
        _catalog()
        key = "bench:bench-1"
        bootstrap.connection_state_repository().apply_event(key, "CONNECTED", 1, datetime.now(UTC))
        recorder = _Recorder()
        outbox = OutboxService(
            OutboxRepository(bootstrap.table()),
            bootstrap.catalog_repository(),
            _CloudTargets(recorder),
            usage=bootstrap.usage_recorder(),
            downstreams=bootstrap.downstream_resolver(),
            downstream_client=bootstrap.downstream_client(),  # never called: no reply fails
            audit=bootstrap.audit_log(),
        )
        instance = bootstrap.catalog_repository().find_instance(key)
        assert instance is not None
        requests: Counter[str] = Counter()
        bootstrap.table().meta.client.meta.events.register(
            "before-call", lambda model, **_: requests.update([model.name])
        )
        print(f"replies through a Cloud API instance ({EVENTS} each, in-process moto, the real outbox)")
        rows: list[Figures] = []
        for label, text in (("one message", "Olá, como posso ajudar?"), ("9,000+ characters", long_reply)):
            requests.clear()
            sent_before = recorder.sent
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                statuses = Counter(
                    outbox.submit(instance, Reply(message_id=f"{label}-{n}", phone="5511988887777", text=text)).status
                    for n in range(EVENTS)
                )
            seconds = time.perf_counter() - started
            parts = (recorder.sent - sent_before) / EVENTS
            per_reply = {name: round(count / EVENTS, 2) for name, count in sorted(requests.items())}
            print(f"  {label} ({len(text)} characters): {parts:.0f} part(s) per reply, {dict(statuses)}")
            print(f"    DynamoDB requests per reply: {sum(requests.values()) / EVENTS:.2f} {per_reply}")
            print(f"    {1000 * seconds / EVENTS:.1f} ms per reply")
            rows.append(
                {
                    "reply": label,
                    "characters": len(text),
                    "parts": round(parts),
                    "requests": round(sum(requests.values()) / EVENTS, 2),
                    "by_operation": per_reply,
                }
            )
    longest = ("Uma frase de exemplo para o corte. " * 5000)[:150_000]
    started = time.perf_counter()
    for _ in range(20):
        cut = split_text(longest, 4096)
    milliseconds = 1000 * (time.perf_counter() - started) / 20
    print(f"  cutting 150,000 characters at 4,096: {len(cut)} parts in {milliseconds:.1f} ms")
    return {
        "replies": rows,
        "cut": {"characters": len(longest), "limit": 4096, "parts": len(cut), "ms": round(milliseconds, 1)},
    }


def measure() -> Figures:
    logger.setLevel("WARNING")
    print(f"in-process moto, the real handlers ({EVENTS} events each)")
    return {"ingest": in_process(), "contention": contention(), **replies()}


if __name__ == "__main__":
    measure()

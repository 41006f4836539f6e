"""Cost per million, from request counts measured on the real handlers.

In-process moto, the template's functions run as Lambda runs them (`devstack.lambdas`), the HTTP
API and its authorizer as API Gateway runs them (`devstack.apigw`), queues drained as Lambda's
event source mapping does (one ReceiveMessage of up to the function's BatchSize, one invocation,
one DeleteMessageBatch). Every AWS request is metered in billing units (`tools.bench.meter`).
Three workloads, each run warm (one round first, not counted):

- API sends in pool mode with delivery receipts: `POST /api/messages`; the send worker; a
  provider `receipt` (delivered) through `POST /webhooks/{id}`; the client webhooks
  (`message.sent`, `message.delivered`), put on their queue by the bus's rule (its SendMessage
  counted as the line `EventBridge rule`). Once to new recipients (affinity miss), once more to
  the same ones (affinity hit). The provider is a recording fake; its send counts as one
  provider request;
- API media sends in pool mode, the same way: a 100 KB photo with a caption, uploaded by
  the client with `POST /api/media` and its presigned PUT (signed in the function, no request; the
  PUT is the client's request to S3, its declaration signed in), sent with `POST /api/messages` (the
  first use checks the file: one GET of its bytes and declaration), read again by the send worker
  and uploaded to the provider (its bytes leave AWS: data transfer out, base64 as wuzapi and
  Evolution take them);
- incoming messages forwarded to Chatwoot: a provider `message` event through the webhook route,
  then the forwarder to a Chatwoot-style fake (4 senders, 5 messages each: a contact's first
  message creates its contact and conversation, the next ones only post); the same with media:
  a photo sent inline in base64 (put in the media bucket at the ingest, read back and posted as a
  multipart attachment by the forwarder), and a voice note given by its URL (looked for in the
  bucket, fetched from the provider, put, read back and posted);
- call reservations: `POST /api/connections/{instance}/calls` by an agent, against the provider
  simulator, 8 per line (the line's limit).

It prints per workload the requests per unit by function, then the cost per million by line,
with Lambda durations = each invocation's own compute time measured here + the stated round
trips of `meter.LATENCY_MS`, and returns those figures for docs/measurements.md.
`python -m tools.bench workloads`.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import math
import os
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import httpx
import pytest
from moto import mock_aws

from devstack.apigw import HttpApi
from devstack.simulator import Simulator, SimulatorControl, files
from switchboard import bootstrap
from switchboard.core.identity import Scope
from switchboard.core.observability import logger
from switchboard.media.service import S3Media
from switchboard.providers.base import OutgoingFile, ProviderTarget, Quote, SentMessage
from switchboard.providers.content import Content
from switchboard.providers.wuzapi import WuzapiClient
from switchboard.routing.chatwoot import ChatwootClient
from tools.bench import cost
from tools.bench.measurements import Figures
from tools.bench.meter import Meter, Tally, usage_of
from tools.bench.proxy import SEND_PATH
from tools.support.api import Client, new_platform_key, new_tenant
from tools.support.aws import REGION, AwsResources, create_template_resources, fake_aws_environment
from tools.support.builders import admin
from tools.support.connections import SIM_ADMIN_TOKEN, register
from tools.support.downstream import FakeDownstream
from tools.support.fakes import FakeProvider
from tools.support.pool import NUMBERS, build_world
from tools.support.provider_webhooks import envelope, message_data, signed_headers
from tools.support.sqs import received_record

MESSAGES = 20
SENDERS, PER_SENDER = 4, 5
# A WhatsApp photo as phones send it (compressed, about 100 KB) and a 10 s voice note; the
# provider's base URL, which a voice note's URL must be on.
PHOTO_BYTES = 100 * 1024
VOICE_FRAMES = 500
PROVIDER_URL = "http://127.0.0.1:3100"
LINES, PER_LINE = 3, 8
POOL_WEBHOOK_SECRET = "whsec-very-secret-value-1"  # noqa: S105 - build_world's provider secret

# What the whole pool send path (authorizer, send API, send worker: every AWS request) was designed
# to cost per message, to print beside the measured figures; each request is justified in docs/costs.md.
TARGETS = {"new_recipient": 9, "known_recipient": 8}


@dataclass
class Measured:
    name: str
    units: int
    tallies: dict[str, Tally]
    api_requests: int

    def usage(self, memory: dict[str, int]) -> cost.Usage:
        return usage_of(self.tallies, self.units, memory, api_requests=self.api_requests)

    def requests(self, label: str, service: str | None = "dynamodb") -> float:
        """Requests per unit made by `label`, to `service` (None: to every AWS service)."""
        tally = self.tallies.get(label)
        if tally is None:
            return 0.0
        prefix = "" if service is None else f"{service}."
        return sum(count for name, count in tally.requests.items() if name.startswith(prefix)) / self.units

    def path(self) -> float:
        """Every AWS request of the send path per message: authorizer, send API, send worker."""
        return sum(self.requests(function, None) for function in SEND_PATH)


class Receiver:
    """A client's webhook endpoint on loopback: answers 204 to everything."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class CountingProvider(FakeProvider):
    """The recording fake provider; each send counts as one provider request on the meter."""

    def __init__(self, meter: Meter) -> None:
        super().__init__()
        self._meter = meter
        self.delivered: list[tuple[str, str]] = []  # (provider instance, provider message id) of each content sent

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        self._meter.outbound("provider")
        return super().send_text(target, phone, body, idempotency_key)

    def send_content(
        self,
        target: ProviderTarget,
        phone: str,
        content: Content,
        idempotency_key: str,
        *,
        quoted: Quote | None = None,
        file: OutgoingFile | None = None,
        uploaded: Any = None,
    ) -> SentMessage:
        """One provider request carrying the file as base64 (wuzapi's data URL, Evolution's `media`)."""
        self._meter.outbound("provider")
        if file is not None:
            self._meter.transfer_out(4 * math.ceil(len(file.data) / 3))
        sent = super().send_content(
            target, phone, content, idempotency_key, quoted=quoted, file=file, uploaded=uploaded
        )
        self.delivered.append((target.provider_instance_id, sent.provider_message_id))
        return sent


class Stage:
    """The template's resources on moto, its functions, the HTTP API, and a meter over them."""

    def __init__(self, aws: AwsResources, monkeypatch: pytest.MonkeyPatch, overrides: ExitStack) -> None:
        self.aws = aws
        self.monkeypatch = monkeypatch
        self._overrides = overrides
        self.api = HttpApi()
        self.client = Client(self.api)
        self.meter = Meter(boto3.client("dynamodb", region_name=REGION), self.api.functions)
        self.sqs = self.meter.unmetered(boto3.client("sqs", region_name=REGION))
        self.api_requests = 0
        if aws.rules is not None:  # the bus's sends to a queue are EventBridge's, billed to the queue
            self.meter.unmetered(aws.rules.sqs)
            aws.rules.sent.append(self._rule_sent)
        self.platform_key = new_platform_key()
        self.tenant = new_tenant(self.client, self.platform_key, "bench")

    def _rule_sent(self, queue: str, body: str) -> None:
        with self.meter.labelled("EventBridge rule"):
            self.meter.record("sqs", "SendMessage", {"QueueUrl": self.aws.queues[queue], "MessageBody": body})

    def override(self, **replacements: object) -> None:
        """The process's components of those names replaced until the stage ends (a new container)."""
        self._overrides.enter_context(bootstrap.overridden(**replacements))

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request through the HTTP API (its size is far below the 512 KB a request is billed by)."""
        self.api_requests += 1
        with self.meter.labelled("driver"):
            return self.client.request(method, path, **kwargs)

    def drain(self, queue: str, function: str) -> None:
        """What the event source mapping does: receive a batch, invoke, delete what succeeded.

        Its receives and deletes are counted for each batch; the empty receive that ends the
        drain is not (Lambda's pollers long-poll by time, not per message)."""
        (event,) = self.api.functions.definition(function)["Events"].values()  # one SQS event per worker
        batch_size = int(event["Properties"]["BatchSize"])
        url = self.aws.queues[queue]
        arn = f"arn:aws:sqs:{REGION}:000000000000:{queue}"
        while True:
            batch = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=batch_size).get("Messages", [])
            if not batch:
                return
            with self.meter.labelled("event source mapping"):
                self.meter.record("sqs", "ReceiveMessage", {"QueueUrl": url})
            records = [received_record(m, arn, attributes={"ApproximateReceiveCount": "1"}) for m in batch]
            answer = self.api.functions.invoke(function, {"Records": records}) or {}
            kept = {failure["itemIdentifier"] for failure in answer.get("batchItemFailures", [])}
            done = [m for m in batch if m["MessageId"] not in kept]
            if done:
                self.sqs.delete_message_batch(
                    QueueUrl=url,
                    Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
                )
                with self.meter.labelled("event source mapping"):
                    self.meter.record("sqs", "DeleteMessageBatch", {"QueueUrl": url})
            if kept:
                raise RuntimeError(f"{function} failed {len(kept)} records")

    def aws_bucket(self) -> str:
        """The media bucket the template's resources made."""
        return os.environ["MEDIA_BUCKET"]

    def measure(self, name: str, units: int, work: Callable[[], None]) -> Measured:
        self.meter.clear()
        self.api_requests = 0
        work()
        tallies = {label: tally for label, tally in self.meter.tallies.items() if label != "driver"}
        return Measured(name, units, tallies, self.api_requests)


@contextmanager
def stage() -> Iterator[Stage]:
    with pytest.MonkeyPatch.context() as monkeypatch, mock_aws(), ExitStack() as overrides:
        fake_aws_environment(monkeypatch)
        aws = create_template_resources(monkeypatch)
        bootstrap.reset()
        try:
            yield Stage(aws, monkeypatch, overrides)
        finally:
            bootstrap.reset()


# --- the workloads ---------------------------------------------------------------------------


def sends(run: Stage) -> list[Measured]:
    provider = CountingProvider(run.meter)
    run.override(send_provider_client=lambda kind: provider)
    receiver = Receiver()
    try:
        world = build_world(run.client, run.tenant, *NUMBERS)
        world.create_send_key(webhook_url=receiver.url)
        world.use_pool(*NUMBERS)
        recipients = [f"55219{index:08d}" for index in range(MESSAGES)]

        def one_round(targets: list[str]) -> None:
            already = len(provider.sent)
            for to in targets:
                answer = run.request("POST", "/api/messages", key=world.send_key, json_body={"to": to, "text": "hi"})
                assert answer.status == 202, answer.body
            run.drain("SendQueue", "SendWorkerFunction")
            for index, sent in enumerate(provider.sent[already:], start=already + 1):
                data = {"id": f"wamid-{index}", "status": "delivered", "timestamp": "2026-11-30T08:00:00Z"}
                body = envelope("receipt", sent.instance, data)
                headers = signed_headers(body, POOL_WEBHOOK_SECRET)
                answer = run.request("POST", f"/webhooks/{world.provider_id}", body=body, headers=headers)
                assert answer.status == 200, answer.body
            run.drain("ClientWebhookQueue", "ClientWebhooksFunction")

        with run.meter.on():
            one_round(["5531900000000"])  # warm: every function loaded, the key's config cached
            miss = run.measure("API send, pool, new recipient", MESSAGES, lambda: one_round(recipients))
            hit = run.measure("API send, pool, known recipient", MESSAGES, lambda: one_round(recipients))
        return [miss, hit]
    finally:
        receiver.stop()


def media_sends(run: Stage) -> Measured:
    """A photo per message to new recipients, the text sends' path with the file's added."""
    provider = CountingProvider(run.meter)
    run.override(send_provider_client=lambda kind: provider)
    receiver = Receiver()
    bucket = os.environ["MEDIA_BUCKET"]
    client_s3 = boto3.client("s3", region_name=REGION)  # the client's own PUT, metered as S3's
    photo = files.sized(files.png(), PHOTO_BYTES)
    try:
        world = build_world(run.client, run.tenant, *NUMBERS)
        world.create_send_key(webhook_url=receiver.url)
        world.use_pool(*NUMBERS)
        recipients = [f"55229{index:08d}" for index in range(MESSAGES)]

        def one_round(targets: list[str]) -> None:
            already = len(provider.delivered)
            for to in targets:
                body = {"mimeType": "image/png", "size": len(photo)}
                ticket = run.request("POST", "/api/media", key=world.send_key, json_body=body)
                assert ticket.status == 201, ticket.body
                media_id = ticket.json()["mediaId"]
                with run.meter.labelled("client upload"):  # what the presigned PUT stores
                    key = f"{run.tenant.owner_tag}/outgoing/{media_id}"
                    client_s3.put_object(Bucket=bucket, Key=key, Body=photo, ContentType="image/png")
                media = {"mediaId": media_id, "type": "image", "caption": "o produto"}
                answer = run.request("POST", "/api/messages", key=world.send_key, json_body={"to": to, "media": media})
                assert answer.status == 202, answer.body
            run.drain("SendQueue", "SendWorkerFunction")
            for instance, provider_message_id in provider.delivered[already:]:
                data = {"id": provider_message_id, "status": "delivered", "timestamp": "2026-11-30T08:00:00Z"}
                receipt = envelope("receipt", instance, data)
                headers = signed_headers(receipt, POOL_WEBHOOK_SECRET)
                answer = run.request("POST", f"/webhooks/{world.provider_id}", body=receipt, headers=headers)
                assert answer.status == 200, answer.body
            run.drain("ClientWebhookQueue", "ClientWebhooksFunction")

        with run.meter.on():
            one_round(["5531900000001"])
            return run.measure(
                f"API media send ({PHOTO_BYTES // 1024} KB photo), pool, new recipient",
                MESSAGES,
                lambda: one_round(recipients),
            )
    finally:
        receiver.stop()


def incoming(run: Stage) -> list[Measured]:
    downstream = FakeDownstream()
    chatwoot = ChatwootClient(local_mode=True, transport=downstream.transport())
    run.override(downstream_client=chatwoot)
    voice = files.ogg_opus(VOICE_FRAMES)
    provider = WuzapiClient(
        local_mode=True, transport=httpx.MockTransport(lambda _: httpx.Response(200, content=voice))
    )
    target = ProviderTarget(kind="wuzapi", base_url=PROVIDER_URL, provider_instance_id="bench")
    bucket = run.aws_bucket()
    run.override(message_media=S3Media(boto3.client("s3", region_name=REGION), bucket, lambda _: (provider, target)))
    world = build_world(run.client, run.tenant, "5511977770001")
    mapping = {
        "downstreamBaseUrl": "http://127.0.0.1:9101",
        "downstreamApiToken": "cw-token-bench-very-secret-1",
        "downstreamAccountId": 7,
        "downstreamInboxId": 12,
    }
    assert run.client.put(f"/api/tenants/{run.tenant.owner_tag}", key=run.tenant.admin, json_body=mapping).status == 200
    instance = world.instances["5511977770001"]

    photo = files.sized(files.png(), PHOTO_BYTES)

    def media_of(kind: str) -> dict[str, Any]:
        if kind == "photo":
            media = {"mimeType": "image/png", "base64": base64.b64encode(photo).decode()}
            return {"type": "image", "text": "segue a foto", "media": media}
        url = f"{PROVIDER_URL}/files/{uuid.uuid4().hex}.ogg"
        sha256 = hashlib.sha256(voice).hexdigest()
        return {"type": "voice", "media": {"mimeType": "audio/ogg", "size": len(voice), "sha256": sha256, "url": url}}

    def deliver(senders: list[str], kind: str = "text") -> None:
        for sender in senders:
            data = message_data("olá", sender)
            if kind != "text":
                data = {key: value for key, value in data.items() if key != "text"} | media_of(kind)
            body = envelope("message", instance, data)
            headers = signed_headers(body, POOL_WEBHOOK_SECRET)
            answer = run.request("POST", f"/webhooks/{world.provider_id}", body=body, headers=headers)
            assert answer.status == 200, answer.body
        run.drain("ForwardQueue", "ForwarderFunction")

    senders = [f"55119888{index:05d}" for index in range(SENDERS)] * PER_SENDER
    measured = []
    with run.meter.on():
        for kind in ("text", "photo", "voice"):  # warm: every path loaded once, not counted
            deliver(["5511966660000"], kind)
        for kind, name in (
            ("text", "incoming to Chatwoot"),
            ("photo", f"incoming photo, base64 ({PHOTO_BYTES // 1024} KB)"),
            ("voice", f"incoming voice note by URL ({len(voice) // 1024} KB)"),
        ):
            measured.append(run.measure(name, len(senders), partial(deliver, senders, kind)))
    assert all(
        len(message.get("attachments", [])) == 1 for message in _posted(downstream) if message["content"] != "olá"
    )
    return measured


def _posted(downstream: FakeDownstream) -> list[dict[str, Any]]:
    return [message for messages in downstream.posted.values() for message in messages]


def reservations(run: Stage) -> Measured:
    simulator = Simulator(admin_token=SIM_ADMIN_TOKEN, fault_delay_seconds=1.0)
    simulator.start()
    control = SimulatorControl(simulator.base_url)
    try:
        lines = [register(simulator, control, tenant="bench", limit=PER_LINE) for _ in range(LINES + 1)]
        created = bootstrap.catalog_service().create_api_key(
            admin("bench"), tenant="bench", name="ana", environment="LIVE", scopes=[Scope.AGENT], attendant_id="ana"
        )

        def dial(names: list[str]) -> None:
            for name in names:
                for index in range(PER_LINE if name != lines[0].name else 1):
                    answer = run.request(
                        "POST",
                        f"/api/connections/{name}/calls",
                        key=created.plaintext,
                        json_body={"to": f"55119777{index:05d}"},
                        headers={"Idempotency-Key": f"dial-{uuid.uuid4().hex}"},
                    )
                    assert answer.status == 201, answer.body

        with run.meter.on(), _provider_calls(run.meter, simulator.base_url):
            dial([lines[0].name])
            measured = run.measure(
                "call reservation", LINES * PER_LINE, lambda: dial([line.name for line in lines[1:]])
            )
        return measured
    finally:
        control.close()
        simulator.stop()


@contextmanager
def _provider_calls(meter: Meter, base_url: str) -> Iterator[None]:
    """Requests to the provider simulator count as provider requests, not as generic HTTP."""
    metered_send = httpx.Client.send

    def send(client: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        answer = metered_send(client, request, **kwargs)
        if str(request.url).startswith(base_url):
            meter.outbound("provider", replace_http=True)
        return answer

    httpx.Client.send = send  # type: ignore[method-assign,assignment]  # forwards the real method's keywords as it got them
    try:
        yield
    finally:
        httpx.Client.send = metered_send  # type: ignore[method-assign]  # the real method put back


# --- printing --------------------------------------------------------------------------------


def _by_function(measured: Measured) -> str:
    rows = []
    for label, tally in sorted(measured.tallies.items()):
        requests = Counter({name: count / measured.units for name, count in tally.requests.items()})
        calls = {name: round(count, 2) for name, count in sorted(requests.items())}
        http = {name: round(count / measured.units, 2) for name, count in tally.http.items() if count}
        invocations = len(tally.invocations) / measured.units
        billed = sum(i.billed_ms for i in tally.invocations) / max(1, len(tally.invocations))
        line = f"    {label}: {invocations:.2f} invocations"
        if tally.invocations:
            line += f" x {billed:.0f} ms"
        rows.append(f"{line}; {calls}" + (f"; outbound {http}" if http else ""))
    return "\n".join(rows)


def report(measured: list[Measured]) -> list[Figures]:
    memory = cost.function_memory()
    rows: list[Figures] = []
    for each in measured:
        usage = each.usage(memory)
        lines = cost.cost_per_million(usage)
        print(f"  {each.name} ({each.units} measured, per unit):")
        print(_by_function(each))
        print(
            f"    billing units: {usage.write_units:.2f} WRU, {usage.read_units:.2f} RRU, "
            f"{usage.sqs_requests:.2f} SQS, {usage.sqs_fifo_requests:.2f} SQS FIFO, "
            f"{usage.s3_write_requests:.2f} S3 PUT/LIST, {usage.s3_read_requests:.2f} S3 GET/HEAD, "
            f"{usage.s3_stored_bytes / 1024:.0f} KB stored, {usage.api_requests:.2f} API, "
            f"{usage.eventbridge_events:.2f} events, "
            f"{usage.ssm_interactions:.3f} SSM, {usage.log_bytes:.0f} log bytes, {usage.invocations:.2f} invocations"
        )
        detail = ", ".join(f"{line} {usd:.2f}" for line, usd in lines.items())
        print(f"    USD per million: {sum(lines.values()):.2f} ({detail})")
        ssm = cost.ssm_per_million(usage)
        if ssm:
            print(f"    (Parameter Store at higher throughput would add {ssm:.2f})")
        rows.append(
            {
                "workload": each.name,
                "units": each.units,
                "write_units": round(usage.write_units, 2),
                "read_units": round(usage.read_units, 2),
                "invocations": round(usage.invocations, 2),
                "ssm_interactions": round(usage.ssm_interactions, 3),
                "s3": {
                    "writes": round(usage.s3_write_requests, 2),
                    "reads": round(usage.s3_read_requests, 2),
                    "stored_kb": round(usage.s3_stored_bytes / 1024),
                },
                "usd_by_line": {line: round(usd, 2) for line, usd in lines.items()},
                "usd": round(sum(lines.values()), 2),
                "ssm_usd": round(ssm, 2),
            }
        )
    return rows


def report_sends(miss: Measured, hit: Measured) -> Figures:
    """The send path against its targets, and what the claim's in-flight mark costs."""
    print(
        f"  send path: {miss.path():.2f} AWS requests per message to a new recipient "
        f"(target <= {TARGETS['new_recipient']}), {hit.path():.2f} to a known one "
        f"(target <= {TARGETS['known_recipient']})"
    )
    for label, each in (("new", miss), ("known", hit)):
        print(f"    {label}: " + ", ".join(f"{function} {each.requests(function, None):.2f}" for function in SEND_PATH))
    worker = hit.tallies["SendWorkerFunction"]
    for label, each in (("miss", miss), ("hit", hit)):
        writes = Counter(
            {name: count / each.units for name, count in each.tallies["SendWorkerFunction"].write_units.items()}
        )
        print(f"    worker write units per message, {label}: " + ", ".join(f"{n} {u:.1f}" for n, u in writes.items()))
    api_writes = hit.tallies["MessagesFunction"].writes
    print(
        "    send API writes per message: "
        + ", ".join(f"{name} {count / hit.units:.2f}" for name, count in sorted(api_writes.items()))
        + " (request-rate buckets are taken in batches: their share falls with the rate, see quotas)"
    )
    claim = worker.write_units["UpdateItem MESSAGE"] / max(1, worker.writes["UpdateItem MESSAGE"])
    print(
        f"  the claim, with its first route in flight: 1 UpdateItem of the message item, {claim:.1f} WRU "
        "(the mark that lets a redelivery after a crash know the provider may have sent costs no request)"
    )
    return {
        "messages": hit.units,
        "new_recipient": round(miss.path(), 2),
        "known_recipient": round(hit.path(), 2),
        "by_function": {
            label: {function: round(each.requests(function, None), 2) for function in SEND_PATH}
            for label, each in (("new_recipient", miss), ("known_recipient", hit))
        },
        "targets": TARGETS,
        "claim_write_units": round(claim, 1),
    }


def measure() -> Figures:
    os.environ.pop("AWS_ENDPOINT_URL", None)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the provider simulator's request lines
    logger.setLevel("WARNING")  # the setup's lines; the meter counts the workloads' at INFO
    with stage() as run:
        miss, hit = sends(run)
    with stage() as run:
        media = media_sends(run)
    with stage() as run:
        forwarded, photo, voice = incoming(run)
    with stage() as run:
        reserved = reservations(run)
    print(f"us-east-1 list prices read {cost.READ_DATE} (tools/bench/cost.py; sources in docs/costs.md)")
    return {
        "prices_read": cost.READ_DATE,
        "workloads": report([miss, hit, media, forwarded, photo, voice, reserved]),
        "sends": report_sends(miss, hit),
    }


if __name__ == "__main__":
    measure()

"""Template sends: requests per template send, and the template cache's hit rate.

1. Requests per send: in-process moto, the real composition root (`bootstrap`): a tenant with a
   Cloud API number of one WhatsApp Business Account, its Meta instance and a send key; the Graph
   API and the Cloud API answered by a recording transport (no network). N template sends through
   the send API's service (the template checked against the cache, the message stored, its job
   queued), then each job sent by the real send worker. Every AWS request counted per send (a
   botocore hook on every client), the Graph API's template reads and Meta's sends apart; the
   first send of the run reads the Graph API (a cold cache), the others the cache.
2. The cache's hit rate: the same service with its clock moved on by each send's arrival, sends
   at a steady rate over simulated hours with the cache's 5 minutes of freshness: the share of
   checks the cache answered (a miss reads the Graph API once). The cache is in the table, so every
   container of the send API shares it: the rate does not depend on how many there are.

It prints figures, returns them for docs/measurements.md and asserts nothing.
`python -m tools.bench templates`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import httpx
from botocore.client import BaseClient
from moto import mock_aws

from switchboard import bootstrap
from switchboard.bootstrap.messages import send_worker
from switchboard.bootstrap.templates import template_service
from switchboard.core.identity import Principal, Scope
from switchboard.core.observability import logger
from switchboard.providers.kinds import spec_for
from switchboard.templates.service import TEMPLATE_CACHE_SECONDS
from tools.bench import tenant
from tools.bench.measurements import Figures
from tools.support.builders import APRIL_PROMO

REGION = "us-east-1"
SENDS = 100
QUEUES = {"SEND_QUEUE_URL": "SendQueue", "CLIENT_WEBHOOK_QUEUE_URL": "ClientWebhookQueue"}
WABA = "102290129340398"
LISTING = Path(__file__).resolve().parents[2] / "tests" / "contracts" / "meta" / "templates_list.json"
# Sends per minute, and for how long each rate runs (simulated), for the hit rate.
RATES = ((1, 12 * 60), (10, 2 * 60), (100, 30))


class Meta:
    """The Graph API's template list (Meta's documented example answer) and the Cloud API's sends."""

    def __init__(self) -> None:
        self.listing = json.loads(LISTING.read_text())
        self.requests: Counter[str] = Counter()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/message_templates"):
            self.requests["graph.message_templates"] += 1
            return httpx.Response(200, json=self.listing)
        self.requests["meta.messages"] += 1
        return httpx.Response(
            200, json={"messaging_product": "whatsapp", "messages": [{"id": f"wamid.{self.requests['meta.messages']}"}]}
        )


@contextlib.contextmanager
def counted() -> Iterator[Counter[str]]:
    """Every boto3 request made meanwhile, as `service.Operation`."""
    requests: Counter[str] = Counter()
    original = BaseClient._make_api_call

    def call(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        requests[f"{client.meta.service_model.service_name}.{operation}"] += 1
        return original(client, operation, params)

    BaseClient._make_api_call = call
    try:
        yield requests
    finally:
        BaseClient._make_api_call = original


def _catalog() -> str:
    """Tenant bench: a Meta provider, a Cloud API number of account WABA with its instance, and a
    send key whose default number it is; returns the key's id."""
    service = tenant.made()
    number = service.create_number(tenant.ADMIN, "5511900000004", "cloud", "1065", WABA)
    tenant.one_instance(
        number,
        provider="meta",
        kind="meta",
        base_url="http://127.0.0.1:9/meta",
        webhook_secret=secrets.token_urlsafe(24),
        instance="bench-cloud",
        provider_instance_id="1065",
    )
    key = service.create_api_key(
        tenant.ADMIN,
        tenant="bench",
        name="crm",
        environment="LIVE",
        scopes=[Scope.SEND],
        attendant_id=None,
        default_number="5511900000004",
        webhook_url=None,
    )
    return key.key.id


def requests_per_send() -> Figures:
    meta = Meta()
    transport = httpx.MockTransport(meta)
    client = spec_for("meta").client(local_mode=True, read_timeout=5, transport=transport)
    with mock_aws():
        tenant.environment(secrets_prefix="/switchboard/bench", queues=QUEUES)
        key_id = _catalog()
        sender = Principal(tenant="bench", key_id=key_id, scopes=frozenset({Scope.SEND}))
        with bootstrap.overridden(provider_client=lambda kind: client):
            service, worker = bootstrap.message_service(), send_worker(bootstrap.current())
            sqs = boto3.session.Session().client("sqs", region_name=REGION)
            rows: list[Figures] = []
            for label, count in (("first send (cold cache)", 1), ("each later send", SENDS)):
                meta.requests.clear()
                with counted() as api, contextlib.redirect_stdout(io.StringIO()):
                    for n in range(count):
                        service.submit(sender, f"55119{n:08d}", None, None, content=APRIL_PROMO)
                api_side = dict(api)
                with counted() as worked, contextlib.redirect_stdout(io.StringIO()):
                    received = sqs.receive_message(QueueUrl=os.environ["SEND_QUEUE_URL"], MaxNumberOfMessages=10)
                    while received.get("Messages"):
                        for record in received["Messages"]:
                            worker.handle(record["Body"], record["ReceiptHandle"], 1)
                            sqs.delete_message(
                                QueueUrl=os.environ["SEND_QUEUE_URL"], ReceiptHandle=record["ReceiptHandle"]
                            )
                        received = sqs.receive_message(QueueUrl=os.environ["SEND_QUEUE_URL"], MaxNumberOfMessages=10)
                # The driver's own SQS calls (receive, delete) are Lambda's event source mapping's.
                worker_side = {k: v for k, v in worked.items() if k not in ("sqs.ReceiveMessage", "sqs.DeleteMessage")}
                row = {
                    "sends": label,
                    "api_requests": round(sum(api_side.values()) / count, 2),
                    "worker_requests": round(sum(worker_side.values()) / count, 2),
                    "graph_reads": round(meta.requests["graph.message_templates"] / count, 2),
                    "meta_sends": round(meta.requests["meta.messages"] / count, 2),
                    "api_by_operation": {k: round(v / count, 2) for k, v in sorted(api_side.items())},
                    "worker_by_operation": {k: round(v / count, 2) for k, v in sorted(worker_side.items())},
                }
                rows.append(row)
                print(
                    f"  {label}: send API {row['api_requests']} AWS requests {row['api_by_operation']}; "
                    f"send worker {row['worker_requests']} {row['worker_by_operation']}; "
                    f"Graph API reads {row['graph_reads']}, Meta sends {row['meta_sends']}"
                )
    return {"sends": SENDS, "rows": rows}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 8, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def hit_rate() -> list[Figures]:
    meta = Meta()
    transport = httpx.MockTransport(meta)
    client = spec_for("meta").client(local_mode=True, read_timeout=5, transport=transport)
    rows: list[Figures] = []
    for per_minute, minutes in RATES:
        with mock_aws():
            tenant.environment(secrets_prefix="/switchboard/bench", queues=QUEUES)
            key_id = _catalog()
            clock = Clock()
            with bootstrap.overridden(provider_client=lambda kind: client):
                service = template_service(bootstrap.current())
                service._clock = clock  # the cache's freshness follows the simulated arrivals
                meta.requests.clear()
                checks = per_minute * minutes
                step = timedelta(minutes=1) / per_minute
                with contextlib.redirect_stdout(io.StringIO()):
                    for _ in range(checks):
                        service.check("bench", key_id, APRIL_PROMO)
                        clock.now += step
            reads = meta.requests["graph.message_templates"]
            rate = 1 - reads / checks
            rows.append(
                {
                    "per_minute": per_minute,
                    "minutes": minutes,
                    "checks": checks,
                    "graph_reads": reads,
                    "hit_rate": round(rate, 4),
                }
            )
            print(
                f"  {per_minute} sends a minute for {minutes} min: {checks} checks, {reads} Graph API reads, "
                f"hit rate {rate:.1%}"
            )
    return rows


def measure() -> Figures:
    logger.setLevel("WARNING")
    print(f"template sends, in-process moto, the real send API service and send worker ({SENDS} sends)")
    per_send = requests_per_send()
    print(f"the template cache ({TEMPLATE_CACHE_SECONDS} s fresh), sends at a steady rate")
    return {**per_send, "ttl_seconds": TEMPLATE_CACHE_SECONDS, "hit_rate": hit_rate()}


if __name__ == "__main__":
    measure()

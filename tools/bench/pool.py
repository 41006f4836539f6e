"""Send worker: messages resolved and recorded per second, and DynamoDB requests per message.

In-process moto, the real repositories and `SendingService` (the provider is a no-op client,
so the figures are the worker's own cost). Every DynamoDB request is counted with a botocore
`before-call` hook on the worker's client. Three scenarios, warm container (the key's
`SendingConfig` cached, as for every message but the first of each 5 s window):

- default mode: the key's default number;
- pool, affinity hit: the recipients already received from a pool number;
- pool, affinity miss: new recipients, so a round-robin ticket is taken.

Per message the worker makes: the claim (conditional UpdateItem, returns the message), the
affinity GetItem (pool mode), the ticket UpdateItem (miss), and the outcome (one transaction:
SENT + receipt index + affinity). The same scenarios run again with the ban watch on (its
per-container health copy, 5 s, read before choosing and refreshed by each send it counts; one
UpdateItem per message sent), and with pacing on as well (limits high enough never to hold a
message back: the cost of the checks). It prints figures and asserts nothing. `python -m tools.bench`.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

import boto3
from moto import mock_aws

from devstack import template
from switchboard.catalog.domain import ApiKey, Instance, Number, Provider, secret_hint
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core.observability import logger
from switchboard.health.domain import Thresholds
from switchboard.health.dynamo import DynamoPaceStore, HealthRepository
from switchboard.health.pacing import Pacer, PacingLimits
from switchboard.health.service import HealthWatch
from switchboard.messages.domain import Message, SendJob, body_hash
from switchboard.messages.dynamo import MessageRepository
from switchboard.messages.sending import SendingService
from switchboard.pool.domain import Pool, PoolEntry
from switchboard.pool.dynamo import PoolRepository
from switchboard.pool.service import SendingConfigSource
from switchboard.providers.base import ProviderTarget, SentMessage

REGION = "us-east-1"
MESSAGES = 50
NUMBERS = ("5511999990001", "5511999990002", "5511999990003")


class NoopProvider:
    def __init__(self) -> None:
        self.count = 0

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        self.count += 1
        return SentMessage(provider_message_id=f"wamid-{self.count}")


class Tokens:
    def name(self, *parts: str) -> str:
        return "/".join(parts)

    def get(self, name: str, *, fresh: bool = False) -> str:
        return "instance-token"

    def put(self, name: str, value: str) -> None:
        raise NotImplementedError

    def delete(self, name: str) -> None:
        raise NotImplementedError


class NoWebhooks:
    def message_changed(self, message: Message, webhook_url: str | None) -> None:
        return


class RequestCounter:
    """Counts DynamoDB operations made through one botocore client, and the time spent in each."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()
        self._started = 0.0
        client.meta.events.register("before-call.dynamodb", self._count)
        client.meta.events.register("after-call.dynamodb", self._timed)

    def _count(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1
        self._started = time.perf_counter()

    def _timed(self, model: Any, **_: Any) -> None:
        self.seconds[model.name] += time.perf_counter() - self._started

    def clear(self) -> None:
        self.calls.clear()
        self.seconds.clear()


def _catalog(table: Any) -> tuple[str, str]:
    """A tenant with three connected numbers; one key in default mode, one in pool mode."""
    catalog = CatalogRepository(table)
    catalog.create_provider(
        Provider(
            tenant="bench",
            id="prv_bench",
            name="zap",
            kind="wuzapi",
            base_url="http://127.0.0.1:9",
            webhook_secret_hint=secret_hint("bench-webhook-secret"),
        )
    )
    entries = []
    for digits in NUMBERS:
        number = Number(tenant="bench", id=f"num_{digits}", number=digits, display_name=digits)
        catalog.create_number(number)
        catalog.put_instance(
            Instance(
                tenant="bench",
                name=f"i-{digits}",
                provider_id="prv_bench",
                provider_instance_id=f"i-{digits}",
                number_id=number.id,
                token_hint=secret_hint("bench-instance-token"),
                state="CONNECTED",
            ),
            None,
        )
        entries.append(PoolEntry(id=f"pool_{digits}", number_id=number.id))
    for key_id, mode in (("key_default", "default"), ("key_pool", "pool")):
        key = ApiKey(
            tenant="bench",
            id=key_id,
            name=key_id,
            environment="LIVE",
            scopes=[],
            prefix="sb_live_xxx",
            default_number=NUMBERS[0],
            number_selection_mode=mode,
        )  # type: ignore[arg-type]
        catalog.create_api_key(key, digest=f"digest-{key_id}")
    PoolRepository(table).save(Pool(tenant="bench", api_key_id="key_pool", entries=tuple(entries)), 0)
    return "key_default", "key_pool"


def _run(service: SendingService, messages: MessageRepository, key_id: str, recipients: list[str]) -> float:
    jobs = []
    for index, to in enumerate(recipients):
        message = Message(
            tenant="bench",
            id=f"msg_{key_id}_{time.perf_counter_ns()}_{index}",
            api_key_id=key_id,
            to=to,
            text="benchmark",
            body_hash=body_hash(to, "benchmark"),
        )
        messages.create(message)
        jobs.append(SendJob(message_id=message.id, tenant="bench", api_key_id=key_id, to=to))
    started = time.perf_counter()
    for job in jobs:
        outcome = service.process(job, 1)
        assert outcome.status == "SENT", outcome
    return time.perf_counter() - started


def main() -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        os.environ[name] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)
    logger.setLevel("WARNING")
    with mock_aws():
        session = boto3.session.Session(region_name=REGION)
        tables = template.create_tables(session.client("dynamodb"), template.LocalNames(prefix="bench-pool"))
        table = session.resource("dynamodb").Table(tables["MainTable"])
        default_key, pool_key = _catalog(table)

        worker_table = session.resource("dynamodb").Table(tables["MainTable"])
        counter = RequestCounter(worker_table.meta.client)
        messages, pools = MessageRepository(worker_table), PoolRepository(worker_table)
        configs = SendingConfigSource(CatalogRepository(worker_table), pools, ttl_seconds=3600)
        service = SendingService(
            messages,
            configs=configs,
            tickets=pools,
            secrets=Tokens(),
            client_for=lambda kind: NoopProvider(),
            notifier=NoWebhooks(),
            max_attempts=5,
        )
        for key in (default_key, pool_key):
            counter.clear()
            configs.get("bench", key)
            print(
                f"config load ({key}, once per container per 5 s): {sum(counter.calls.values())} requests "
                f"{dict(counter.calls)}"
            )

        watched = SendingService(
            messages,
            configs=configs,
            tickets=pools,
            secrets=Tokens(),
            client_for=lambda kind: NoopProvider(),
            notifier=NoWebhooks(),
            max_attempts=5,
            health=HealthWatch(HealthRepository(worker_table), limits=Thresholds(), cache_seconds=5.0),
        )

        paced = SendingService(
            messages,
            configs=configs,
            tickets=pools,
            secrets=Tokens(),
            client_for=lambda kind: NoopProvider(),
            notifier=NoWebhooks(),
            max_attempts=5,
            health=HealthWatch(HealthRepository(worker_table), limits=Thresholds(), cache_seconds=5.0),
            pacer=Pacer(
                DynamoPaceStore(worker_table), PacingLimits(per_minute=6000, burst=1000, new_contacts_max=1000)
            ),
        )

        setup = MessageRepository(table)
        recipients = [f"5521{i:09d}" for i in range(MESSAGES)]
        watched_recipients = [f"5541{i:09d}" for i in range(MESSAGES)]
        paced_recipients = [f"5561{i:09d}" for i in range(MESSAGES)]
        scenarios = [
            ("default mode", service, default_key, [f"5531{i:09d}" for i in range(MESSAGES)]),
            ("pool, affinity miss", service, pool_key, recipients),
            ("pool, affinity hit", service, pool_key, recipients),  # the same recipients, now attached
            ("default + ban watch", watched, default_key, [f"5551{i:09d}" for i in range(MESSAGES)]),
            ("miss + ban watch", watched, pool_key, watched_recipients),
            ("hit + ban watch", watched, pool_key, watched_recipients),
            ("miss + watch + pacing", paced, pool_key, paced_recipients),
            ("hit + watch + pacing", paced, pool_key, paced_recipients),
        ]
        print(f"{'scenario':<22} {'msg/s':>6} {'requests/msg':>13}  by operation (requests/msg, mean ms in moto)")
        for label, worker, key, targets in scenarios:
            counter.clear()
            elapsed = _run(worker, setup, key, targets)
            per_message = {
                name: (round(count / len(targets), 2), round(counter.seconds[name] / count * 1000, 1))
                for name, count in sorted(counter.calls.items())
            }
            total = sum(counter.calls.values()) / len(targets)
            print(f"{label:<22} {len(targets) / elapsed:>6.1f} {total:>13.2f}  {per_message}")
        print(
            "moto's TransactWriteItems deep-copies the whole table once per item, so its time grows with the "
            "table; on DynamoDB it is one round trip. Requests per message are the figure that carries over."
        )

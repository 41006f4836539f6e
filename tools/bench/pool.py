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
UpdateItem per instance and batch of 10 records, as the send worker flushes its counts at the end
of each invocation), and with pacing on as well (limits high enough never to hold a
message back: the cost of the checks). Then on a second tenant whose instances have their spam
guard on (`spamguardEnabled`): the guard alone, guard + pacing, and guard + pacing + ban watch
(the guard reads the history once per message; its write joins the outcome's transaction). Each
row is printed beside "today", the worker before the ban watch, pacing and the guard (default 3,
hit 4, miss 5), and the common path (an affinity hit with guard + pacing) beside its target of
at most one request more. It prints figures, returns them for docs/measurements.md and asserts
nothing. `python -m tools.bench pool`.
"""

from __future__ import annotations

import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from moto import mock_aws

from devstack import template
from switchboard.bootstrap.health import BUFFERED_SENDS
from switchboard.catalog.domain import ApiKey, Instance, Number, PacingLimits, Provider, secret_hint
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core import store
from switchboard.core.observability import logger
from switchboard.health.domain import Thresholds
from switchboard.health.dynamo import DynamoPaceStore, HealthRepository
from switchboard.health.pacing import Pacer
from switchboard.health.service import BanWatch
from switchboard.messages.domain import Message, SendJob, body_hash
from switchboard.messages.dynamo import MessageRepository, SpamHistoryRepository
from switchboard.messages.sending import SendingService
from switchboard.messages.sending.attempt import Attempts
from switchboard.messages.sending.gates import Gates
from switchboard.messages.sending.outcome import Outcomes
from switchboard.messages.sending.plan import Planner
from switchboard.messages.spam_guard import SpamGuard
from switchboard.pool.domain import Pool, PoolEntry
from switchboard.pool.dynamo import PoolRepository
from switchboard.pool.service import SendingConfigSource
from switchboard.providers.base import ProviderTarget, SentMessage
from tools.bench.measurements import Figures

REGION = "us-east-1"
MESSAGES = 50
NUMBERS = ("5511999990001", "5511999990002", "5511999990003")
GUARDED_TENANT = "bench-guard"
# The worker's requests per message before the ban watch, pacing and the spam guard.
TODAY = {"default": 3, "hit": 4, "miss": 5}
COMMON_PATH = "hit + guard + pacing"
BATCH = 10  # records per send worker invocation (the SendQueue event source's BatchSize)


@dataclass(frozen=True)
class Worker:
    """A send worker and what its invocation does after each batch (the ban watch's flush)."""

    service: SendingService
    flush: Callable[[], None]


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
    """Counts DynamoDB operations made through the botocore clients of one table (the table
    resource's and the low-level one the item models send through), and the time spent in each."""

    def __init__(self, *clients: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self._started = 0.0
        for client in clients:
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


def _catalog(table: Any, tenant: str = "bench", *, guarded: bool = False) -> tuple[str, str]:
    """A tenant with three connected numbers (their instances' spam guard on when `guarded`); one
    key in default mode, one in pool mode (their ids)."""
    catalog = CatalogRepository(table)
    provider_id = f"prv_{tenant.replace('-', '_')}"
    catalog.create_provider(
        Provider(
            tenant=tenant,
            id=provider_id,
            name="zap",
            kind="wuzapi",
            base_url="http://127.0.0.1:9",
            webhook_secret_hint=secret_hint("bench-webhook-secret"),
        )
    )
    entries = []
    for digits in NUMBERS:
        number = Number(tenant=tenant, id=f"num_{digits}", number=digits, display_name=digits)
        catalog.create_number(number)
        catalog.put_instance(
            Instance(
                tenant=tenant,
                name=f"i-{digits}",
                provider_id=provider_id,
                provider_instance_id=f"i-{digits}",
                number_id=number.id,
                token_hint=secret_hint("bench-instance-token"),
                state="CONNECTED",
                spamguard_enabled=guarded,
            ),
            None,
        )
        entries.append(PoolEntry(id=f"pool_{digits}", number_id=number.id))
    keys = {mode: f"key_{tenant.replace('-', '_')}_{mode}" for mode in ("default", "pool")}
    for mode, key_id in keys.items():
        key = ApiKey(
            tenant=tenant,
            id=key_id,
            name=key_id,
            environment="LIVE",
            scopes=[],
            prefix="sb_live_xxx",
            default_number=NUMBERS[0],
            number_selection_mode=mode,
        )
        catalog.create_api_key(key, digest=f"digest-{key_id}")
    uow = store.unit_of_work()
    PoolRepository(table).record_save(uow, Pool(tenant=tenant, api_key_id=keys["pool"], entries=tuple(entries)), 0)
    uow.commit()
    return keys["default"], keys["pool"]


_setup_clients: dict[str, Any] = {}  # per table: the client the benchmark's own writes go through


def _run(
    worker: Worker,
    messages: MessageRepository,
    tenant: str,
    key_id: str,
    recipients: list[str],
    *,
    text: str,
    binding: tuple[str, Any],
) -> float:
    """Create the messages, then send them with the item models bound to `binding` (the table
    and the counted client): the creates go through a client of their own, left uncounted."""
    table_name, counted_client = binding
    if table_name not in _setup_clients:
        _setup_clients[table_name] = boto3.client("dynamodb", region_name=REGION)
    store.bind(table_name, _setup_clients[table_name])
    jobs = []
    for index, to in enumerate(recipients):
        message = Message(
            tenant=tenant,
            id=f"msg_{key_id}_{time.perf_counter_ns()}_{index}",
            api_key_id=key_id,
            to=to,
            text=text,
            body_hash=body_hash(to, text),
        )
        messages.create(message)
        jobs.append(SendJob(message_id=message.id, tenant=tenant, api_key_id=key_id, to=to))
    store.bind(table_name, counted_client)
    started = time.perf_counter()
    for start in range(0, len(jobs), BATCH):
        for job in jobs[start : start + BATCH]:
            outcome = worker.service.process(job, 1)
            assert outcome.status == "SENT", outcome
        worker.flush()
    return time.perf_counter() - started


def _worker(
    table: Any,
    configs: SendingConfigSource,
    pools: PoolRepository,
    *,
    guard: bool = False,
    watch: bool = False,
    pacing: PacingLimits | None = None,
) -> Worker:
    """A send worker on `table`, with the spam guard, the ban watch and pacing as asked."""
    messages = MessageRepository(table)
    health = (
        BanWatch(HealthRepository(table), limits=Thresholds(), cache_seconds=5.0, buffered_sends=BUFFERED_SENDS)
        if watch
        else None
    )
    service = SendingService(
        messages,
        planner=Planner(messages, configs=configs, tickets=pools),
        gates=Gates(
            spam_guard=SpamGuard(SpamHistoryRepository(table)) if guard else None,
            health=health,
            pacer=Pacer(DynamoPaceStore(table), pacing) if pacing is not None else None,
        ),
        attempts=Attempts(messages, secrets=Tokens(), client_for=lambda kind: NoopProvider(), health=health),
        outcomes=Outcomes(messages, notifier=NoWebhooks(), max_attempts=5, health=health),
    )
    return Worker(service, health.flush if health is not None else lambda: None)


def _guarded(
    session: Any,
) -> tuple[
    RequestCounter,
    MessageRepository,
    tuple[str, str],
    tuple[Worker, Worker, Worker],
    tuple[str, Any],
]:
    """The tenant whose instances have their spam guard on: its request counter, its message
    records, its default and pool keys, and the guarded worker alone, with pacing, and with pacing
    and the ban watch; and the table and low-level client its item models are bound to."""
    # The guarded tenant has tables of its own: moto copies the table once per transaction
    # item, so sharing one would slow every later row (the requests per message are the same).
    guarded_tables = template.create_tables(session.client("dynamodb"), template.LocalNames(prefix="bench-guard"))
    guarded_table = session.resource("dynamodb").Table(guarded_tables["MainTable"])
    guarded_client = session.client("dynamodb")
    store.bind(guarded_table.name, guarded_client)
    guarded_default_key, guarded_pool_key = _catalog(guarded_table, GUARDED_TENANT, guarded=True)
    guarded_worker_table = session.resource("dynamodb").Table(guarded_tables["MainTable"])
    guarded_counter = RequestCounter(guarded_worker_table.meta.client, guarded_client)
    guarded_pools = PoolRepository(guarded_worker_table)
    guarded_configs = SendingConfigSource(CatalogRepository(guarded_worker_table), guarded_pools, ttl_seconds=3600)
    guarded_configs.get(GUARDED_TENANT, guarded_default_key)
    guarded_configs.get(GUARDED_TENANT, guarded_pool_key)

    pacing = PacingLimits(per_minute=6000, burst=1000, new_contacts_first_day=1000, new_contacts_max=1000)
    workers = (
        _worker(guarded_worker_table, guarded_configs, guarded_pools, guard=True),
        _worker(guarded_worker_table, guarded_configs, guarded_pools, guard=True, pacing=pacing),
        _worker(guarded_worker_table, guarded_configs, guarded_pools, guard=True, watch=True, pacing=pacing),
    )
    keys = (guarded_default_key, guarded_pool_key)
    return guarded_counter, MessageRepository(guarded_table), keys, workers, (guarded_table.name, guarded_client)


def _in_process_aws() -> None:
    """moto in this process, never an endpoint a shell left in the environment; quiet logs."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        os.environ[name] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)
    logger.setLevel("WARNING")


def _tables() -> tuple[boto3.session.Session, dict[str, str]]:
    session = boto3.session.Session(region_name=REGION)
    return session, template.create_tables(session.client("dynamodb"), template.LocalNames(prefix="bench-pool"))


def measure() -> Figures:
    _in_process_aws()
    with mock_aws():
        session, tables = _tables()
        table = session.resource("dynamodb").Table(tables["MainTable"])
        # One binding at a time (PynamoDB binds at class level): each table's rows bind to it first.
        table_client = session.client("dynamodb")
        store.bind(table.name, table_client)
        default_key, pool_key = _catalog(table)

        worker_table = session.resource("dynamodb").Table(tables["MainTable"])
        counter = RequestCounter(worker_table.meta.client, table_client)
        pools = PoolRepository(worker_table)
        configs = SendingConfigSource(CatalogRepository(worker_table), pools, ttl_seconds=3600)
        service = _worker(worker_table, configs, pools)
        config_load: dict[str, int] = {}
        for mode, key in (("default", default_key), ("pool", pool_key)):
            counter.clear()
            configs.get("bench", key)
            config_load[mode] = sum(counter.calls.values())
            print(
                f"config load ({key}, once per container per 5 s): {sum(counter.calls.values())} requests "
                f"{dict(counter.calls)}"
            )

        watched = _worker(worker_table, configs, pools, watch=True)
        paced = _worker(
            worker_table,
            configs,
            pools,
            watch=True,
            pacing=PacingLimits(per_minute=6000, burst=1000, new_contacts_max=1000),
        )

        guarded_counter, guarded_setup, guarded_keys, guarded_workers, guarded_binding = _guarded(session)
        guarded_table_name, guarded_client = guarded_binding
        store.bind(table.name, table_client)
        guarded_default_key, guarded_pool_key = guarded_keys
        guarded, guarded_paced, guarded_all = guarded_workers

        setup = MessageRepository(table)
        recipients = [f"5521{i:09d}" for i in range(MESSAGES)]
        watched_recipients = [f"5541{i:09d}" for i in range(MESSAGES)]
        paced_recipients = [f"5561{i:09d}" for i in range(MESSAGES)]
        guarded_recipients = [f"5571{i:09d}" for i in range(MESSAGES)]
        guarded_paced_recipients = [f"5581{i:09d}" for i in range(MESSAGES)]
        guarded_all_recipients = [f"5591{i:09d}" for i in range(MESSAGES)]
        # (label, worker, tenant, key, recipients, what "today" it compares to); a hit row sends the
        # miss row's recipients another text (the same one would be refused by their guard).
        scenarios = [
            ("default mode", service, "bench", default_key, [f"5531{i:09d}" for i in range(MESSAGES)], "default"),
            ("pool, affinity miss", service, "bench", pool_key, recipients, "miss"),
            ("pool, affinity hit", service, "bench", pool_key, recipients, "hit"),  # the same recipients, now attached
            (
                "default + ban watch",
                watched,
                "bench",
                default_key,
                [f"5551{i:09d}" for i in range(MESSAGES)],
                "default",
            ),
            ("miss + ban watch", watched, "bench", pool_key, watched_recipients, "miss"),
            ("hit + ban watch", watched, "bench", pool_key, watched_recipients, "hit"),
            ("miss + watch + pacing", paced, "bench", pool_key, paced_recipients, "miss"),
            ("hit + watch + pacing", paced, "bench", pool_key, paced_recipients, "hit"),
            (
                "default + guard",
                guarded,
                GUARDED_TENANT,
                guarded_default_key,
                [f"5501{i:09d}" for i in range(MESSAGES)],
                "default",
            ),
            ("miss + guard", guarded, GUARDED_TENANT, guarded_pool_key, guarded_recipients, "miss"),
            ("hit + guard", guarded, GUARDED_TENANT, guarded_pool_key, guarded_recipients, "hit"),
            (
                "miss + guard + pacing",
                guarded_paced,
                GUARDED_TENANT,
                guarded_pool_key,
                guarded_paced_recipients,
                "miss",
            ),
            (COMMON_PATH, guarded_paced, GUARDED_TENANT, guarded_pool_key, guarded_paced_recipients, "hit"),
            ("miss + guard+watch+pace", guarded_all, GUARDED_TENANT, guarded_pool_key, guarded_all_recipients, "miss"),
            ("hit + guard+watch+pace", guarded_all, GUARDED_TENANT, guarded_pool_key, guarded_all_recipients, "hit"),
        ]
        print(
            f"{'scenario':<24} {'msg/s':>6} {'requests/msg':>13} {'today':>6} {'more':>6}"
            "  by operation (requests/msg, mean ms in moto)"
        )
        bindings = {"bench": (table.name, table_client), GUARDED_TENANT: (guarded_table_name, guarded_client)}
        common: float | None = None
        rows: list[Figures] = []
        for label, worker, tenant, key, targets, today in scenarios:
            counted, records = (counter, setup) if tenant == "bench" else (guarded_counter, guarded_setup)
            counted.clear()
            elapsed = _run(worker, records, tenant, key, targets, text=f"benchmark: {label}", binding=bindings[tenant])
            per_message = {
                name: (round(count / len(targets), 2), round(counted.seconds[name] / count * 1000, 1))
                for name, count in sorted(counted.calls.items())
            }
            total = sum(counted.calls.values()) / len(targets)
            more = total - TODAY[today]
            print(
                f"{label:<24} {len(targets) / elapsed:>6.1f} {total:>13.2f} {TODAY[today]:>6} {more:>+6.2f}"
                f"  {per_message}"
            )
            rows.append(
                {
                    "scenario": label,
                    "requests": round(total, 2),
                    "today": TODAY[today],
                    "by_operation": {name: count for name, (count, _) in per_message.items()},
                }
            )
            if label == COMMON_PATH:
                common = more
        if common is not None:
            verdict = "met" if common <= 1 else f"missed by {common - 1:.2f}"
            print(
                f"common path ({COMMON_PATH}): {TODAY['hit'] + common:.2f} requests per message, today "
                f"{TODAY['hit']} + at most 1: {verdict} (the guard's GetItem and the pacing bucket's "
                "conditional UpdateItem are one request each; the guard's write is in the outcome's transaction)"
            )
        print(
            "msg/s and ms are moto's, in process; on DynamoDB each request is one round trip. Requests per "
            "message are the figure that carries over."
        )
    return {
        "messages": MESSAGES,
        "config_load": config_load,
        "scenarios": rows,
        "common_path": COMMON_PATH,
        "today": TODAY,
    }

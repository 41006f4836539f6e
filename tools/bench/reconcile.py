"""One scheduled reconciliation period at 10,000 instances of every kind on 20 provider servers.

In-process moto with the template's resources and functions. 20 tenants, each with one provider
server and 500 instances of one kind: 5 calls-capable wuzapi servers (calls instances), 5 plain
wuzapi, 5 Evolution and 5 Meta Cloud API (messaging instances). Then:

1. the scheduler function runs its fan-out over the 10,000 instances: the listing is read from
   memory (moto's index queries scan the whole table on every page, minutes at this size) and
   what it costs in DynamoDB is measured on moto for one tenant of 500 and counted for the 20;
   its queue client records each SendMessageBatch and the delay each message gets;
2. the worker function reconciles a sample of the queued instances (5 per server) in batches of
   the template's BatchSize, against a fake provider that answers every read and counts them,
   twice: the second pass is the one metered (a period after the first: DynamoDB, SQS, SSM,
   EventBridge and provider requests per instance and kind, and its own compute time);
3. a timeline of the period with the template's worker concurrency (MaximumConcurrency x
   BatchSize): when each instance is reconciled, from the delays the fan-out gave and the
   measured time per instance of its kind (own compute + the stated round trips of
   `meter.LATENCY_MS`), and so how many reconciliations each provider server gets per second,
   with the delays and without them (every message visible at once, taken in listing order).

It prints figures, returns them for docs/measurements.md and asserts nothing.
`python -m tools.bench reconcile`.
"""

from __future__ import annotations

import functools
import heapq
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from devstack import template
from switchboard import bootstrap
from switchboard.calls.reconcile import PER_SERVER_RATE, SPREAD_SECONDS
from switchboard.calls.reconcile_queue import ReconcileQueue
from switchboard.catalog.domain import Instance, Provider, Tenant, instance_key, secret_hint
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core.errors import NotFound
from switchboard.core.observability import logger
from switchboard.core.secrets import instance_token_name
from switchboard.providers.base import InstanceStatus, NumberStanding, ProviderCall, ProviderTarget
from switchboard.providers.kinds import ProviderKind
from tools.bench import cost
from tools.bench.measurements import Figures
from tools.bench.meter import LATENCY_MS, Meter, Tally
from tools.bench.workloads import Measured, stage

SERVERS = 20
PER_SERVER = 500
SAMPLE = 100
# Each server's kind, in turn: (label, provider kind, instance kind).
KINDS: tuple[tuple[str, ProviderKind, str], ...] = (
    ("calls", "wuzapi", "calls"),
    ("wuzapi", "wuzapi", "messages"),
    ("evolution", "evolution", "messages"),
    ("meta", "meta", "messages"),
)


def kind_of(server: int) -> tuple[str, ProviderKind, str]:
    return KINDS[server % len(KINDS)]


class SeedingCatalog(CatalogRepository):
    """The catalog repository, its transactions collected and written later in batches: only the
    listed records (tenants, instances: the items with a listing index), which are what the
    fan-out and the reconciler read; the uniqueness records of provider bindings are left out."""

    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self.items: list[dict[str, Any]] = []

    def _transact(self, writes: list[dict[str, Any]], on_condition: Exception) -> None:
        self.items.extend(write["Put"]["Item"] for write in writes if "gsi1pk" in write.get("Put", {}).get("Item", {}))

    def flush(self, table: Any) -> None:
        with table.batch_writer() as batch:
            for item in self.items:
                batch.put_item(Item=item)
        self.items.clear()


class ListedCatalog:
    """The instances the scheduler lists, held in memory (moto's index queries scan the whole table
    on every page: minutes at this size), found by key as the catalog finds them."""

    def __init__(self, instances: Iterable[Instance]) -> None:
        self._instances = {item.key: item for item in instances}

    def find_instance(self, key: str) -> Instance | None:
        return self._instances.get(key)

    def get_instance(self, tenant: str, name: str) -> Instance:
        found = self._instances.get(instance_key(tenant, name))
        if found is None:
            raise NotFound("instance not found")
        return found

    def list_tenants(self) -> list[Tenant]:
        tags = sorted({item.tenant for item in self._instances.values()})
        return [Tenant(tenant=tag, owner_tag=tag, name=tag) for tag in tags]

    def list_instances(self, tenant: str) -> list[Instance]:
        return [item for item in self._instances.values() if item.tenant == tenant]


class RecordingSqs:
    """The queue's SQS client for the fan-out: records each batch and its delays (moto's SQS
    recomputes a queue's attributes on every send, which makes 10,000 sends take many minutes)."""

    def __init__(self, meter: Meter) -> None:
        self._meter = meter
        self.sent: list[tuple[str, int]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self._meter.record("sqs", "SendMessageBatch", {"Entries": Entries})
        for entry in Entries:
            self.sent.append((json.loads(entry["MessageBody"])["instance"], int(entry.get("DelaySeconds", 0))))
        return {"Successful": [{"Id": entry["Id"]} for entry in Entries]}


class CountingProvider:
    """Every kind's provider at once: answers every read at once (no calls live) and counts them.
    A calls-capable server answers its calls config, a Meta number its standing, the others their
    session's state."""

    def __init__(self, meter: Meter) -> None:
        self._meter = meter
        self.by_server: Counter[str] = Counter()
        self.by_read: Counter[str] = Counter()

    def _count(self, target: ProviderTarget, read: str) -> None:
        self._meter.outbound("provider")
        self.by_server[target.base_url] += 1
        self.by_read[read] += 1

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        self._count(target, "status")
        if target.kind == "meta":
            return InstanceStatus(connected=True, kind="meta", number=NumberStanding(status="CONNECTED"))
        if target.base_url in CALLS_SERVERS:
            return InstanceStatus(connected=True, kind="calls", calls_max_concurrent=4, calls_config_version=1)
        return InstanceStatus(connected=True)

    def active_calls(self, target: ProviderTarget) -> list[ProviderCall]:
        self._count(target, "active_calls")
        return []

    def get_call(self, target: ProviderTarget, call_id: str) -> ProviderCall | None:
        self._count(target, "get_call")
        return None

    def call_history(self, target: ProviderTarget) -> list[ProviderCall]:
        self._count(target, "call_history")
        return []


def _instances() -> list[Instance]:
    return [
        Instance(
            tenant=f"t{server:02d}",
            name=f"t{server:02d}-line-{index:04d}",
            provider_id=f"prv_{server:02d}",
            provider_instance_id=f"t{server:02d}-line-{index:04d}",
            number_id=f"num_{server:02d}_{index:04d}",
            kind=kind_of(server)[2],
            token_hint=secret_hint("bench-instance-token"),
            state="CONNECTED",
        )
        for server in range(SERVERS)
        for index in range(PER_SERVER)
    ]


def _seed(table: Any, instances: list[Instance], listed_tenant: str, sample: set[str]) -> None:
    """Every tenant and provider server; the instances of `listed_tenant` and the sampled ones."""
    seeding = SeedingCatalog(table)
    catalog = CatalogRepository(table)
    for server in range(SERVERS):
        tenant = f"t{server:02d}"
        seeding.create_tenant(Tenant(tenant=tenant, owner_tag=tenant, name=tenant))
        catalog.create_provider(
            Provider(
                tenant=tenant,
                id=f"prv_{server:02d}",
                name=kind_of(server)[0],
                kind=kind_of(server)[1],
                base_url=_server(f"prv_{server:02d}"),
                webhook_secret_hint=secret_hint("bench-webhook-secret"),
            )
        )
    for instance in instances:
        if instance.tenant == listed_tenant or instance.key in sample:
            seeding.put_instance(instance, None)
    seeding.flush(table)


def _server(provider_id: str) -> str:
    return f"https://provider-{provider_id[4:]}.example"


CALLS_SERVERS = frozenset(_server(f"prv_{server:02d}") for server in range(SERVERS) if kind_of(server)[0] == "calls")


@dataclass
class Worker:
    batch_size: int
    max_concurrency: int
    reserved: int | None
    timeout: int
    schedule_seconds: int


def _worker_settings() -> Worker:
    functions = template.resources("AWS::Serverless::Function")
    worker = functions["ReconcileWorkerFunction"]
    (event,) = worker["Events"].values()
    schedule = str(template.parameter_defaults()["ReconcileSchedule"])
    rate = re.fullmatch(r"rate\((\d+) (\w+?)s?\)", schedule)
    if rate is None:
        raise ValueError(f"ReconcileSchedule {schedule!r} is not rate(<amount> <unit>)")
    amount, unit = rate.groups()
    return Worker(
        batch_size=int(event["Properties"]["BatchSize"]),
        max_concurrency=int(event["Properties"].get("ScalingConfig", {}).get("MaximumConcurrency", 1000)),
        reserved=worker.get("ReservedConcurrentExecutions"),
        timeout=int(worker.get("Timeout", 29)),
        schedule_seconds=int(amount) * {"minute": 60, "hour": 3600, "second": 1}[unit],
    )


def timeline(messages: list[tuple[str, int, float]], worker: Worker) -> tuple[float, dict[str, Counter[int]]]:
    """When the period ends, and each server's reconciliations per second.

    `messages` are (server, visible after seconds, seconds its reconciliation takes) in the order
    they were sent; a free worker takes up to BatchSize messages visible at that moment (the
    oldest first) and reconciles them one after another.
    """
    order = sorted(range(len(messages)), key=lambda index: (messages[index][1], index))
    free = [0.0] * worker.max_concurrency
    per_second: dict[str, Counter[int]] = defaultdict(Counter)
    taken, end = 0, 0.0
    while taken < len(order):
        now = max(heapq.heappop(free), float(messages[order[taken]][1]))
        batch: list[int] = []
        while taken < len(order) and len(batch) < worker.batch_size and messages[order[taken]][1] <= now:
            batch.append(order[taken])
            taken += 1
        started = now
        for index in batch:
            per_second[messages[index][0]][int(started)] += 1
            started += messages[index][2]
        end = max(end, started)
        heapq.heappush(free, started)
    return end, per_second


def _summary(label: str, end: float, per_second: dict[str, Counter[int]], worker: Worker) -> Figures:
    peaks = [max(seconds.values()) for seconds in per_second.values()]
    spans = [max(seconds) - min(seconds) + 1 for seconds in per_second.values()]
    print(
        f"  {label}: period done after {end:.0f} s of {worker.schedule_seconds} s; per provider server "
        f"peak {max(peaks)} reconciliations/s (median {sorted(peaks)[len(peaks) // 2]}), "
        f"spread over {min(spans)}-{max(spans)} s"
    )
    return {
        "end_seconds": round(end),
        "peak": max(peaks),
        "median_peak": sorted(peaks)[len(peaks) // 2],
        "spans": [min(spans), max(spans)],
    }


def measure() -> Figures:
    logger.setLevel("WARNING")
    worker = _worker_settings()
    instances = _instances()
    sample = [item.key for item in instances if int(item.name[-4:]) < SAMPLE // SERVERS]
    label_of = {item.key: kind_of(int(item.tenant[1:]))[0] for item in instances}
    groups = {label: [key for key in sample if label_of[key] == label] for label, _, _ in KINDS}
    listed_tenant = instances[0].tenant
    with stage() as run:
        table = bootstrap.table()
        _seed(table, instances, listed_tenant, set(sample))
        secrets = bootstrap.secrets()
        for key in sample:
            tenant, _, name = key.partition(":")
            secrets.put(instance_token_name(secrets, tenant, name), "bench-instance-token")
        provider = CountingProvider(run.meter)
        sqs = RecordingSqs(run.meter)
        # The scheduler lists the 10,000 from memory (moto's index queries scan the whole table on
        # every page: minutes at this size); what listing costs is measured below on one tenant.
        run.override(
            provider_client=lambda kind: provider,
            reconcile_queue=ReconcileQueue(sqs, "https://reconcile-queue"),
            scheduled_instances=ListedCatalog(instances),
        )
        with run.meter.on():
            fanned = run.measure("fan-out", len(instances), lambda: _fan_out(run))
            listing = run.measure("listing", 1, lambda: _list(run, table, listed_tenant))
            # A period after the first: each line already has its limit and every state is the
            # provider's, so nothing unchanged is written or published again. Five minutes later an
            # instance lands on any container, whose secrets cache (60 s) no longer holds its token:
            # caches start empty.
            _reconcile(run, sample, worker.batch_size)
            reconciled: dict[str, Measured] = {}
            reads: dict[str, Counter[str]] = {}
            for label, keys in groups.items():
                bootstrap.reset()
                provider.by_read.clear()
                reconciled[label] = run.measure(
                    label, len(keys), functools.partial(_reconcile, run, keys, worker.batch_size)
                )
                reads[label] = Counter(provider.by_read)

    scheduler = fanned.tallies["ReconcileSchedulerFunction"]
    listed = listing.tallies["listing"]
    tenant_queries = listed.requests["dynamodb.Query"] - 1  # the tenants' listing is one query
    queries = 1 + SERVERS * tenant_queries
    fan_out_seconds = (scheduler.invocations[0].billed_ms + queries * LATENCY_MS["dynamodb"]) / 1000
    print(
        f"{len(instances):,} instances, {PER_SERVER} on each of {SERVERS} provider servers (one per tenant): "
        + ", ".join(f"{SERVERS // len(KINDS)} servers of {label}" for label, _, _ in KINDS)
    )
    print(
        f"  fan-out: 1 invocation, {fan_out_seconds:.1f} s (Timeout 300 s), "
        f"{scheduler.requests['sqs.SendMessageBatch']} SendMessageBatch; listing {queries} Query "
        f"(1 for the tenants + {tenant_queries} per tenant of {PER_SERVER}, measured on moto), "
        f"{sum(listed.read_units.values()) * SERVERS:.0f} RRU"
    )
    seconds, kinds = _per_kind(reconciled, reads)
    kind_at = {_server(item.provider_id): kind_of(int(item.tenant[1:]))[0] for item in instances}
    delays = [(_server(prv), delay, seconds[kind_at[_server(prv)]]) for prv, delay in _providers(sqs.sent, instances)]
    print(
        f"  worker: BatchSize {worker.batch_size}, MaximumConcurrency {worker.max_concurrency}, "
        f"ReservedConcurrentExecutions {worker.reserved or 'none'}, Timeout {worker.timeout} s; "
        f"spread: {PER_SERVER_RATE}/s per server over at most {SPREAD_SECONDS} s; "
        f"largest delay {max(d for _, d, _ in delays)} s"
    )
    spread = _summary("with the fan-out's delays", *timeline(delays, worker), worker)
    at_once = _summary("all at once (listing order)", *timeline([(s, 0, t) for s, _, t in delays], worker), worker)
    costs = _cost(fanned, reconciled, worker, len(instances))
    mean = sum(seconds.values()) / len(seconds)
    capacity = worker.max_concurrency / mean
    print(
        f"  capacity: {capacity:.0f} instances/s ({worker.max_concurrency} workers / {mean:.2f} s on average), so "
        f"one {worker.schedule_seconds} s period holds {capacity * worker.schedule_seconds:,.0f} instances; "
        f"the spread alone lets {PER_SERVER_RATE * SPREAD_SECONDS:,} per provider server through each period"
    )
    return {
        "instances": len(instances),
        "servers": SERVERS,
        "per_server": PER_SERVER,
        "sample": SAMPLE,
        "fan_out": {
            "seconds": round(fan_out_seconds, 1),
            "send_message_batch": scheduler.requests["sqs.SendMessageBatch"],
            "queries": queries,
            "read_units": round(sum(listed.read_units.values()) * SERVERS),
        },
        "worker": {
            "batch_size": worker.batch_size,
            "max_concurrency": worker.max_concurrency,
            "timeout": worker.timeout,
            "schedule_seconds": worker.schedule_seconds,
        },
        "per_server_rate": PER_SERVER_RATE,
        "spread_seconds": SPREAD_SECONDS,
        "largest_delay": max(d for _, d, _ in delays),
        "kinds": kinds,
        "with_spread": spread,
        "at_once": at_once,
        "mean_seconds": round(mean, 2),
        "capacity": round(capacity),
        "cost": costs,
    }


def _per_kind(
    reconciled: dict[str, Measured], reads: dict[str, Counter[str]]
) -> tuple[dict[str, float], list[Figures]]:
    """Print what one instance of each kind costs a period; its seconds of worker time and its
    figures, by kind."""
    seconds: dict[str, float] = {}
    rows: list[Figures] = []
    for label, measured in reconciled.items():
        per_instance = measured.tallies["ReconcileWorkerFunction"]
        units = measured.units
        calls = {op: round(n / units, 2) for op, n in sorted(per_instance.requests.items())}
        seconds[label] = sum(i.billed_ms for i in per_instance.invocations) / units / 1000
        print(
            f"  per {label} instance ({units} reconciled): {calls}; provider requests "
            f"{ {read: round(n / units, 2) for read, n in reads[label].items()} }; "
            f"{sum(per_instance.write_units.values()) / units:.1f} WRU, "
            f"{sum(per_instance.read_units.values()) / units:.1f} RRU, {seconds[label]:.2f} s of worker time each "
            f"(of which {seconds[label] * 1000 - _own_ms(per_instance, units):.0f} ms stated round trips)"
        )
        rows.append(
            {
                "kind": label,
                "reconciled": units,
                "requests": calls,
                "provider_requests": {read: round(n / units, 2) for read, n in reads[label].items()},
                "write_units": round(sum(per_instance.write_units.values()) / units, 1),
                "read_units": round(sum(per_instance.read_units.values()) / units, 1),
                "seconds": round(seconds[label], 2),
                "round_trip_seconds": round(seconds[label] - _own_ms(per_instance, units) / 1000, 2),
            }
        )
    return seconds, rows


def _cost(fanned: Measured, reconciled: dict[str, Measured], worker: Worker, instances: int) -> Figures:
    """What one instance costs per period (its share of the fan-out, its reconciliation and the
    event source mapping's receive and delete of its batch), by kind and for the 10,000 (as many of
    each kind) per 30 days."""
    memory = cost.function_memory()
    periods = 30 * 24 * 3600 // worker.schedule_seconds
    totals: dict[str, float] = {}
    by_line: Counter[str] = Counter()
    for label, measured in reconciled.items():
        per_instance = measured.usage(memory)
        share = fanned.usage(memory)
        per_instance.functions.update(share.functions)
        per_instance.sqs_requests += share.sqs_requests + 2 / worker.batch_size  # receive + delete per batch
        per_instance.read_units += share.read_units
        per_instance.log_bytes += share.log_bytes
        lines = cost.cost_per_million(per_instance)
        totals[label] = sum(lines.values())
        by_line.update(lines)
    mean = sum(totals.values()) / len(totals)
    month = mean / 1e6 * periods * instances
    detail = ", ".join(f"{label} {usd:.2f}" for label, usd in totals.items())
    print(
        f"  cost: {mean:.2f} USD per million instance-periods on average ({detail}); "
        f"{instances:,} instances every {worker.schedule_seconds} s: {month:,.0f} USD per 30 days"
    )
    return {
        "usd": round(mean, 2),
        "usd_by_kind": {label: round(usd, 2) for label, usd in totals.items()},
        # The mean over the kinds, line by line (each kind weighs the same: as many instances of each).
        "usd_by_line": {line: round(usd / len(totals), 2) for line, usd in by_line.items()},
        "usd_per_30_days": round(month),
    }


def _providers(sent: list[tuple[str, int]], instances: list[Instance]) -> list[tuple[str, int]]:
    provider_of = {item.key: item.provider_id for item in instances}
    return [(provider_of[key], delay) for key, delay in sent]


def _list(run: Any, table: Any, tenant: str) -> None:
    catalog = CatalogRepository(table)
    with run.meter.labelled("listing"):
        catalog.list_tenants()
        catalog.list_instances(tenant)


def _own_ms(tally: Tally, units: int) -> float:
    return sum(invocation.own_seconds * 1000 for invocation in tally.invocations) / units


def _fan_out(run: Any) -> None:
    run.api.functions.invoke("ReconcileSchedulerFunction", {"source": "aws.events", "detail-type": "Scheduled Event"})


def _reconcile(run: Any, keys: Iterable[str], batch_size: int) -> None:
    arn = "arn:aws:sqs:us-east-1:000000000000:ReconcileQueue"
    keys = list(keys)
    for start in range(0, len(keys), batch_size):
        records = [_record(key, f"m-{index}", arn) for index, key in enumerate(keys[start : start + batch_size])]
        answer = run.api.functions.invoke("ReconcileWorkerFunction", {"Records": records})
        if answer.get("batchItemFailures"):
            raise RuntimeError(f"reconcile failed: {answer}")


def _record(instance: str, message_id: str, queue_arn: str) -> dict[str, Any]:
    """One record of Lambda's SQS event: the reconcile queue's message for `instance`."""
    return {
        "messageId": message_id,
        "receiptHandle": "h",
        "body": json.dumps({"instance": instance}),
        "attributes": {},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": "us-east-1",
    }


if __name__ == "__main__":
    measure()

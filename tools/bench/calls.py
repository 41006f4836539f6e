"""Slot admission: throughput and DynamoDB requests per reservation, and exactness under contention.

1. In-process moto: `CallRepository.reserve` on lines of limit 8 (admitted) and on full lines
   (refused), counting every DynamoDB request with a botocore `before-call` hook (the attempts are
   stored first, uncounted: the dial stores its attempt before it asks for the slot). The shape
   is one transaction (the attempt's state checked, the line updated), so the figure to see is
   exactly 1.0 request per reservation either way; it writes 2 items, 4 write units.
2. Contention: 50 threads, each with its own boto3 session (the item models send through the one
   client they are bound to, as in a container), reserve at once on one line of limit 2, against
   the local stack's serialised DynamoDB endpoint (moto server behind one lock,
   `devstack.aws_endpoint.AwsEndpoint`); 20 rounds; each must admit exactly 2.

It prints figures, returns them for docs/measurements.md and asserts nothing (timings depend on
the machine). `python -m tools.bench calls`.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import Counter
from typing import Any

import boto3
from moto import mock_aws

from devstack import template
from devstack.aws_endpoint import AwsEndpoint
from switchboard.calls.domain import DialAttempt
from switchboard.calls.dynamo import CallRepository
from switchboard.core import store
from switchboard.core.errors import LineBusy
from switchboard.core.observability import logger
from switchboard.lines.domain import Snapshot
from switchboard.lines.dynamo import LineRepository
from tools.bench.measurements import Figures

REGION = "us-east-1"
IN_PROCESS_LINES = 125
LIMIT = 8
THREADS = 50
ROUNDS = 20
CONTENDED_LIMIT = 2


def _fake_credentials() -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        os.environ[name] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)


def _attempt(line: str, index: int) -> DialAttempt:
    return DialAttempt(
        id=f"res_{uuid.uuid4().hex}", tenant="bench", instance=line, attendant=f"a{index}", to="5511977776666"
    )


def _table(session: boto3.session.Session, endpoint: str | None = None) -> Any:
    names = template.LocalNames(prefix="bench")
    return session.resource("dynamodb", region_name=REGION, endpoint_url=endpoint).Table(names.table("MainTable"))


def _new_line(table: Any, limit: int) -> str:
    name = f"line-{uuid.uuid4().hex[:12]}"
    LineRepository(table).apply_snapshot("bench", name, Snapshot(limit=limit, version=1, source="status"))
    return name


def in_process() -> Figures:
    _fake_credentials()
    with mock_aws():
        session = boto3.session.Session()
        template.create_tables(session.client("dynamodb", region_name=REGION), template.LocalNames(prefix="bench"))
        table = _table(session)
        client = session.client("dynamodb", region_name=REGION)
        store.bind(table.name, client)
        repository = CallRepository(table)
        lines = [_new_line(table, LIMIT) for _ in range(IN_PROCESS_LINES)]
        requests: Counter[str] = Counter()
        client.meta.events.register("before-call.dynamodb", lambda model, **_: requests.update([model.name]))

        attempts = {line: [_attempt(line, index) for index in range(LIMIT + 1)] for line in lines}
        for line_attempts in attempts.values():
            for attempt in line_attempts:
                repository.create_attempt(attempt)
        requests.clear()
        started = time.perf_counter()
        for line in lines:
            for attempt in attempts[line][:LIMIT]:
                repository.reserve(attempt)
        admitted_seconds = time.perf_counter() - started
        admitted = IN_PROCESS_LINES * LIMIT
        admitted_requests = dict(requests)

        requests.clear()
        refused = 0
        started = time.perf_counter()
        for line in lines:
            try:
                repository.reserve(attempts[line][LIMIT])
            except LineBusy:
                refused += 1
        refused_seconds = time.perf_counter() - started

    print(f"in-process moto, {IN_PROCESS_LINES} lines of limit {LIMIT}")
    print(
        f"  admitted: {admitted} reservations in {admitted_seconds:.2f} s = {admitted / admitted_seconds:,.0f}/s; "
        f"DynamoDB requests per reservation: {sum(admitted_requests.values()) / admitted:.2f} {admitted_requests}"
    )
    print(
        f"  refused (line full): {refused} in {refused_seconds:.2f} s = {refused / refused_seconds:,.0f}/s; "
        f"DynamoDB requests per refusal: {sum(requests.values()) / max(refused, 1):.2f} {dict(requests)}"
    )
    return {
        "lines": IN_PROCESS_LINES,
        "limit": LIMIT,
        "admitted": admitted,
        "per_reservation": round(sum(admitted_requests.values()) / admitted, 2),
        "reservation_operations": admitted_requests,
        "refused": refused,
        "per_refusal": round(sum(requests.values()) / max(refused, 1), 2),
        "refusal_operations": dict(requests),
    }


def contention() -> Figures:
    _fake_credentials()
    endpoint = AwsEndpoint(port=0).start()
    try:
        setup = boto3.session.Session()
        template.create_tables(
            setup.client("dynamodb", region_name=REGION, endpoint_url=endpoint.url), template.LocalNames(prefix="bench")
        )
        setup_table = _table(setup, endpoint.url)
        store.bind(setup_table.name, setup.client("dynamodb", region_name=REGION, endpoint_url=endpoint.url))
        tables = [_table(boto3.session.Session(), endpoint.url) for _ in range(THREADS)]
        admitted_per_round: list[int] = []
        started = time.perf_counter()
        for _ in range(ROUNDS):
            line = _new_line(setup_table, CONTENDED_LIMIT)
            admitted_per_round.append(_round(line, tables))
        seconds = time.perf_counter() - started
    finally:
        endpoint.stop()
    exact = sum(1 for admitted in admitted_per_round if admitted == CONTENDED_LIMIT)
    print(
        f"contention: {THREADS} threads (own session each, one bound client), limit {CONTENDED_LIMIT}, {ROUNDS} rounds"
    )
    print(f"  admitted per round: {admitted_per_round}")
    print(
        f"  rounds with exactly {CONTENDED_LIMIT} admitted: {exact}/{ROUNDS}; "
        f"{THREADS * ROUNDS} attempts in {seconds:.2f} s = {THREADS * ROUNDS / seconds:,.0f}/s "
        "(serialised local endpoint)"
    )
    return {"threads": THREADS, "limit": CONTENDED_LIMIT, "rounds": ROUNDS, "exact": exact}


def _round(line: str, tables: list[Any]) -> int:
    barrier = threading.Barrier(len(tables))
    outcomes: list[str] = []
    lock = threading.Lock()

    def reserve(index: int) -> None:
        repository = CallRepository(tables[index])
        attempt = _attempt(line, index)
        repository.create_attempt(attempt)
        barrier.wait()
        try:
            repository.reserve(attempt)
            outcome = "admitted"
        except LineBusy:
            outcome = "refused"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=reserve, args=(index,)) for index in range(len(tables))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes.count("admitted")


def measure() -> Figures:
    logger.setLevel("WARNING")  # the per-line "snapshot applied" lines would drown the figures
    return {"in_process": in_process(), "contention": contention()}


if __name__ == "__main__":
    measure()

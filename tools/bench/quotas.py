"""Per-tenant request rate while another tenant floods: what each tenant is served, and the
DynamoDB requests the limiter costs.

Against the local stack's serialised DynamoDB endpoint (moto server behind one lock), real
threads, each one container with its own boto3 session and `RequestLimiter`:

- tenant `flood` (20 rps, burst 40): 8 containers asking every 5 ms each (up to 1600 rps);
- tenant `steady` (50 rps, burst 100): 2 containers asking 15 times a second each (30 rps).

It prints, per tenant, requests served per second, refusals, and bucket writes per served
request, and returns them for docs/measurements.md; it asserts nothing (timings depend on the
machine). `python -m tools.bench quotas`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "layers" / "shared")]

import boto3  # noqa: E402

from devstack import template  # noqa: E402
from devstack.aws_endpoint import AwsEndpoint  # noqa: E402
from switchboard.core.buckets import Claim  # noqa: E402
from switchboard.core.errors import RateLimited  # noqa: E402
from switchboard.core.identity import Principal, Scope  # noqa: E402
from switchboard.core.observability import logger  # noqa: E402
from switchboard.quotas.domain import QuotaOverrides, Quotas  # noqa: E402
from switchboard.quotas.dynamo import DynamoBuckets  # noqa: E402
from switchboard.quotas.service import QuotaPolicies, RequestLimiter  # noqa: E402
from tools.bench.measurements import Figures  # noqa: E402

REGION = "us-east-1"
SECONDS = 6.0
FLOOD = Quotas(requests_per_second=20, burst=40, key_requests_per_second=1000, key_burst=1000, messages_per_day=0)
STEADY = FLOOD.model_copy(update={"requests_per_second": 50, "burst": 100})
STEADY_PACE = 1 / 15
FLOOD_PACE = 0.005


@dataclass
class Tally:
    served: int = 0
    refused: int = 0
    writes: int = 0


class CountingBuckets(DynamoBuckets):
    def __init__(self, table: Any, tally: Tally, lock: threading.Lock) -> None:
        super().__init__(table)
        self._tally, self._lock = tally, lock

    def take(self, tenant: str, bucket: str, claim: Claim, expires_at: int) -> int:
        with self._lock:
            self._tally.writes += 1
        return super().take(tenant, bucket, claim, expires_at)


class FixedQuotas:
    """The two tenants' quotas, as if the platform had set them."""

    def get_overrides(self, tenant: str) -> QuotaOverrides | None:
        chosen = FLOOD if tenant == "flood" else STEADY
        return QuotaOverrides(requests_per_second=chosen.requests_per_second, burst=chosen.burst)

    def put_overrides(self, tenant: str, overrides: QuotaOverrides) -> None:
        raise NotImplementedError

    def count_message_in(self, uow: Any, tenant: str, day: Any, limit: int, refused: Any) -> None:
        raise NotImplementedError  # the benchmark admits requests; it accepts no message

    def messages_on(self, tenant: str, day: Any) -> int:
        return 0


def _container(endpoint: str, table_name: str, tenant: str, pace: float, tally: Tally, *, lock: threading.Lock) -> None:
    table = boto3.session.Session().resource("dynamodb", region_name=REGION, endpoint_url=endpoint).Table(table_name)
    policies = QuotaPolicies(FixedQuotas(), FLOOD, cache_seconds=60)
    limiter = RequestLimiter(CountingBuckets(table, tally, lock), policies, allowance_seconds=1.0)
    principal = Principal(tenant=tenant, key_id=f"key_{tenant}", scopes=frozenset({Scope.SEND}))
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            limiter.admit(principal)
            with lock:
                tally.served += 1
        except RateLimited:
            with lock:
                tally.refused += 1
        if pace:
            time.sleep(max(0.0, pace - (time.monotonic() - started)))


def measure() -> Figures:
    logger.setLevel("WARNING")
    for name, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}.items():
        os.environ[name] = value
    endpoint = AwsEndpoint(port=0).start()
    try:
        names = template.LocalNames(prefix="bench-quotas")
        client = boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoint.url)
        table_name = template.create_tables(client, names)["MainTable"]
        lock = threading.Lock()
        flood, steady = Tally(), Tally()
        threads = [
            threading.Thread(
                target=_container, args=(endpoint.url, table_name, "flood", FLOOD_PACE, flood), kwargs={"lock": lock}
            )
            for _ in range(8)
        ] + [
            threading.Thread(
                target=_container, args=(endpoint.url, table_name, "steady", STEADY_PACE, steady), kwargs={"lock": lock}
            )
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        endpoint.stop()
    tenants: list[Figures] = []
    for tenant, tally, quotas in (("flood", flood, FLOOD), ("steady", steady, STEADY)):
        asked = tally.served + tally.refused
        print(
            f"{tenant:>6} (rate {quotas.requests_per_second:g}/s, burst {quotas.burst}): "
            f"asked {asked / SECONDS:.0f}/s, served {tally.served / SECONDS:.1f}/s, refused {tally.refused}, "
            f"bucket writes {tally.writes} ({tally.writes / max(1, asked):.3f} per request)"
        )
        tenants.append(
            {
                "tenant": tenant,
                "rate": quotas.requests_per_second,
                "burst": quotas.burst,
                "asked": round(asked / SECONDS, 1),
                "served": round(tally.served / SECONDS, 1),
                "refused": tally.refused,
                "writes_per_request": round(tally.writes / max(1, asked), 3),
            }
        )
    return {"seconds": SECONDS, "tenants": tenants}


if __name__ == "__main__":
    measure()

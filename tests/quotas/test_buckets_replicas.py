"""The DynamoDB buckets and daily counter shared by replicas: real threads, each with its own
boto3 session and limiter (a container), on the serialised moto server (`served_aws`), which
applies requests one at a time as DynamoDB applies conditional writes to one item."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from functools import partial
from typing import Any

import boto3
import pytest

from switchboard import bootstrap
from switchboard.core.buckets import Claim
from switchboard.core.errors import RateLimited
from switchboard.core.settings import get_settings
from switchboard.quotas.dynamo import DynamoBuckets, DynamoQuotaStore
from switchboard.quotas.service import QuotaPolicies, RequestLimiter
from tests.quotas.fakes import FakeQuotaStore, caller, quotas
from tests.support.quotas import counted_one
from tests.support.threads import at_once
from tools.support.aws import AwsResources

START = 1_800_000_000.0


def on_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    return at_once([partial(work, index) for index in range(count)])


class CountingBuckets(DynamoBuckets):
    def __init__(self, table: Any) -> None:
        super().__init__(table)
        self.writes = 0

    def take(self, tenant: str, bucket: str, claim: Claim, expires_at: int) -> int:
        self.writes += 1
        return super().take(tenant, bucket, claim, expires_at)


def own_table() -> Any:
    return boto3.session.Session().resource("dynamodb").Table(get_settings().table_name)


@pytest.fixture(autouse=True)
def bound(served_aws: AwsResources) -> None:
    """The item models are bound once per process, as a container binds them: the composition root's client
    carries every replica's writes (each replica keeps its own session, table and limiter)."""
    bootstrap.table()


def test_replicas_taking_batches_at_once_serve_exactly_the_burst_between_them(served_aws: AwsResources) -> None:
    """Eight containers drain one tenant's bucket at once, each until its first refusal: every
    token is served once and none is lost. Their clock stands still, so nothing refills; the last
    container still asking has nobody to lose a race to, so it empties the bucket."""
    burst, containers = 60, 8
    limits = quotas(rps=10, burst=burst, key_rps=1000, key_burst=10_000)  # batches of up to 6

    def drain(index: int) -> tuple[int, int]:
        buckets = CountingBuckets(own_table())
        policies = QuotaPolicies(FakeQuotaStore(), limits, cache_seconds=60)
        limiter = RequestLimiter(buckets, policies, allowance_seconds=1.0, clock=lambda: START)
        served = 0
        while True:
            try:
                limiter.admit(caller("acme", f"key_{index}"))
            except RateLimited:
                return served, buckets.writes
            served += 1

    results = on_threads(containers, drain)

    assert not [result for result in results if isinstance(result, Exception)], results
    served = sum(result[0] for result in results)
    writes = sum(result[1] for result in results)
    print(f"replicas: {containers} containers served {served} of a burst of {burst} with {writes} bucket writes")
    assert served == burst


def test_the_daily_counter_counts_exactly_the_limit_under_concurrent_sends(served_aws: AwsResources) -> None:
    limit, day = 25, date(2026, 11, 30)

    def send(index: int) -> int:
        quotas = DynamoQuotaStore(own_table())
        return sum(counted_one(quotas, "acme", day, limit) for _ in range(10))

    counted = on_threads(8, send)

    assert sum(counted) == limit
    assert DynamoQuotaStore(own_table()).messages_on("acme", day) == limit

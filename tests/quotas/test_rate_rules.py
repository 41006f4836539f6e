"""Request-rate rules on a fake clock: refill, burst, the per-container allowance and its bound,
what a flood costs, and the daily message count. The buckets are in memory with DynamoDB's
conditional-write rule (tests/quotas/fakes.py); test_buckets_replicas.py runs the real one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from switchboard.core.errors import DailyQuotaExceeded, RateLimited
from switchboard.quotas.domain import MIN_RECHECK_SECONDS, QuotaOverrides
from switchboard.quotas.service import DailySendQuota, QuotaPolicies, RequestLimiter
from tests.quotas.fakes import FAKE_UOW, FakeBuckets, FakeQuotaStore, caller, quotas
from tools.support.fakes import FakeClock

START = 1_800_000_000.0  # wall-clock seconds; the buckets store milliseconds since the epoch


def limiter(
    buckets: FakeBuckets,
    clock: FakeClock,
    *,
    rps: float,
    burst: int,
    key_rps: float | None = None,
    key_burst: int | None = None,
) -> RequestLimiter:
    """One container's limiter on the shared `buckets`."""
    limits = quotas(rps=rps, burst=burst, key_rps=key_rps, key_burst=key_burst)
    policies = QuotaPolicies(FakeQuotaStore(), limits, cache_seconds=10, clock=clock)
    return RequestLimiter(buckets, policies, allowance_seconds=1.0, clock=clock)


def admitted(container: RequestLimiter, tenant: str = "acme", key_id: str = "key_1") -> bool:
    try:
        container.admit(caller(tenant, key_id))
    except RateLimited:
        return False
    return True


def test_a_full_bucket_admits_exactly_its_burst_at_once_then_one_request_per_refilled_token() -> None:
    clock, buckets = FakeClock(START), FakeBuckets()
    container = limiter(buckets, clock, rps=10, burst=20)

    assert sum(admitted(container) for _ in range(25)) == 20
    with pytest.raises(RateLimited) as refused:
        container.admit(caller())
    assert refused.value.code == "rate_limited"
    assert refused.value.retry_after_seconds == 1  # 0.1 s until a token, rounded up to whole seconds

    clock.now += 0.25  # 2.5 tokens back
    assert sum(admitted(container) for _ in range(5)) == 2
    clock.now += 10  # long idle: the bucket is full again, never fuller
    assert sum(admitted(container) for _ in range(30)) == 20


def test_steady_traffic_under_the_rate_is_all_admitted_and_most_requests_cost_no_bucket_write() -> None:
    clock, buckets = FakeClock(START), FakeBuckets()
    container = limiter(buckets, clock, rps=50, burst=100)

    results = []
    for _ in range(400):  # 40 requests a second for 10 s
        results.append(admitted(container))
        clock.now += 0.025

    assert all(results)
    print(f"steady 40 rps on a 50 rps bucket: {buckets.writes} bucket writes for 400 requests")
    # Two buckets (the key's and the tenant's), each written once per batch of up to 10 tokens
    # (a tenth of the burst): about one request in five writes, the others are served from memory.
    assert buckets.writes <= 2 * (400 / 10) + 10


def test_containers_together_never_exceed_burst_plus_rate_plus_one_allowance_each_in_any_window() -> None:
    """Five containers flood one tenant in turn; every sliding one-second window and the whole
    run stay within burst + rate x window + one allowance per container."""
    clock, buckets = FakeClock(START), FakeBuckets()
    rate, burst = 20, 40
    containers = [limiter(buckets, clock, rps=rate, burst=burst) for _ in range(5)]
    cap = 4  # a tenth of the burst: at most this many tokens held per container
    times: list[float] = []
    for step in range(10_000):  # 10 s, a request every millisecond, container after container
        clock.now = START + step / 1000
        if admitted(containers[step % len(containers)]):
            times.append(clock.now)

    elapsed = 10.0
    assert len(times) <= burst + rate * elapsed + len(containers) * cap
    assert len(times) >= burst + rate * elapsed - len(containers) * cap  # tokens are not left unused
    window = 1.0
    for start in times:
        inside = sum(1 for at in times if start <= at < start + window)
        assert inside <= burst + rate * window + len(containers) * cap


def test_a_flood_costs_a_few_bucket_writes_a_second_not_one_per_request() -> None:
    clock, buckets = FakeClock(START), FakeBuckets()
    container = limiter(buckets, clock, rps=10, burst=20)

    refused = 0
    for step in range(5_000):  # 1000 requests a second for 5 s
        clock.now = START + step / 1000
        refused += not admitted(container)

    print(f"flood of 5000 requests on a 10 rps bucket: {buckets.writes} bucket writes, {refused} refused")
    assert refused >= 5_000 - (20 + 10 * 5)
    # Each of the two buckets is asked at most once per recheck period while it is empty.
    assert buckets.writes <= 2 * 5 / MIN_RECHECK_SECONDS + 20


def test_a_key_over_its_own_rate_leaves_the_tenants_other_keys_admitted() -> None:
    clock, buckets = FakeClock(START), FakeBuckets()
    container = limiter(buckets, clock, rps=100, burst=100, key_rps=1, key_burst=3)

    assert [admitted(container, key_id="key_1") for _ in range(4)] == [True, True, True, False]
    assert all(admitted(container, key_id="key_2") for _ in range(3))


def test_a_tenant_over_its_rate_leaves_other_tenants_admitted() -> None:
    clock, buckets = FakeClock(START), FakeBuckets()
    container = limiter(buckets, clock, rps=5, burst=5)

    assert sum(admitted(container, "flood") for _ in range(50)) == 5
    assert all(admitted(container, "quiet") for _ in range(5))


def test_a_request_the_tenant_refuses_does_not_spend_its_keys_token() -> None:
    clock, buckets = FakeClock(START), FakeBuckets()
    container = limiter(buckets, clock, rps=1, burst=2, key_rps=1, key_burst=3)

    assert [admitted(container, key_id="key_1") for _ in range(3)] == [True, True, False]  # the tenant's 2
    clock.now += 1.5  # one tenant token back; the key still holds the one it was not charged
    assert admitted(container, key_id="key_1")


def test_a_tenants_overrides_are_read_once_per_cache_period() -> None:
    clock = FakeClock(100.0)
    store = FakeQuotaStore({"acme": QuotaOverrides(burst=7)})
    policies = QuotaPolicies(store, quotas(rps=10, burst=20), cache_seconds=10, clock=clock)

    assert [policies.for_tenant("acme").burst for _ in range(50)] == [7] * 50
    assert policies.for_tenant("other").burst == 20
    assert store.reads == 2
    store.overrides["acme"] = QuotaOverrides(burst=9)
    clock.now += 10
    assert policies.for_tenant("acme").burst == 9


def test_the_days_messages_stop_at_the_limit_until_the_next_utc_day() -> None:
    now = datetime(2026, 11, 30, 23, 0, 0, tzinfo=UTC)
    store = FakeQuotaStore({"acme": QuotaOverrides(messages_per_day=3)})
    policies = QuotaPolicies(store, quotas(), cache_seconds=10)
    daily = DailySendQuota(store, policies, clock=lambda: now)

    for _ in range(3):
        daily.charge_in(FAKE_UOW, "acme")
    with pytest.raises(DailyQuotaExceeded) as refused:
        daily.charge_in(FAKE_UOW, "acme")
    assert refused.value.code == "daily_quota_exceeded"
    assert refused.value.retry_after_seconds == 3600  # until 00:00 UTC
    daily.charge_in(FAKE_UOW, "other")  # another tenant's day is its own

    now = datetime(2026, 12, 1, 0, 0, 1, tzinfo=UTC)
    daily.charge_in(FAKE_UOW, "acme")


def test_a_zero_daily_quota_refuses_every_message() -> None:
    store = FakeQuotaStore({"acme": QuotaOverrides(messages_per_day=0)})
    daily = DailySendQuota(store, QuotaPolicies(store, quotas(), cache_seconds=10))

    with pytest.raises(DailyQuotaExceeded):
        daily.charge_in(FAKE_UOW, "acme")
    assert store.days == {}

"""Quota use cases: admit an API request, count a message against the day, read and set a
tenant's quotas."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from switchboard.audit.ports import Audit
from switchboard.core.buckets import US, Bucket, BucketMoved, Rate
from switchboard.core.clock import utcnow
from switchboard.core.errors import DailyQuotaExceeded, NotFound, RateLimited
from switchboard.core.identity import Principal, Scope
from switchboard.core.observability import logger
from switchboard.quotas.domain import (
    MIN_RECHECK_SECONDS,
    Allowance,
    QuotaOverrides,
    Quotas,
    TenantQuotas,
    recheck_pause,
    retry_after_seconds,
    seconds_to_next_day,
    utc_day,
)
from switchboard.quotas.ports import Buckets, QuotaStore, Tenants

if TYPE_CHECKING:
    from switchboard.core.store import Refusal, UnitOfWork

# Claims in a row that find the bucket changed before the request is refused for a moment.
MAX_WRITE_ATTEMPTS = 4


@dataclass
class _Cached:
    quotas: Quotas
    at: float


class QuotaPolicies:
    """Each tenant's effective quotas, read at most once per `cache_seconds` per container: the
    request path then makes no read for them. A change reaches every container within that time."""

    def __init__(
        self,
        store: QuotaStore,
        defaults: Quotas,
        *,
        cache_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self.defaults = defaults
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._cache: dict[str, _Cached] = {}

    def for_tenant(self, tenant: str) -> Quotas:
        now = self._clock()
        cached = self._cache.get(tenant)
        if cached is not None and now - cached.at < self._cache_seconds:
            return cached.quotas
        overrides = self._store.get_overrides(tenant)
        quotas = self.defaults.with_overrides(overrides) if overrides else self.defaults
        self._cache[tenant] = _Cached(quotas, now)
        return quotas

    def forget(self, tenant: str) -> None:
        self._cache.pop(tenant, None)


class RequestLimiter:
    """Admits an authenticated API request against its key's bucket and its tenant's bucket.

    One limiter per container. Tokens come from the shared buckets in batches (one conditional
    write each) and are spent from memory; a refused bucket is remembered until a batch can be
    back, so a flood costs a few writes a second, not one per request.
    """

    def __init__(
        self,
        buckets: Buckets,
        policies: QuotaPolicies,
        *,
        allowance_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._buckets = buckets
        self._policies = policies
        self._allowance_seconds = allowance_seconds
        self._clock = clock  # wall clock: the buckets' timestamps are shared with other containers
        self._allowances: dict[tuple[str, str], Allowance] = {}
        self._lock = threading.Lock()

    def admit(self, principal: Principal) -> None:
        """Raises RateLimited (429, Retry-After) when the key or the tenant is over its rate."""
        quotas = self._policies.for_tenant(principal.tenant)
        with self._lock:
            key = self._allowance(principal.tenant, f"key#{principal.key_id}")
            self._take(principal.tenant, f"key#{principal.key_id}", key, quotas.key_rate, "this API key")
            try:
                tenant = self._allowance(principal.tenant, "tenant")
                self._take(principal.tenant, "tenant", tenant, quotas.tenant_rate, "this tenant")
            except RateLimited:
                key.tokens += 1  # the request was not served: the key's token stays with this container
                raise

    def _allowance(self, tenant: str, bucket: str) -> Allowance:
        return self._allowances.setdefault((tenant, bucket), Allowance())

    def _take(self, tenant: str, name: str, allowance: Allowance, rate: Rate, whose: str) -> None:
        now = self._clock()
        if allowance.spend(now):
            return
        wait = allowance.wait(now)
        if wait is not None:
            raise _limited(whose, wait)
        bucket = Bucket.of(rate)
        cap = rate.batch_cap(self._allowance_seconds)
        wanted = allowance.next_batch(now, cap, self._allowance_seconds)
        now_us, tat = int(now * US), allowance.known
        for lost in range(MAX_WRITE_ATTEMPTS):
            claim = bucket.claim(tat, now_us, wanted)
            if claim is None:
                allowance.known = tat
                logger.info("rate limited", extra={"tenant": tenant, "bucket": name.partition("#")[0]})
                pause = recheck_pause(bucket, tat, now_us, cap, lost=lost > 0)
                raise _limited(whose, allowance.empty(now, pause))
            try:
                allowance.known = self._buckets.take(tenant, name, claim, bucket.expires(now_us))
            except BucketMoved as moved:
                tat = moved.current
                continue
            allowance.granted(claim.count, now, self._allowance_seconds)
            return
        # Every attempt found the bucket changed by other containers: it is busy, try a bit later.
        allowance.known = tat
        raise _limited(whose, allowance.empty(now, MIN_RECHECK_SECONDS))


def _limited(whose: str, wait: float) -> RateLimited:
    return RateLimited(f"too many requests for {whose}; retry later", retry_after_seconds=retry_after_seconds(wait))


class DailySendQuota:
    """Counts each accepted message against its tenant's messages for the UTC day."""

    def __init__(self, store: QuotaStore, policies: QuotaPolicies, *, clock: Callable[[], datetime] = utcnow) -> None:
        self._store = store
        self._policies = policies
        self._clock = clock

    def charge_in(self, uow: UnitOfWork, tenant: str) -> None:
        """Join the count of one message to `uow`, the write that accepts it: the message and its
        count are stored together or not at all. Raises DailyQuotaExceeded (429, Retry-After: the
        next UTC day) at once for a zero quota, else from the commit when the day is spent."""
        limit = self._policies.for_tenant(tenant).messages_per_day
        now = self._clock()

        def spent(_refusal: Refusal | None = None) -> DailyQuotaExceeded:
            logger.info("daily quota exceeded", extra={"tenant": tenant, "limit": limit})
            return DailyQuotaExceeded(
                f"this tenant's {limit} messages for today (UTC) are spent",
                retry_after_seconds=seconds_to_next_day(now),
            )

        if limit <= 0:
            raise spent()
        self._store.count_message_in(uow, tenant, utc_day(now), limit, refused=spent)


@dataclass(frozen=True)
class QuotaReport:
    quotas: Quotas
    overrides: QuotaOverrides
    messages_today: int


class QuotaService:
    """A tenant's quotas as the API shows and changes them. Only the platform changes them."""

    def __init__(
        self,
        store: QuotaStore,
        policies: QuotaPolicies,
        tenants: Tenants,
        audit: Audit,
        *,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._policies = policies
        self._tenants = tenants
        self._audit = audit
        self._clock = clock

    def get(self, principal: Principal, tenant: str) -> QuotaReport:
        """Raises NotFound for an unknown tenant, or another tenant's (an admin reads only its own)."""
        if not principal.has(Scope.PLATFORM) and principal.tenant != tenant:
            raise NotFound("tenant not found")
        self._tenants.get_tenant(tenant)
        overrides = self._store.get_overrides(tenant) or QuotaOverrides()
        return self._report(tenant, overrides)

    def put(self, principal: Principal, tenant: str, overrides: QuotaOverrides) -> QuotaReport:
        """Replace the tenant's overrides (a `None` field takes the default), audited. Every
        container applies them within the policy cache time."""
        self._tenants.get_tenant(tenant)
        before = self._store.get_overrides(tenant)
        self._store.put_overrides(tenant, overrides)
        self._audit.record(
            principal,
            "quotas.updated",
            tenant,
            before=TenantQuotas(tenant=tenant, overrides=before) if before else None,
            after=TenantQuotas(tenant=tenant, overrides=overrides),
        )
        self._policies.forget(tenant)
        return self._report(tenant, overrides)

    def _report(self, tenant: str, overrides: QuotaOverrides) -> QuotaReport:
        return QuotaReport(
            quotas=self._policies.defaults.with_overrides(overrides),
            overrides=overrides,
            messages_today=self._store.messages_on(tenant, utc_day(self._clock())),
        )

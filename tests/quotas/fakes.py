"""In-memory fakes of the quota ports, with the same conditional-write rules as the DynamoDB ones."""

from __future__ import annotations

import threading
from datetime import date
from typing import cast

from switchboard.core.buckets import BucketMoved, Claim
from switchboard.core.identity import Principal, Scope
from switchboard.core.store import CONDITION_FAILED, Refusal, Refused, UnitOfWork
from switchboard.quotas.domain import QuotaOverrides, Quotas


class FakeBuckets:
    """`quotas.ports.Buckets`: one `tat` per bucket, a claim applied only under the conditions the
    DynamoDB one writes (idle: `tat <= now`; busy: `now < tat <= limit`).

    `writes` counts every take asked for (the DynamoDB requests a real store would receive).
    """

    def __init__(self) -> None:
        self.tats: dict[tuple[str, str], int] = {}
        self.writes = 0
        self._lock = threading.Lock()

    def take(self, tenant: str, bucket: str, claim: Claim, expires_at: int) -> int:
        with self._lock:
            self.writes += 1
            tat = self.tats.get((tenant, bucket))
            if claim.idle and (tat is None or tat <= claim.now):
                self.tats[(tenant, bucket)] = claim.now + claim.add
            elif not claim.idle and tat is not None and claim.now < tat <= claim.limit:
                self.tats[(tenant, bucket)] = tat + claim.add
            else:
                raise BucketMoved(tat)
            return self.tats[(tenant, bucket)]


# What a fake store's joined counts are handed: it counts at once, so no unit of work is used.
FAKE_UOW = cast("UnitOfWork", None)


class FakeQuotaStore:
    """`quotas.ports.QuotaStore`: overrides and daily counts in dictionaries."""

    def __init__(self, overrides: dict[str, QuotaOverrides] | None = None) -> None:
        self.overrides = dict(overrides or {})
        self.days: dict[tuple[str, date], int] = {}
        self.reads = 0

    def get_overrides(self, tenant: str) -> QuotaOverrides | None:
        self.reads += 1
        return self.overrides.get(tenant)

    def put_overrides(self, tenant: str, overrides: QuotaOverrides) -> None:
        self.overrides[tenant] = overrides

    def count_message_in(self, uow: UnitOfWork, tenant: str, day: date, limit: int, refused: Refused) -> None:
        """Counted at once (the fake has no transaction to commit), or refused as the commit would be."""
        sent = self.days.get((tenant, day), 0)
        if sent >= limit:
            raise refused if isinstance(refused, BaseException) else refused(Refusal(CONDITION_FAILED))
        self.days[(tenant, day)] = sent + 1

    def messages_on(self, tenant: str, day: date) -> int:
        return self.days.get((tenant, day), 0)


def quotas(rps: float = 10, burst: int = 20, key_rps: float | None = None, key_burst: int | None = None) -> Quotas:
    """Quotas where, unless given, the key's rate is the tenant's (so the tenant bucket decides)."""
    return Quotas(
        requests_per_second=rps,
        burst=burst,
        key_requests_per_second=key_rps if key_rps is not None else rps,
        key_burst=key_burst if key_burst is not None else burst,
        messages_per_day=1000,
    )


def caller(tenant: str = "acme", key_id: str = "key_1") -> Principal:
    return Principal(tenant=tenant, key_id=key_id, scopes=frozenset({Scope.SEND}))

"""What the quota services need from storage."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Protocol

from switchboard.catalog.domain import Tenant
from switchboard.core.buckets import Claim
from switchboard.quotas.domain import QuotaOverrides

if TYPE_CHECKING:
    from switchboard.core.store import Refused, UnitOfWork


class Tenants(Protocol):
    def get_tenant(self, owner_tag: str) -> Tenant:
        """Raises NotFound for an unknown tenant."""
        ...


class Buckets(Protocol):
    def take(self, tenant: str, bucket: str, claim: Claim, expires_at: int) -> int:
        """Apply the claim in one conditional write; the bucket's new `tat`. Raises BucketMoved."""
        ...


class QuotaStore(Protocol):
    def get_overrides(self, tenant: str) -> QuotaOverrides | None: ...

    def put_overrides(self, tenant: str, overrides: QuotaOverrides) -> None: ...

    def count_message_in(self, uow: UnitOfWork, tenant: str, day: date, limit: int, refused: Refused) -> None:
        """Join to `uow` the count of one message on `day`, made only if fewer than `limit` are
        counted; a full day makes the commit raise `refused`."""
        ...

    def messages_on(self, tenant: str, day: date) -> int: ...

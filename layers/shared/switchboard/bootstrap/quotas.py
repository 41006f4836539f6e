"""Builds the quota store, the per-container request limiter and the quota services once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import table

if TYPE_CHECKING:
    from switchboard.quotas.domain import Quotas
    from switchboard.quotas.dynamo import DynamoQuotaStore
    from switchboard.quotas.service import DailySendQuota, QuotaPolicies, QuotaService, RequestLimiter


def default_quotas(c: Components) -> Quotas:
    from switchboard.quotas.domain import Quotas

    settings = c.settings
    return Quotas(
        requests_per_second=settings.quota_tenant_rps,
        burst=settings.quota_tenant_burst,
        key_requests_per_second=settings.quota_key_rps,
        key_burst=settings.quota_key_burst,
        messages_per_day=settings.quota_messages_per_day,
    )


@component
def quota_store(c: Components) -> DynamoQuotaStore:
    from switchboard.quotas.dynamo import DynamoQuotaStore

    return DynamoQuotaStore(table(c))


@component
def quota_policies(c: Components) -> QuotaPolicies:
    from switchboard.quotas.service import QuotaPolicies

    return QuotaPolicies(quota_store(c), default_quotas(c), cache_seconds=c.settings.quota_config_cache_seconds)


@component
def request_limiter(c: Components) -> RequestLimiter:
    """One per container: its allowances are this container's share of each bucket."""
    from switchboard.quotas.dynamo import DynamoBuckets
    from switchboard.quotas.service import RequestLimiter

    return RequestLimiter(
        DynamoBuckets(table(c)), quota_policies(c), allowance_seconds=c.settings.quota_allowance_seconds
    )


@component
def daily_send_quota(c: Components) -> DailySendQuota:
    from switchboard.quotas.service import DailySendQuota

    return DailySendQuota(quota_store(c), quota_policies(c))


@component
def quota_service(c: Components) -> QuotaService:
    from switchboard.quotas.service import QuotaService

    return QuotaService(quota_store(c), quota_policies(c), catalog_repository(c), audit_log(c))

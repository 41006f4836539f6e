"""Builds the quota store, the per-container request limiter and the quota services once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.audit.wiring import audit_log
from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import table

if TYPE_CHECKING:
    from switchboard.quotas.domain import Quotas
    from switchboard.quotas.dynamo import DynamoQuotaStore
    from switchboard.quotas.service import DailySendQuota, QuotaPolicies, QuotaService, RequestLimiter


def default_quotas() -> Quotas:
    from switchboard.quotas.domain import Quotas

    settings = get_settings()
    return Quotas(
        requests_per_second=settings.quota_tenant_rps,
        burst=settings.quota_tenant_burst,
        key_requests_per_second=settings.quota_key_rps,
        key_burst=settings.quota_key_burst,
        messages_per_day=settings.quota_messages_per_day,
    )


@component
def quota_store() -> DynamoQuotaStore:
    from switchboard.quotas.dynamo import DynamoQuotaStore

    return DynamoQuotaStore(table())


@component
def quota_policies() -> QuotaPolicies:
    from switchboard.quotas.service import QuotaPolicies

    return QuotaPolicies(quota_store(), default_quotas(), cache_seconds=get_settings().quota_config_cache_seconds)


@component
def request_limiter() -> RequestLimiter:
    """One per container: its allowances are this container's share of each bucket."""
    from switchboard.quotas.dynamo import DynamoBuckets
    from switchboard.quotas.service import RequestLimiter

    return RequestLimiter(
        DynamoBuckets(table()), quota_policies(), allowance_seconds=get_settings().quota_allowance_seconds
    )


@component
def daily_send_quota() -> DailySendQuota:
    from switchboard.quotas.service import DailySendQuota

    return DailySendQuota(quota_store(), quota_policies())


@component
def quota_service() -> QuotaService:
    from switchboard.quotas.service import QuotaService

    return QuotaService(quota_store(), quota_policies(), catalog_repository(), audit_log())

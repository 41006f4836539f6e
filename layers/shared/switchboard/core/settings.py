"""Configuration, read from the environment once per container and validated at cold start.

Every setting a function does not use may be absent; a function that needs one it lacks
fails at its first use with a clear message rather than half-working.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Annotated

from pydantic import BeforeValidator, ConfigDict, Field, IPvAnyNetwork

from switchboard.core.model import Model


def _comma_separated(value: object) -> object:
    return [entry.strip() for entry in value.split(",") if entry.strip()] if isinstance(value, str) else value


class Settings(Model):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    # The region, read as the AWS CLI and Lambda's runtime read it: AWS_REGION first (boto3 alone
    # reads only AWS_DEFAULT_REGION, which boto3 still falls back to when this is unset).
    aws_region: Annotated[str | None, BeforeValidator(lambda value: value or None)] = Field(
        default=None, alias="AWS_REGION"
    )
    table_name: str = Field(default="switchboard", alias="TABLE_NAME")
    idempotency_table_name: str = Field(default="switchboard-idempotency", alias="IDEMPOTENCY_TABLE_NAME")
    secrets_prefix: str = Field(default="/switchboard", alias="SECRETS_PREFIX")
    send_queue_url: str | None = Field(default=None, alias="SEND_QUEUE_URL")
    forward_queue_url: str | None = Field(default=None, alias="FORWARD_QUEUE_URL")
    client_webhook_queue_url: str | None = Field(default=None, alias="CLIENT_WEBHOOK_QUEUE_URL")
    reconcile_queue_url: str | None = Field(default=None, alias="RECONCILE_QUEUE_URL")
    media_bucket: str | None = Field(default=None, alias="MEDIA_BUCKET")  # customers' files (claim check)
    event_bus_name: str | None = Field(default=None, alias="EVENT_BUS_NAME")
    public_base_url: str | None = Field(default=None, alias="PUBLIC_BASE_URL")
    # Live updates: the WebSocket URL browsers open, and the @connections endpoint the notifier posts to.
    live_url: str | None = Field(default=None, alias="LIVE_URL")
    live_management_url: str | None = Field(default=None, alias="LIVE_MANAGEMENT_URL")
    downstream_base_url: str | None = Field(default=None, alias="DOWNSTREAM_BASE_URL")
    downstream_account_id: str | None = Field(default=None, alias="DOWNSTREAM_ACCOUNT_ID")
    downstream_inbox_id: str | None = Field(default=None, alias="DOWNSTREAM_INBOX_ID")
    downstream_api_token_parameter: str | None = Field(default=None, alias="DOWNSTREAM_API_TOKEN_PARAMETER")
    local_mode: bool = Field(default=False, alias="LOCAL_MODE")
    # Networks outbound calls may reach besides public addresses (`10.0.0.0/8,fd00::/8`).
    outbound_allowed_cidrs: Annotated[tuple[IPvAnyNetwork, ...], BeforeValidator(_comma_separated)] = Field(
        default=(), alias="OUTBOUND_ALLOWED_CIDRS"
    )
    provider_timeout_seconds: float = Field(default=10.0, gt=0, le=60, alias="PROVIDER_TIMEOUT_SECONDS")
    # The Graph API version of every Meta Cloud API call. v25.0 was released on 18 February 2026
    # and is available until 29 July 2028; move it forward before then (Meta's changelog lists
    # each version's end).
    meta_graph_version: str = Field(default="v25.0", pattern=r"^v[0-9]{1,3}\.[0-9]$", alias="META_GRAPH_VERSION")
    secret_cache_seconds: int = Field(default=60, ge=0, alias="SECRET_CACHE_SECONDS")
    # People: the Cognito user pool and the console's app client. The issuer is the pool's URL
    # unless given (the local stack's pool has moto's); the JWKS URL is the issuer's unless given
    # (the local stack serves it from its embedded endpoint).
    user_pool_id: str | None = Field(default=None, alias="USER_POOL_ID")
    user_pool_client_id: str | None = Field(default=None, alias="USER_POOL_CLIENT_ID")
    user_pool_issuer: str | None = Field(default=None, alias="USER_POOL_ISSUER")
    user_pool_jwks_url: str | None = Field(default=None, alias="USER_POOL_JWKS_URL")
    # How long the authorizer answers a key from memory: the bound on a revocation's delay.
    key_cache_seconds: float = Field(default=5.0, ge=0, le=30, alias="KEY_CACHE_SECONDS")
    # Number pool: how stale a key's pool and its numbers' connection state may be.
    pool_config_cache_seconds: float = Field(default=5.0, ge=0, le=30, alias="POOL_CONFIG_CACHE_SECONDS")
    # Items a key's round-robin counter is spread over: one DynamoDB item takes ~1,000 writes/s,
    # so 10 shards carry ~10,000 affinity misses/s per API key.
    pool_ticket_shards: int = Field(default=1, ge=1, le=100, alias="POOL_TICKET_SHARDS")
    # Keep equal to the SendQueue's maxReceiveCount: the last attempt ends FAILED, not in the DLQ.
    send_max_attempts: int = Field(default=5, ge=1, le=20, alias="SEND_MAX_ATTEMPTS")
    # Keep equal to the ClientWebhookQueue's maxReceiveCount: a delivery whose last attempt fails
    # is recorded `failed` in the delivery log (replayable from there), not left in the DLQ.
    client_webhook_max_attempts: int = Field(default=8, ge=1, le=20, alias="CLIENT_WEBHOOK_MAX_ATTEMPTS")
    # The first retry's delay; each later one doubles it, up to SQS's 15 minutes.
    client_webhook_retry_seconds: int = Field(default=30, ge=0, le=900, alias="CLIENT_WEBHOOK_RETRY_SECONDS")
    # An instance disconnected or paused longer than this counts in the `InstancesDown` gauge (its alarm).
    instance_down_minutes: int = Field(default=15, ge=1, le=1440, alias="INSTANCE_DOWN_MINUTES")
    outbox_validity_seconds: int = Field(default=4 * 3600, ge=60, alias="OUTBOX_VALIDITY_SECONDS")
    # Quotas every tenant gets unless the platform overrides them (PUT /api/tenants/{tag}/quotas).
    # Request rates are token buckets: `*_rps` tokens a second, at most `*_burst` held.
    quota_tenant_rps: float = Field(default=50.0, gt=0, alias="QUOTA_TENANT_RPS")
    quota_tenant_burst: int = Field(default=300, ge=1, alias="QUOTA_TENANT_BURST")
    quota_key_rps: float = Field(default=25.0, gt=0, alias="QUOTA_KEY_RPS")
    quota_key_burst: int = Field(default=150, ge=1, alias="QUOTA_KEY_BURST")
    quota_messages_per_day: int = Field(default=100_000, ge=0, alias="QUOTA_MESSAGES_PER_DAY")
    # How long a container serves request tokens from memory before they go stale, and how
    # stale a tenant's quotas may be in a container after the platform changes them.
    quota_allowance_seconds: float = Field(default=1.0, gt=0, le=10, alias="QUOTA_ALLOWANCE_SECONDS")
    quota_config_cache_seconds: float = Field(default=10.0, ge=0, le=60, alias="QUOTA_CONFIG_CACHE_SECONDS")
    # Ban watch (health/domain.py): how long a provider's signal keeps an instance paused or in
    # warning, the velocity and delivery thresholds, and how stale a container's copy may be.
    health_cache_seconds: float = Field(default=5.0, ge=0, le=60, alias="HEALTH_CACHE_SECONDS")
    health_timelock_pause_seconds: int = Field(default=6 * 3600, ge=0, alias="HEALTH_TIMELOCK_PAUSE_SECONDS")
    health_throughput_pause_seconds: int = Field(default=300, ge=0, alias="HEALTH_THROUGHPUT_PAUSE_SECONDS")
    health_pair_rate_warning_seconds: int = Field(default=600, ge=0, alias="HEALTH_PAIR_RATE_WARNING_SECONDS")
    health_ecosystem_warning_seconds: int = Field(default=3600, ge=0, alias="HEALTH_ECOSYSTEM_WARNING_SECONDS")
    health_max_sends_per_minute: int = Field(default=30, ge=1, alias="HEALTH_MAX_SENDS_PER_MINUTE")
    health_max_sends_per_hour: int = Field(default=600, ge=1, alias="HEALTH_MAX_SENDS_PER_HOUR")
    health_delivery_window: int = Field(default=50, ge=1, alias="HEALTH_DELIVERY_WINDOW")
    health_min_delivery_ratio: float = Field(default=0.5, ge=0, le=1, alias="HEALTH_MIN_DELIVERY_RATIO")
    # Diversity: the sample of recent sends (recipient and text hashes, one slot each) and the
    # share of distinct texts under which the same text to many people is a warning.
    health_diversity_sample: int = Field(default=50, ge=1, le=500, alias="HEALTH_DIVERSITY_SAMPLE")
    health_min_text_diversity: float = Field(default=0.1, ge=0, le=1, alias="HEALTH_MIN_TEXT_DIVERSITY")
    # Pacing per number (health/pacing.py): messages a minute (0: off) and burst, and the new
    # contacts a day: on the number's first day, added each day after, at most.
    pacing_messages_per_minute: float = Field(default=0, ge=0, alias="PACING_MESSAGES_PER_MINUTE")
    pacing_burst: int = Field(default=5, ge=1, alias="PACING_BURST")
    pacing_new_contacts_first_day: int = Field(default=20, ge=0, alias="PACING_NEW_CONTACTS_FIRST_DAY")
    pacing_new_contacts_step: int = Field(default=20, ge=0, alias="PACING_NEW_CONTACTS_STEP")
    pacing_new_contacts_max: int = Field(default=200, ge=0, alias="PACING_NEW_CONTACTS_MAX")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    known = {field.alias for field in Settings.model_fields.values() if field.alias}
    return Settings.model_validate({name: value for name, value in os.environ.items() if name in known})

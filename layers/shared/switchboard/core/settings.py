"""Configuration, read from the environment once per container and validated at cold start.

Every setting a function does not use may be absent; a function that needs one it lacks
fails at its first use with a clear message rather than half-working.
"""

from __future__ import annotations

import os
from functools import lru_cache

from pydantic import ConfigDict, Field

from switchboard.core.model import Model


class Settings(Model):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    table_name: str = Field(default="switchboard", alias="TABLE_NAME")
    idempotency_table_name: str = Field(default="switchboard-idempotency", alias="IDEMPOTENCY_TABLE_NAME")
    secrets_prefix: str = Field(default="/switchboard", alias="SECRETS_PREFIX")
    send_queue_url: str | None = Field(default=None, alias="SEND_QUEUE_URL")
    forward_queue_url: str | None = Field(default=None, alias="FORWARD_QUEUE_URL")
    client_webhook_queue_url: str | None = Field(default=None, alias="CLIENT_WEBHOOK_QUEUE_URL")
    reconcile_queue_url: str | None = Field(default=None, alias="RECONCILE_QUEUE_URL")
    event_bus_name: str | None = Field(default=None, alias="EVENT_BUS_NAME")
    public_base_url: str | None = Field(default=None, alias="PUBLIC_BASE_URL")
    downstream_base_url: str | None = Field(default=None, alias="DOWNSTREAM_BASE_URL")
    downstream_account_id: str | None = Field(default=None, alias="DOWNSTREAM_ACCOUNT_ID")
    downstream_inbox_id: str | None = Field(default=None, alias="DOWNSTREAM_INBOX_ID")
    downstream_api_token_parameter: str | None = Field(default=None, alias="DOWNSTREAM_API_TOKEN_PARAMETER")
    local_mode: bool = Field(default=False, alias="LOCAL_MODE")
    provider_timeout_seconds: float = Field(default=10.0, gt=0, le=60, alias="PROVIDER_TIMEOUT_SECONDS")
    secret_cache_seconds: int = Field(default=60, ge=0, alias="SECRET_CACHE_SECONDS")
    # Number pool: how stale a key's pool and its numbers' connection state may be.
    pool_config_cache_seconds: float = Field(default=5.0, ge=0, le=30, alias="POOL_CONFIG_CACHE_SECONDS")
    # Keep equal to the SendQueue's maxReceiveCount: the last attempt ends FAILED, not in the DLQ.
    send_max_attempts: int = Field(default=5, ge=1, le=20, alias="SEND_MAX_ATTEMPTS")
    outbox_validity_seconds: int = Field(default=4 * 3600, ge=60, alias="OUTBOX_VALIDITY_SECONDS")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    known = {field.alias for field in Settings.model_fields.values() if field.alias}
    return Settings.model_validate({name: value for name, value in os.environ.items() if name in known})

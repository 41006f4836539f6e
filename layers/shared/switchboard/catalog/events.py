"""A provider's webhook event bound to our instance: what every capability that reacts to provider
events receives from the ingest (webhooks/events.py), once the delivery's signature and its
instance binding were verified. It lives with the catalog because it carries the instance record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from switchboard.catalog.domain import Instance
from switchboard.core.model import Model


class ProviderEvent(Model):
    model_config = ConfigDict(frozen=True)

    provider_id: str
    instance: Instance  # our instance record the envelope's instanceId is bound to
    name: str  # envelope `event` (e.g. message, connection, call, call_settings)
    event_id: str
    seq: int | None = None  # per-instance order of the provider's events
    data: dict[str, Any] = Field(default_factory=dict)
    envelope_instance: dict[str, Any] | None = None  # top-level `instance` object (connection events)
    received_at: datetime

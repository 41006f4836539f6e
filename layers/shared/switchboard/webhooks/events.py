"""Provider webhook events, after the signature and the instance binding were verified.

The ingest turns each event of an authentic delivery into a `ProviderEvent` and hands it to
every `EffectHandler` registered for its name. Handlers must be idempotent: the ingest may run
them again for the same event (a redelivery of an event whose effects were not all applied),
and they guard their own state with `seq` or the config version so that an older event never
overwrites a newer state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field

from switchboard.catalog.domain import Instance
from switchboard.core.model import Model

EventStatus = Literal["pending", "applied", "ignored"]


class StoredEvent(Model):
    provider_id: str
    provider_instance_id: str
    instance_name: str
    name: str
    event_id: str
    seq: int | None = None
    data: dict[str, Any]
    envelope_instance: dict[str, Any] | None = None
    received_at: datetime
    status: EventStatus = "pending"
    reason: str | None = None  # why an `ignored` event is not applied


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


class EffectHandler(Protocol):
    def __call__(self, event: ProviderEvent) -> None: ...

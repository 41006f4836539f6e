"""Signed provider webhooks: verify, bind, deduplicate durably, then run the effects.

The order of checks is fixed: size (413) before any hashing, then timestamp, signature header
shape, provider and signature (all 401 with one body), then the JSON envelope and the binding of
its `instanceId` to one of our instances (4xx). Nothing is stored before all of them pass.

Durability: a webhook is acknowledged only after its effect is durable. The dedupe marker and a
pending event record are written in one transaction; the effects run after that commit and the
record is then marked applied. A failure
in between answers 5xx and leaves the record pending: the provider's redelivery (same eventId)
finds the marker, claims the record and runs the idempotent effects again; a sweep
(`reapply_pending`) does the same for events the provider gave up on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field, ValidationError

from switchboard.catalog.domain import Instance, Provider
from switchboard.catalog.service import provider_secret_name
from switchboard.core.errors import EventInFlight, EventNotApplied, InvalidInput, NotFound, SwitchboardError
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.core.ports import Secrets
from switchboard.routing.records import EventStatus, StoredEvent
from switchboard.webhooks import signatures
from switchboard.webhooks.events import EffectHandler, ProviderEvent

LEASE_SECONDS = 20
FRESH_SECRET_INTERVAL_SECONDS = 10.0
Outcome = Literal["applied", "duplicate", "ignored"]


class Envelope(Model):
    """The signed body. Identifiers used for dedupe and binding come from here only."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    event: str = Field(min_length=1, max_length=64)
    event_id: str = Field(alias="eventId", min_length=1, max_length=128)
    instance_id: str = Field(alias="instanceId", min_length=1, max_length=128)
    seq: int | None = Field(default=None, ge=0, lt=2**63)
    data: dict[str, Any] = Field(default_factory=dict)
    instance: dict[str, Any] | None = None


class IngestResult(Model):
    outcome: Outcome
    instance: str | None = None
    event: str | None = None


class CatalogReader(Protocol):
    def find_provider(self, provider_id: str) -> Provider | None: ...
    def instance_for_binding(self, provider_id: str, provider_instance_id: str) -> Instance | None: ...
    def find_instance(self, name: str) -> Instance | None: ...


class EventRepository(Protocol):
    def accept(self, event: StoredEvent, lease_seconds: int) -> bool: ...
    def claim(self, event: StoredEvent, now: datetime, lease_seconds: int) -> StoredEvent | EventStatus | None: ...
    def mark_applied(self, event: StoredEvent, now: datetime) -> None: ...
    def release(self, event: StoredEvent) -> None: ...
    def pending(self, received_before: datetime, limit: int) -> list[StoredEvent]: ...


class IngestService:
    def __init__(
        self,
        catalog: CatalogReader,
        secrets: Secrets,
        events: EventRepository,
        handlers: Mapping[str, list[EffectHandler]],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._catalog = catalog
        self._secrets = secrets
        self._events = events
        self._handlers = handlers
        self._clock = clock
        self._fresh_reads: dict[str, float] = {}

    def receive(self, provider_id: str, timestamp: str | None, signature: str | None, body: bytes) -> IngestResult:
        """Verify and apply one delivery.

        Raises PayloadTooLarge (413), Unauthenticated (401), InvalidInput (400), NotFound (404),
        EventInFlight (409) and EventNotApplied (5xx); only a 2xx result means the event is durable.
        """
        signatures.check_size(body)
        now = self._clock()
        stamp = signatures.check_timestamp(timestamp, now.timestamp())
        digests = signatures.signature_entries(signature)
        provider = self._catalog.find_provider(provider_id)
        if provider is None or not self._signed_by(provider, stamp, body, digests):
            raise signatures.refused()
        envelope = _envelope(body)
        instance = self._catalog.instance_for_binding(provider.id, envelope.instance_id)
        if instance is None or instance.tenant != provider.tenant:
            raise NotFound("unknown instance for this provider", code="unknown_instance")
        if envelope.event not in self._handlers:
            logger.info("webhook event ignored", extra={"instance": instance.name, "event": envelope.event})
            return IngestResult(outcome="ignored", instance=instance.name, event=envelope.event)
        stored = StoredEvent(
            provider_id=provider.id,
            provider_instance_id=envelope.instance_id,
            instance_name=instance.name,
            name=envelope.event,
            event_id=envelope.event_id,
            seq=envelope.seq,
            data=envelope.data,
            envelope_instance=envelope.instance,
            received_at=now,
        )
        try:
            accepted = self._events.accept(stored, LEASE_SECONDS)
        except Exception as exc:
            logger.warning("webhook not stored", extra={"instance": instance.name, "error": type(exc).__name__})
            raise EventNotApplied("the event could not be stored; retry") from exc
        if not accepted:
            return self._redelivered(stored, instance, now)
        self._apply(stored, instance)
        return IngestResult(outcome="applied", instance=instance.name, event=stored.name)

    def reapply_pending(self, older_than: timedelta = timedelta(minutes=2), limit: int = 100) -> int:
        """Apply events left pending (a crash, or a provider that stopped retrying). Returns how many."""
        now = self._clock()
        applied = 0
        for candidate in self._events.pending(now - older_than, limit):
            stored = self._events.claim(candidate, now, LEASE_SECONDS)
            if not isinstance(stored, StoredEvent):
                continue
            instance = self._catalog.find_instance(stored.instance_name)
            if instance is None:
                logger.info("pending event of a deleted instance dropped", extra={"event_id": stored.event_id})
                self._events.mark_applied(stored, now)
                continue
            try:
                self._apply(stored, instance)
            except EventNotApplied:
                continue
            applied += 1
        return applied

    # --- steps ---------------------------------------------------------------------------

    def _signed_by(self, provider: Provider, stamp: str, body: bytes, digests: list[str]) -> bool:
        """Check with the cached secret; on a mismatch re-read it once (a rotation), rate-limited
        per provider so forged requests cannot turn into a flood of secret-store reads."""
        name = provider_secret_name(self._secrets, provider.id, "webhook-secret")
        if signatures.matches(self._secrets.get(name), stamp, body, digests):
            return True
        last = self._fresh_reads.get(provider.id, 0.0)
        if time.monotonic() - last < FRESH_SECRET_INTERVAL_SECONDS:
            return False
        self._fresh_reads[provider.id] = time.monotonic()
        return signatures.matches(self._secrets.get(name, fresh=True), stamp, body, digests)

    def _redelivered(self, stored: StoredEvent, instance: Instance, now: datetime) -> IngestResult:
        claimed = self._events.claim(stored, now, LEASE_SECONDS)
        if isinstance(claimed, StoredEvent):
            logger.info("pending event re-applied", extra={"instance": instance.name, "event_id": stored.event_id})
            self._apply(claimed, instance)
            return IngestResult(outcome="applied", instance=instance.name, event=stored.name)
        if claimed == "applied":
            return IngestResult(outcome="duplicate", instance=instance.name, event=stored.name)
        raise EventInFlight("this event is being applied by another delivery; retry later")

    def _apply(self, stored: StoredEvent, instance: Instance) -> None:
        event = ProviderEvent(
            provider_id=stored.provider_id,
            instance=instance,
            name=stored.name,
            event_id=stored.event_id,
            seq=stored.seq,
            data=stored.data,
            envelope_instance=stored.envelope_instance,
            received_at=stored.received_at,
        )
        try:
            for handler in self._handlers.get(stored.name, []):
                handler(event)
            self._events.mark_applied(stored, self._clock())
        except Exception as exc:
            error = exc.code if isinstance(exc, SwitchboardError) else type(exc).__name__
            logger.warning(
                "webhook effects failed; left pending",
                extra={"instance": instance.name, "event": stored.name, "event_id": stored.event_id, "error": error},
            )
            self._give_back(stored)
            raise EventNotApplied("the event's effects did not all run; retry") from exc

    def _give_back(self, stored: StoredEvent) -> None:
        try:
            self._events.release(stored)
        except Exception as exc:  # the lease then simply runs out
            logger.warning("event lease not released", extra={"event_id": stored.event_id, "error": type(exc).__name__})


def _envelope(body: bytes) -> Envelope:
    try:
        return Envelope.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        raise InvalidInput("the signed body is not a valid event envelope", code="invalid_envelope") from exc

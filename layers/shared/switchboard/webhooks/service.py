"""Provider webhooks: authenticate, bind, deduplicate durably, then run the effects.

Each provider kind authenticates its own deliveries and maps its payloads to our events
(`switchboard.providers.kinds`). The order of checks is fixed: size (413) before any hashing,
then the provider and the kind's authentication (all 401 with one body), then the payload
(400) and the binding of each event to one of our instances (404). Nothing is stored before
all of them pass.

Durability: a webhook is acknowledged only after its effect is durable. The dedupe marker and a
pending event record are written in one transaction; the effects run after that commit and the
record is then marked applied. A failure in between answers 5xx and leaves the record pending:
the provider's redelivery (same event id) finds the marker, claims the record and runs the
idempotent effects again; a sweep (`reapply_pending`) does the same for events the provider gave
up on. An event the kind could not map is recorded as `ignored` with its reason and never applied.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

from switchboard.catalog.domain import Instance, Provider
from switchboard.catalog.service import instance_token_name, provider_secret_name
from switchboard.core.errors import EventNotApplied, NotFound, SwitchboardError, Unauthenticated
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.core.ports import Secrets
from switchboard.providers import envelope
from switchboard.providers.base import InboundEvent, ProviderKindSpec, WebhookRequest
from switchboard.providers.kinds import spec_for
from switchboard.webhooks.events import EffectHandler, EventStatus, ProviderEvent, StoredEvent

LEASE_SECONDS = 20
FRESH_SECRET_INTERVAL_SECONDS = 10.0
Outcome = Literal["applied", "duplicate", "in_flight", "ignored"]


class IngestResult(Model):
    """What became of a delivery: `applied` if any of its events was, else `duplicate` if any
    was a redelivery of an applied event, else `in_flight` if any is being applied by another
    delivery right now, else `ignored` (with the reason of its first event).

    `in_flight` is acknowledged like the others: the event is already durable, leased to the
    delivery applying it, and if that one fails the provider's own retry or the sweep of
    pending events applies it. A non-2xx answer would only make the provider retry a copy
    (wuzapi retries any non-2xx; Meta retries anything but 200, for days)."""

    outcome: Outcome
    instance: str | None = None
    event: str | None = None
    reason: str | None = None


class CatalogReader(Protocol):
    def find_provider(self, provider_id: str) -> Provider | None: ...
    def instance_for_binding(self, provider_id: str, provider_instance_id: str) -> Instance | None: ...
    def instance_for_meta_phone(self, provider_id: str, meta_phone_id: str) -> Instance | None: ...
    def find_instance(self, name: str) -> Instance | None: ...


class EventRepository(Protocol):
    def accept(self, event: StoredEvent, lease_seconds: int) -> bool: ...
    def record_ignored(self, event: StoredEvent) -> bool: ...
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

    @property
    def secret_store(self) -> Secrets:
        return self._secrets

    @property
    def catalog(self) -> CatalogReader:
        return self._catalog

    def receive(self, provider_id: str, request: WebhookRequest) -> IngestResult:
        """Verify and apply one delivery.

        Raises PayloadTooLarge (413), Unauthenticated (401), InvalidInput (400), NotFound (404)
        and EventNotApplied (5xx); only a 2xx result means its events are durable.
        """
        envelope.check_size(request.body)
        provider = self._catalog.find_provider(provider_id)
        if provider is None:
            raise envelope.refused()
        spec = spec_for(provider.kind)
        self._authenticate(spec, provider, request)
        now = self._clock()
        digest = hashlib.sha256(request.body).hexdigest()  # stored instead of the body
        results = [self._receive_one(provider, inbound, now, digest) for inbound in spec.events(request)]
        return _summary(results)

    def verify_subscription(self, provider_id: str, query: dict[str, str]) -> str:
        """The provider's subscription check (Meta's `hub.challenge`); Forbidden otherwise."""
        provider = self._catalog.find_provider(provider_id)
        if provider is None:
            raise NotFound("unknown provider", code="unknown_provider")
        return spec_for(provider.kind).verify_subscription(query, _Credentials(self, provider, fresh=False))

    def _receive_one(self, provider: Provider, inbound: InboundEvent, now: datetime, digest: str) -> IngestResult:
        instance = self._bind(provider, inbound)
        stored = StoredEvent(
            provider_id=provider.id,
            provider_instance_id=instance.provider_instance_id,
            instance_key=instance.key,
            name=inbound.name,
            event_id=inbound.event_id,
            seq=inbound.seq,
            data=inbound.data,
            envelope_instance=inbound.instance,
            received_at=now,
            body_sha256=digest,
        )
        if inbound.ignored or inbound.name not in self._handlers:
            reason = inbound.ignored or f"no effect for {inbound.name} events"
            return self._ignore(stored.model_copy(update={"status": "ignored", "reason": reason}), instance)
        try:
            accepted = self._events.accept(stored, LEASE_SECONDS)
        except Exception as exc:
            logger.warning("webhook not stored", extra={"instance": instance.key, "error": type(exc).__name__})
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
            instance = self._catalog.find_instance(stored.instance_key)
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

    def _authenticate(self, spec: ProviderKindSpec, provider: Provider, request: WebhookRequest) -> None:
        """Check with the cached secrets; on a refusal re-read them once (a rotation), rate-limited
        per provider so forged requests cannot turn into a flood of secret-store reads."""
        now = self._clock().timestamp()
        try:
            spec.authenticate(request, _Credentials(self, provider, fresh=False), now)
        except Unauthenticated:
            last = self._fresh_reads.get(provider.id, 0.0)
            if time.monotonic() - last < FRESH_SECRET_INTERVAL_SECONDS:
                raise envelope.refused() from None
            self._fresh_reads[provider.id] = time.monotonic()
        else:
            return
        try:
            spec.authenticate(request, _Credentials(self, provider, fresh=True), now)
        except Unauthenticated:
            raise envelope.refused() from None

    def secret(self, name: str, fresh: bool) -> str | None:
        try:
            return self._secrets.get(name, fresh=fresh)
        except Exception:  # an absent parameter: nothing to check against
            return None

    def _bind(self, provider: Provider, inbound: InboundEvent) -> Instance:
        if inbound.binding_field == "meta_phone_id":
            instance = self._catalog.instance_for_meta_phone(provider.id, inbound.binding)
        else:
            instance = self._catalog.instance_for_binding(provider.id, inbound.binding)
        if instance is None or instance.tenant != provider.tenant:
            raise NotFound("unknown instance for this provider", code="unknown_instance")
        return instance

    def _ignore(self, stored: StoredEvent, instance: Instance) -> IngestResult:
        try:
            self._events.record_ignored(stored)
        except Exception as exc:
            logger.warning("ignored event not recorded", extra={"instance": instance.key, "error": type(exc).__name__})
            raise EventNotApplied("the event could not be stored; retry") from exc
        logger.info(
            "webhook event ignored",
            extra={"instance": instance.key, "event": stored.name, "reason": stored.reason},
        )
        return IngestResult(outcome="ignored", instance=instance.name, event=stored.name, reason=stored.reason)

    def _redelivered(self, stored: StoredEvent, instance: Instance, now: datetime) -> IngestResult:
        claimed = self._events.claim(stored, now, LEASE_SECONDS)
        if isinstance(claimed, StoredEvent):
            logger.info("pending event re-applied", extra={"instance": instance.key, "event_id": stored.event_id})
            self._apply(claimed, instance)
            return IngestResult(outcome="applied", instance=instance.name, event=stored.name)
        if claimed == "pending":
            logger.info("event in flight elsewhere", extra={"instance": instance.key, "event_id": stored.event_id})
            return IngestResult(outcome="in_flight", instance=instance.name, event=stored.name)
        # "applied", or no record left beside the marker: either way the event was accepted before.
        return IngestResult(outcome="duplicate", instance=instance.name, event=stored.name)

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
                extra={"instance": instance.key, "event": stored.name, "event_id": stored.event_id, "error": error},
            )
            self._give_back(stored)
            raise EventNotApplied("the event's effects did not all run; retry") from exc

    def _give_back(self, stored: StoredEvent) -> None:
        try:
            self._events.release(stored)
        except Exception as exc:  # the lease then simply runs out
            logger.warning("event lease not released", extra={"event_id": stored.event_id, "error": type(exc).__name__})


class _Credentials:
    """A provider's secrets, read from the secret store only when a kind asks for them."""

    def __init__(self, ingest: IngestService, provider: Provider, *, fresh: bool) -> None:
        self._ingest = ingest
        self._provider = provider
        self._fresh = fresh

    def webhook_secret(self) -> str | None:
        return self._read(provider_secret_name(self._ingest.secret_store, self._provider.id, "webhook-secret"))

    def verify_token(self) -> str | None:
        return self._read(provider_secret_name(self._ingest.secret_store, self._provider.id, "verify-token"))

    def instance_token(self, binding: str) -> str | None:
        instance = self._ingest.catalog.instance_for_binding(self._provider.id, binding)
        if instance is None or instance.tenant != self._provider.tenant:
            return None
        return self._read(instance_token_name(self._ingest.secret_store, instance.tenant, instance.name))

    def _read(self, name: str) -> str | None:
        return self._ingest.secret(name, self._fresh)


def _summary(results: list[IngestResult]) -> IngestResult:
    for outcome in ("applied", "duplicate", "in_flight"):
        for result in results:
            if result.outcome == outcome:
                return result
    return results[0] if results else IngestResult(outcome="ignored", reason="no events")

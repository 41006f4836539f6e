"""Provider webhooks: authenticate, bind, deduplicate durably, then run the effects.

Each provider kind authenticates its own deliveries and maps its payloads to our events
(`switchboard.providers.kinds`), under the one signature scheme stored with the provider. The
order of checks is fixed: size (413) before any hashing, then the provider and the kind's
authentication (all 401 with one body), then the payload (400) and the binding of each event to
one of our instances (404). Nothing is stored before all of them pass.

A bearer token that covers no part of the body (Evolution's JWT) is remembered with the digests
of the bodies it brought, in the transaction that stores the event: once its provider may no
longer send new bodies under it, a new body with it is refused (401) and nothing is stored.

Durability: a webhook is acknowledged only after its effect is durable. The dedupe marker, a
pending event record and the writes that join an event's acceptance (`AcceptWrite`: its usage
count) are one unit of work, with the check that the provider's view still holds; the other
effects run after that commit and the record is then marked applied. A failure in between
answers 5xx and leaves the record pending: the provider's redelivery (same event id) finds the
record, claims it and runs the idempotent after-commit effects again (the transaction's writes
are durable already); a sweep (`reapply_pending`) does the same for events the provider gave up
on. An event the kind could not map is recorded as `ignored` with its reason and never applied.

Requests: the provider, its secrets and its bindings come from the container's view of the
provider (`catalog_view`), checked by the same transaction instead of being read; a first
delivery then costs that transaction, its after-commit effects and marking it applied, and a
redelivery of an applied event the one transaction that finds it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol

from switchboard.catalog.domain import Instance, ProviderChanged
from switchboard.catalog.events import ProviderEvent
from switchboard.core.errors import EventNotApplied, NotFound, SwitchboardError, Unauthenticated
from switchboard.core.model import Model
from switchboard.core.observability import emit_metric, logger
from switchboard.core.ports import Secrets
from switchboard.core.secrets import instance_token_name, provider_secret_name
from switchboard.media.metrics import count_unavailable
from switchboard.media.ports import MediaIntake, MediaUnavailable
from switchboard.providers import envelope
from switchboard.providers.base import DeliveryToken, InboundEvent, WebhookRequest
from switchboard.providers.content import MediaMessage, content_data, content_from
from switchboard.providers.kinds import WebhookScheme, spec_for
from switchboard.webhooks.catalog_view import ProviderCatalog, ProviderView, ProviderViews
from switchboard.webhooks.events import (
    Acceptance,
    AcceptWrite,
    EffectHandler,
    EventStatus,
    NotAccepted,
    StoredEvent,
)

if TYPE_CHECKING:
    from switchboard.core import store

LEASE_SECONDS = 20
# Concurrent transactions on one item (the guard's stamp, a usage counter) may cancel each other
# ("TransactionConflict"): nothing was written, so the same transaction is simply tried again.
ACCEPT_ATTEMPTS = 3
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


class EventRepository(Protocol):
    def record_accepted(
        self, uow: store.UnitOfWork, event: StoredEvent, lease_seconds: int, token: DeliveryToken | None = None
    ) -> None: ...
    def record_ignored(self, uow: store.UnitOfWork, event: StoredEvent, token: DeliveryToken | None = None) -> None: ...
    def claim(self, event: StoredEvent, now: datetime, lease_seconds: int) -> StoredEvent | EventStatus | None: ...
    def mark_applied(self, event: StoredEvent, now: datetime) -> None: ...
    def release(self, event: StoredEvent) -> None: ...
    def pending(self, received_before: datetime, limit: int) -> list[StoredEvent]: ...


class ContentAnswers(Protocol):
    def resolve(self, instance: Instance, data: dict[str, Any]) -> dict[str, Any]:
        """A `message` event's data read as what it answers (a typed option number becomes the
        option chosen); the data as it came when it answers nothing. Never raises."""
        ...


class _Stale(Exception):
    """The provider's view changed since it was read (or may have): nothing was stored."""


@dataclass(frozen=True)
class _Verified:
    """A delivery authenticated against a provider's view: under which scheme, with which token."""

    view: ProviderView
    fresh: bool  # the view was read during this delivery
    scheme: WebhookScheme
    token: DeliveryToken | None


class IngestService:
    def __init__(
        self,
        catalog: ProviderCatalog,
        secrets: Secrets,
        events: EventRepository,
        handlers: Mapping[str, list[EffectHandler]],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        *,
        writes: Mapping[str, list[AcceptWrite]] | None = None,
        media: MediaIntake | None = None,
        answers: ContentAnswers | None = None,
    ) -> None:
        """`answers` reads a customer's message as the answer to the menu its number sent them."""
        self._answers = answers
        self._media = media
        self._views = ProviderViews(catalog, secrets)
        self._catalog = catalog
        self._secrets = secrets
        self._events = events
        self._handlers = handlers
        self._writes = writes or {}
        self._clock = clock
        self._fresh_reads: dict[str, float] = {}

    def receive(self, provider_id: str, request: WebhookRequest) -> IngestResult:
        """Verify and apply one delivery.

        Raises PayloadTooLarge (413), Unauthenticated (401), InvalidInput (400), NotFound (404)
        and EventNotApplied (5xx); only a 2xx result means its events are durable.
        """
        envelope.check_size(request.body)
        verified = self._verified(provider_id, request, reload=False)
        inbound = spec_for(verified.view.provider.kind).events(request, verified.scheme)
        now = self._clock()
        digest = hashlib.sha256(request.body).hexdigest()  # stored instead of the body
        results: list[IngestResult] = []
        retried = False
        while True:
            try:
                # Every event is bound before any is stored (404 before anything is written).
                bound = [(event, self._bind(verified.view, event, verified.fresh)) for event in inbound[len(results) :]]
                results += [
                    _unbound(event) if instance is None else self._receive_one(verified, event, instance, now, digest)
                    for event, instance in bound
                ]
                return _summary(results)
            except _Stale:
                if retried:  # changed again meanwhile: the provider's retry finds it settled
                    raise EventNotApplied("the provider's configuration changed while storing; retry") from None
                retried = True
                scheme, verified = verified.scheme, self._verified(provider_id, request, reload=True)
                if verified.scheme != scheme:  # its events were read in the other format
                    raise EventNotApplied("the provider's configuration changed while storing; retry") from None

    def verify_subscription(self, provider_id: str, query: dict[str, str]) -> str:
        """The provider's subscription check (Meta's `hub.challenge`); Forbidden otherwise."""
        view = self._views.load(provider_id)  # rare: always read as it is now
        if view is None:
            raise NotFound("unknown provider", code="unknown_provider")
        return spec_for(view.provider.kind).verify_subscription(query, _Credentials(self._views, self._secrets, view))

    def _receive_one(
        self, verified: _Verified, inbound: InboundEvent, instance: Instance, now: datetime, digest: str
    ) -> IngestResult:
        view = verified.view
        data = self._claim_checked(inbound, instance, view.provider.kind)
        if self._answers is not None and inbound.name == "message" and not inbound.ignored:
            data = self._answers.resolve(instance, data)
        stored = StoredEvent(
            provider_id=view.provider.id,
            provider_instance_id=instance.provider_instance_id,
            instance_key=instance.key,
            name=inbound.name,
            event_id=inbound.event_id,
            seq=inbound.seq,
            data=data,
            envelope_instance=inbound.instance,
            received_at=now,
            body_sha256=digest,
        )
        if inbound.ignored or inbound.name not in self._handlers:
            reason, code = inbound.ignored, inbound.ignored_kind or "unsupported"
            if reason is None:
                reason, code = f"no effect for {inbound.name} events", "no_effect"
            ignored = stored.model_copy(update={"status": "ignored", "reason": reason, "reason_code": code})
            return self._ignore(verified, ignored, instance)
        event = _provider_event(stored, instance)
        try:
            # The guard first, then the event's own items, then the writes joining them: the
            # first refusal in that order says what became of the delivery.
            uow = _unit_of_work()
            self._views.guard(uow, view)
            self._events.record_accepted(uow, stored, LEASE_SECONDS, verified.token)
            for write in self._writes.get(stored.name, []):
                write(uow, event)
            acceptance = _committed(uow)
        except Exception as exc:
            logger.warning("webhook not stored", extra={"instance": instance.key, "error": type(exc).__name__})
            raise EventNotApplied("the event could not be stored; retry") from exc
        if acceptance == "stale":
            raise _Stale
        if acceptance == "replayed":
            raise self._replayed(instance)
        if acceptance == "accepted":
            self._apply(stored, instance)
            return IngestResult(outcome="applied", instance=instance.name, event=stored.name)
        return self._redelivered(stored, instance, now, acceptance)

    def _claim_checked(self, inbound: InboundEvent, instance: Instance, kind: str) -> dict[str, Any]:
        """The event's data with its inline file put in the media bucket: the stored event holds
        the reference, never the bytes. Bytes refused (type, size) leave the event applied with
        its media marked unavailable and the reason, for the agent's placeholder. A redelivery
        puts the same bytes under the same key again. A bucket that fails fails the delivery
        (5xx): the provider's retry brings the bytes again."""
        if inbound.media_bytes is None or inbound.ignored:
            return inbound.data
        try:
            content = content_from(inbound.data)
        except ValueError:
            return inbound.data
        if not isinstance(content, MediaMessage):
            return inbound.data
        media = content.media
        if self._media is None:
            placed = media.model_copy(update={"unavailable": "no_source"})
        else:
            try:
                placed = self._media.put_inline(
                    instance.owner_tag,
                    instance.key,
                    str(inbound.data.get("id") or inbound.event_id),
                    media,
                    inbound.media_bytes,
                )
            except MediaUnavailable as refused:
                count_unavailable(refused.reason, kind)
                logger.info("inline media refused", extra={"instance": instance.key, "reason": refused.reason})
                placed = media.model_copy(update={"unavailable": refused.reason})
            except Exception as exc:
                logger.warning(
                    "inline media not stored",
                    extra={"instance": instance.key, "error": _error_code(exc)},
                )
                raise EventNotApplied("the event's media could not be stored; retry") from exc
        return {**_without_inline(inbound.data), "content": content_data(MediaMessage(media=placed))}

    def reapply_pending(self, older_than: timedelta = timedelta(minutes=2), limit: int = 100) -> int:
        """Apply events left pending (a crash, or a provider that stopped retrying). Returns how many.

        Only the after-commit effects run: the writes that joined the event's acceptance are
        durable with its record."""
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

    def _verified(self, provider_id: str, request: WebhookRequest, *, reload: bool) -> _Verified:
        """The provider's view with the delivery authenticated against it.

        A refusal by a view kept from earlier deliveries reads it again once (a secret rotated
        straight in the secret store moves no stamp), rate-limited per provider so forged
        requests cannot turn into a flood of reads."""
        view = None if reload else self._views.cached(provider_id)
        fresh = view is None
        if view is None:
            view = self._views.load(provider_id)
        if view is None:
            raise envelope.refused()
        now = self._clock().timestamp()
        try:
            scheme, token = self._authenticated(view, request, now)
        except Unauthenticated:
            last = self._fresh_reads.get(provider_id, 0.0)
            if fresh or time.monotonic() - last < FRESH_SECRET_INTERVAL_SECONDS:
                raise envelope.refused() from None
            self._fresh_reads[provider_id] = time.monotonic()
            view = self._views.load(provider_id)
            if view is None:
                raise envelope.refused() from None
            fresh = True
            try:
                scheme, token = self._authenticated(view, request, now)
            except Unauthenticated:
                raise envelope.refused() from None
        if view.provider.webhook_scheme is None:
            return self._settled(provider_id, request, scheme, now)
        return _Verified(view, fresh, scheme, token)

    def _authenticated(
        self, view: ProviderView, request: WebhookRequest, now: float
    ) -> tuple[WebhookScheme, DeliveryToken | None]:
        """The scheme the delivery is authentic under, and its token: only the provider's own
        scheme is tried. A provider saved before schemes were stored has none: its kind's are
        tried in order, and no delivery is authentic under two (each kind's are built so)."""
        spec = spec_for(view.provider.kind)
        credentials = _Credentials(self._views, self._secrets, view)
        stored = view.provider.webhook_scheme
        for scheme in spec.schemes if stored is None else (stored,):
            try:
                return scheme, spec.authenticate(request, credentials, now, scheme)
            except Unauthenticated:
                continue
        raise envelope.refused()

    def _settled(self, provider_id: str, request: WebhookRequest, scheme: WebhookScheme, now: float) -> _Verified:
        """Store the scheme a provider saved before schemes were stored first authenticated a
        delivery under (once: a conditional write), then authenticate again under what is stored,
        which is that scheme unless another delivery stored its own first."""
        if self._catalog.settle_webhook_scheme(provider_id, scheme):
            logger.info("provider webhook scheme stored", extra={"provider": provider_id, "scheme": scheme})
        view = self._views.load(provider_id)
        if view is None:
            raise envelope.refused()
        if view.provider.webhook_scheme is None:  # the provider was rewritten meanwhile
            raise EventNotApplied("the provider's configuration changed while storing; retry")
        try:
            stored, token = self._authenticated(view, request, now)
        except Unauthenticated:
            raise envelope.refused() from None
        return _Verified(view, True, stored, token)

    def _replayed(self, instance: Instance) -> Unauthenticated:
        """A token seen before with other bodies brought a new one after it may: not its provider."""
        logger.warning("webhook token replayed with another body", extra={"instance": instance.key})
        return envelope.refused()

    def _bind(self, view: ProviderView, inbound: InboundEvent, fresh: bool) -> Instance | None:
        """The instance the event is bound to. None for an account's event (a template's status)
        whose account no number of the provider names: the account's numbers may be elsewhere,
        and refusing the delivery would only make the provider retry it for days."""
        instance = self._views.instance(view, inbound.binding_field, inbound.binding)
        if instance is None and inbound.binding_field == "waba_id":
            logger.info("account event of no known number acknowledged", extra={"event": inbound.name})
            return None
        if instance is None or instance.tenant != view.provider.tenant:
            # A kept view may predate a rotated secret (401 comes before 404): its stamp is
            # checked, and only a changed one drops it (a provider sending events of an instance
            # it was never bound to must not make every delivery read the secrets again).
            if not fresh and not self._views.current(view):
                raise _Stale
            raise NotFound("unknown instance for this provider", code="unknown_instance")
        return instance

    def _ignore(self, verified: _Verified, stored: StoredEvent, instance: Instance) -> IngestResult:
        try:
            uow = _unit_of_work()
            self._views.guard(uow, verified.view)
            self._events.record_ignored(uow, stored, verified.token)
            recorded = _committed(uow)
        except Exception as exc:
            logger.warning("ignored event not recorded", extra={"instance": instance.key, "error": type(exc).__name__})
            raise EventNotApplied("the event could not be stored; retry") from exc
        if recorded == "stale":
            raise _Stale
        if recorded == "replayed":
            raise self._replayed(instance)
        logger.info(
            "webhook event ignored",
            extra={"instance": instance.key, "event": stored.name, "reason": stored.reason},
        )
        # By the reason's code and the provider's kind, both bounded (never an instance or a tenant:
        # an instance's own list is `GET /api/instances/{name}/ignored-events`).
        reason, kind = stored.reason_code or "unsupported", verified.view.provider.kind
        emit_metric("ProviderEventsIgnored", reason=reason, provider_kind=kind)
        return IngestResult(outcome="ignored", instance=instance.name, event=stored.name, reason=stored.reason)

    def _redelivered(
        self, stored: StoredEvent, instance: Instance, now: datetime, acceptance: Acceptance
    ) -> IngestResult:
        """A redelivery: only a pending record whose lease ran out is claimed (its after-commit
        effects run again); the answer of the failed transaction settles the others."""
        claimed = self._events.claim(stored, now, LEASE_SECONDS) if acceptance == "claimable" else None
        if isinstance(claimed, StoredEvent):
            logger.info("pending event re-applied", extra={"instance": instance.key, "event_id": stored.event_id})
            self._apply(claimed, instance)
            return IngestResult(outcome="applied", instance=instance.name, event=stored.name)
        if acceptance == "in_flight" or claimed == "pending":
            logger.info("event in flight elsewhere", extra={"instance": instance.key, "event_id": stored.event_id})
            return IngestResult(outcome="in_flight", instance=instance.name, event=stored.name)
        # Applied or ignored, or no record left beside the marker: the event was accepted before.
        return IngestResult(outcome="duplicate", instance=instance.name, event=stored.name)

    def _apply(self, stored: StoredEvent, instance: Instance) -> None:
        """The after-commit effects, then the record marked applied."""
        event = _provider_event(stored, instance)
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
    """A provider's secrets as its view holds them, read only when a kind asks for them."""

    def __init__(self, views: ProviderViews, secrets: Secrets, view: ProviderView) -> None:
        self._views = views
        self._secrets = secrets
        self._view = view

    def webhook_secret(self) -> str | None:
        name = provider_secret_name(self._secrets, self._view.provider.id, "webhook-secret")
        return self._views.secret(self._view, name)

    def verify_token(self) -> str | None:
        return self._views.secret(
            self._view, provider_secret_name(self._secrets, self._view.provider.id, "verify-token")
        )

    def instance_token(self, binding: str) -> str | None:
        instance = self._views.instance(self._view, "provider_instance_id", binding)
        if instance is None or instance.tenant != self._view.provider.tenant:
            return None
        return self._views.secret(self._view, instance_token_name(self._secrets, instance.tenant, instance.name))

    def _provider_secret(self, which: Literal["webhook-secret", "verify-token"]) -> str | None:
        return self._views.secret(self._view, provider_secret_name(self._secrets, self._view.provider.id, which))


def _error_code(exc: Exception) -> str:
    """A failure's name and, for an AWS error, its code: never its message."""
    response = getattr(exc, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return f"{type(exc).__name__}:{code}" if isinstance(code, str) else type(exc).__name__


def _without_inline(value: Any) -> Any:
    """`value` without the provider's inline copies of the file (`base64` fields): once the
    bytes are in the bucket, or refused, no copy of them is stored with the event."""
    if isinstance(value, dict):
        return {key: _without_inline(item) for key, item in value.items() if key != "base64"}
    if isinstance(value, list):
        return [_without_inline(item) for item in value]
    return value


def _provider_event(stored: StoredEvent, instance: Instance) -> ProviderEvent:
    return ProviderEvent(
        provider_id=stored.provider_id,
        instance=instance,
        name=stored.name,
        event_id=stored.event_id,
        seq=stored.seq,
        data=stored.data,
        envelope_instance=stored.envelope_instance,
        received_at=stored.received_at,
    )


def _unit_of_work() -> store.UnitOfWork:
    # Imported at the first delivery, not with the routes: PynamoDB and the item models' base are
    # a twelfth of the function's cold start.
    from switchboard.core import store  # noqa: PLC0415

    return store.unit_of_work()


def _committed(uow: store.UnitOfWork) -> Acceptance:
    """Commit the acceptance of an event: what became of it (any other failure raises, and then
    nothing was written)."""
    try:
        uow.commit(conflict_attempts=ACCEPT_ATTEMPTS)
    except ProviderChanged:
        return "stale"
    except NotAccepted as refused:
        return refused.acceptance
    return "accepted"


def _unbound(event: InboundEvent) -> IngestResult:
    return IngestResult(outcome="ignored", event=event.name, reason="an account no number of this provider names")


def _summary(results: list[IngestResult]) -> IngestResult:
    for outcome in ("applied", "duplicate", "in_flight"):
        for result in results:
            if result.outcome == outcome:
                return result
    return results[0] if results else IngestResult(outcome="ignored", reason="no events")

"""Dialing: reserve a slot atomically, dial with the same key, turn the reservation into the call.

The order matters:

1. the attempt record is stored first (keyed by the reservation id derived from the caller's
   Idempotency-Key), so a retry finds it and the reconciler can always resolve a reservation;
2. one transaction admits the reservation only if `size(occupants) < limit` and the attempt is
   still `pending`;
3. the provider's `/call/dial` gets the reservation id as its Idempotency-Key;
4. its answer binds the callId (a webhook may have done it first: see `CallService`).

Replays of one Idempotency-Key may run at once (a console retrying a lost answer, two tabs): each
one reads the attempt, and by the time it asks for the reservation another one may have bound it
to its call. The reservation's own condition on the attempt's state refuses it then
(`AttemptNotPending`), and the replay reads the attempt again and answers with its call: a
reservation can only exist while its attempt is pending, so binding frees it for good.

A full line (step 2) leaves the attempt pending without a reservation: it holds no slot, and a
retry with the same key asks again. Outcomes of step 3: `line_busy`, disconnected or any
definitive refusal release the reservation and ask for a reconciliation (no retry loop); a
timeout or lost answer keeps the
reservation (202 pending): a retry with the same key, or the reconciler, re-dials with the
same key and gets the same call. Nothing is released because a browser closed or an answer
was slow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from switchboard.calls.domain import AttemptNotPending, CallRecord, DialAttempt, LineNotReady, reservation_id
from switchboard.calls.ports import ReconcileRequests
from switchboard.calls.service import CallService, attendant_of
from switchboard.catalog.domain import Instance
from switchboard.catalog.ports import Instances, Targets
from switchboard.core.errors import (
    Conflict,
    IdempotencyKeyReused,
    InstanceDisconnected,
    LineBusy,
    NotCallsInstance,
    ProviderDisconnected,
    ProviderError,
    ProviderLineBusy,
    ProviderTimeout,
    UnsupportedByProvider,
)
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import emit_metric, logger
from switchboard.lines.domain import Line
from switchboard.providers.base import Capabilities

# A dial whose outcome is unknown is resolved by the reconciler a little later, not at once.
RESOLVE_DELAY_SECONDS = 15
# Each round follows a concurrent replay that moved the attempt on (bound or released it); the
# bound only stops a bug from spinning.
REPLAY_ROUNDS = 5


class Slots(Protocol):
    def line(self, tenant: str, instance: str) -> Line | None: ...
    def reserve(self, attempt: DialAttempt) -> bool: ...
    def ensure_line(self, tenant: str, instance: str) -> None: ...
    def create_attempt(self, attempt: DialAttempt) -> DialAttempt | None: ...
    def reopen_attempt(self, attempt: DialAttempt) -> bool: ...
    def get_attempt(self, tenant: str, instance: str, attempt_id: str) -> DialAttempt | None: ...
    def release(self, attempt: DialAttempt, reason: str) -> bool: ...


class DialOutcome(Model):
    """A dial's answer: the call, or `call is None` while the provider's outcome is unknown."""

    reservation_id: str
    attempt: DialAttempt
    call: CallRecord | None = None


class DialService:
    def __init__(
        self,
        instances: Instances,
        slots: Slots,
        calls: CallService,
        targets: Targets,
        reconcile: ReconcileRequests,
        *,
        capabilities: Callable[[Instance], Capabilities],
        refresh_limit: Callable[[Instance], Line],
    ) -> None:
        self._instances = instances
        self._slots = slots
        self._calls = calls
        self._targets = targets
        self._reconcile = reconcile
        self._capabilities = capabilities
        self._refresh_limit = refresh_limit

    def dial(self, principal: Principal, instance_name: str, to: str, video: bool, idempotency_key: str) -> DialOutcome:
        """Place one call for the caller; the same Idempotency-Key always means the same dial.

        Raises NotFound (another tenant's or unknown instance), NotCallsInstance,
        InstanceDisconnected, UnsupportedByProvider (video), IdempotencyKeyReused, LineBusy,
        Conflict (the line or the dial contended beyond a few tries: retry with the same key) and
        the provider's definitive errors.
        """
        instance = self._instances.get_instance(principal.tenant, instance_name)
        if instance.kind != "calls":
            raise NotCallsInstance(f"instance {instance.name} is not a calls instance")
        if not instance.connected:
            raise InstanceDisconnected("the connection is disconnected: dialing is refused (its limit stays editable)")
        if video and not self._capabilities(instance).calls_video:
            raise UnsupportedByProvider("the provider server does not announce video calls", missing=["calls_video"])
        attendant = attendant_of(principal)
        attempt = DialAttempt(
            id=reservation_id(instance.tenant, instance.name, attendant, idempotency_key),
            tenant=instance.tenant,
            instance=instance.name,
            attendant=attendant,
            to=to,
            video=video,
        )
        existing = self._slots.create_attempt(attempt)
        if existing is not None and not existing.same_dial(to, video):
            raise IdempotencyKeyReused("this Idempotency-Key was used for another dial")
        for _ in range(REPLAY_ROUNDS):
            if existing is not None:
                replay = self._replay(instance, existing)
                if replay is not None:
                    return replay
                # Pending now (as read, or reopened by this replay or another): the reservation's
                # own condition on the attempt's state tells if that is no longer so.
                attempt = existing.model_copy(update={"state": "pending", "release_reason": None})
            try:
                self._admit(instance, attempt)
            except AttemptNotPending:
                # A concurrent replay of this key bound or released it since it was read.
                existing = self._slots.get_attempt(instance.tenant, instance.name, attempt.id) or attempt
                continue
            return self._dial(instance, attempt)
        raise Conflict(
            "this dial is being replayed concurrently: retry with the same Idempotency-Key", code="dial_contended"
        )

    def _replay(self, instance: Instance, existing: DialAttempt) -> DialOutcome | None:
        """A retry: the same call if it exists; a refused attempt may try again; a pending one re-dials."""
        if existing.state == "connected" and existing.call_id:
            record = self._calls.bind_dial(instance, existing, existing.call_id)
            return DialOutcome(reservation_id=existing.id, attempt=existing, call=record)
        if existing.state == "released":
            self._slots.reopen_attempt(existing)
        return None

    def _admit(self, instance: Instance, attempt: DialAttempt) -> None:
        """One conditional write; a line without limit or occupants is prepared once, then admitted.

        Raises AttemptNotPending (a concurrent replay moved the attempt on), LineBusy, Conflict."""
        for first in (True, False):
            try:
                admitted = self._slots.reserve(attempt)
            except LineBusy:
                # Not admitted, so nothing to release: the attempt stays pending without a slot and
                # a retry with the same key asks again. The provider may know of a call we missed.
                logger.info("dial refused: line busy", extra={"instance": instance.key, "reservation": attempt.id})
                emit_metric("LineBusy", source="slots")
                self._reconcile.request(instance.key)
                raise
            except LineNotReady as not_ready:
                if not first:
                    raise Conflict("the connection's call limit is not known yet", code="limit_unknown") from not_ready
                if not_ready.line is None or not_ready.line.limit is None:
                    self._refresh_limit(instance)
                self._slots.ensure_line(instance.tenant, instance.name)
                continue
            logger.info(
                "slot reserved" if admitted else "slot reservation replayed",
                extra={"instance": instance.key, "reservation": attempt.id},
            )
            if admitted:
                self._calls.line_changed(instance.tenant, instance.name)
            return

    def _dial(self, instance: Instance, attempt: DialAttempt) -> DialOutcome:
        client, target = self._targets.target_for(instance)
        try:
            answer = client.dial(target, attempt.to, attempt.video, attempt.id)
        except ProviderTimeout:
            logger.warning(
                "dial outcome unknown: reservation kept until resolved",
                extra={"instance": instance.key, "reservation": attempt.id},
            )
            self._reconcile.request(instance.key, RESOLVE_DELAY_SECONDS)
            return DialOutcome(reservation_id=attempt.id, attempt=attempt)
        except ProviderLineBusy as busy:
            self._release(instance, attempt, "provider_line_busy")
            emit_metric("LineBusy", source="provider")
            line = self._slots.line(instance.tenant, instance.name)
            raise LineBusy(
                "the provider has no free call slot on this connection",
                limit=line.limit if line else None,
                occupants=[o.model_dump(by_alias=True) for o in line.occupants.values()] if line else [],
            ) from busy
        except ProviderDisconnected as disconnected:
            self._release(instance, attempt, "provider_disconnected")
            raise InstanceDisconnected("the provider says the connection is disconnected") from disconnected
        except ProviderError as error:
            self._release(instance, attempt, error.code)
            raise
        call = self._calls.bind_dial(instance, attempt, answer.call_id)
        return DialOutcome(reservation_id=attempt.id, attempt=attempt, call=call)

    def _release(self, instance: Instance, attempt: DialAttempt, reason: str) -> None:
        """Free the reservation (if it is still pending) and reconcile: the provider is the final authority."""
        released = self._slots.release(attempt, reason)
        if released:
            logger.info("reservation released", extra={"reservation": attempt.id, "reason": reason})
            self._calls.line_changed(attempt.tenant, attempt.instance)
        self._reconcile.request(instance.key)

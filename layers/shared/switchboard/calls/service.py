"""Call lifecycle: `call` events, provider reads and dial answers applied to call records; ownership.

Every change follows one loop: read the record, compute the new one with the pure rules of
`switchboard.calls.domain`, write it (and its line entry, and the attempt it binds) in
one transaction conditioned on the revision read; a lost race reads again. So concurrent
handlers, replicas and reconciliations converge, and the line's occupants stay the projection
of the records (an occupant is never added twice nor freed twice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

from switchboard.calls.domain import (
    CallEventData,
    CallRecord,
    DialAttempt,
    EndOrigin,
    LineNotReady,
    StaleRecord,
    apply_event,
    apply_provider_call,
    bind_to_attempt,
    claim,
    digits,
    may_control,
    new_record,
)
from switchboard.catalog.domain import Instance
from switchboard.catalog.ports import Instances, Targets
from switchboard.core.bus import CALL_STATE_CHANGED, LINE_OCCUPANCY_CHANGED
from switchboard.core.errors import CallEnded, Forbidden, NotFound, ProviderError
from switchboard.core.identity import Principal, Scope
from switchboard.core.observability import logger
from switchboard.core.ports import Publisher
from switchboard.lines.domain import Line
from switchboard.providers.base import ProviderCall, ProviderClient, ProviderTarget

if TYPE_CHECKING:
    from switchboard.catalog.events import ProviderEvent

# Each retry follows a concurrent write that made progress; the bound only stops a bug from spinning.
MAX_ATTEMPTS = 10


class CallStore(Protocol):
    def get_call(
        self, tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str
    ) -> CallRecord | None: ...
    def save(
        self, previous: CallRecord | None, record: CallRecord, attempt: DialAttempt | None = None
    ) -> CallRecord: ...
    def get_attempt(self, tenant: str, instance: str, attempt_id: str) -> DialAttempt | None: ...
    def pending_attempts(self, tenant: str, instance: str) -> list[DialAttempt]: ...
    def ensure_line(self, tenant: str, instance: str) -> None: ...
    def line(self, tenant: str, instance: str) -> Line | None: ...


def attendant_of(principal: Principal) -> str:
    """The attendant behind an API key: its attendant id, else the key itself."""
    return principal.attendant_id or principal.key_id


class CallService:
    """Publishes `call.state.changed` and `line.occupancy.changed` after the writes that change them."""

    def __init__(
        self, store: CallStore, instances: Instances, targets: Targets, *, publisher: Publisher | None = None
    ) -> None:
        self._store = store
        self._instances = instances
        self._targets = targets
        self._publisher = publisher

    # --- provider facts --------------------------------------------------------------------

    def on_call_event(self, event: ProviderEvent) -> None:
        """Effect of a provider `call` event (registered in `bootstrap.event_handlers`)."""
        if event.instance.kind != "calls":
            logger.info("call event on a messages instance ignored", extra={"instance": event.instance.key})
            return
        try:
            data = CallEventData.model_validate(event.data)
        except ValidationError:
            logger.warning(
                "malformed call event ignored", extra={"instance": event.instance.key, "event_id": event.event_id}
            )
            return
        record = self._update(event.instance, data.call_id, lambda record: apply_event(record, data, event.seq))
        logger.info(
            "call event applied",
            extra={
                "instance": event.instance.key,
                "call_id": data.call_id,
                "type": data.type,
                "seq": event.seq,
                "state": record.state,
            },
        )

    def apply_provider_call(self, instance: Instance, call: ProviderCall, origin: EndOrigin) -> CallRecord:
        """What a read of the provider says about one call, applied with the same guards as events."""
        return self._update(instance, call.call_id, lambda record: apply_provider_call(record, call, origin))

    def adopt(self, instance: Instance, record: CallRecord) -> CallRecord:
        """An outgoing call that waited for a dial answer that will not come: it takes its own slot."""
        return self._update(
            instance,
            record.call_id,
            lambda current: current.model_copy(update={"holds_slot": True}) if current.holds_slot is False else current,
        )

    def bind_dial(self, instance: Instance, attempt: DialAttempt, call_id: str) -> CallRecord:
        """The provider answered a dial with `call_id`: the attempt's reservation becomes that call.

        Idempotent, and safe against a webhook that arrived first (it may have bound the attempt
        already). If the attempt was bound to another call meanwhile (a call to the same peer
        made outside switchboard was taken for it), this call still takes its own slot.
        """
        for _ in range(MAX_ATTEMPTS):
            previous = self._get(instance, call_id)
            if previous is not None and previous.reservation_id == attempt.id:
                return previous
            current = self._store.get_attempt(instance.tenant, instance.name, attempt.id) or attempt
            base = previous or new_record(
                instance.tenant, instance.name, instance.provider_id, instance.provider_instance_id, call_id
            )
            if base.state is None:
                base = base.model_copy(update={"state": "ringing"})
            binding: DialAttempt | None = current
            if current.state == "pending":
                record = bind_to_attempt(base, current)
            else:
                binding = None
                record = base.model_copy(
                    update={
                        "direction": base.direction or "outgoing",
                        "peer": base.peer or current.to,
                        "holds_slot": True,
                        "owner": base.owner or current.attendant,
                    }
                )
                if previous is not None and record.same_content(previous):
                    return previous
            stored = self._save(instance, previous, record, binding)
            if stored is not None:
                logger.info(
                    "reservation became a call",
                    extra={"instance": instance.key, "reservation": attempt.id, "call_id": call_id},
                )
                return stored
        raise RuntimeError(f"dial answer for {instance.name} not settled after {MAX_ATTEMPTS} attempts")

    # --- ownership and control -------------------------------------------------------------

    def claim(self, principal: Principal, instance_name: str, call_id: str, transfer_to: str | None) -> CallRecord:
        """Take the call (409 `call_owned` if another attendant has it) or transfer it (owner or admin)."""
        instance = self._instances.get_instance(principal.tenant, instance_name)
        attendant = attendant_of(principal)
        for _ in range(MAX_ATTEMPTS):
            previous = self._existing(instance, call_id)
            record = claim(previous, attendant, transfer_to=transfer_to, is_admin=principal.has(Scope.ADMIN))
            if record.owner == previous.owner:
                return previous
            stored = self._save(instance, previous, record, None)
            if stored is not None:
                logger.info(
                    "call owner changed",
                    extra={"instance": instance.key, "call_id": call_id, "owner": stored.owner, "by": attendant},
                )
                return stored
        raise RuntimeError(f"claim on {instance_name} not settled after {MAX_ATTEMPTS} attempts")

    def hangup(self, principal: Principal, instance_name: str, call_id: str) -> CallRecord:
        """Ask the provider to end the call; the record ends only when the provider says it did."""
        instance, record = self._controlled(principal, instance_name, call_id)
        if record.ended:
            return record
        client, target = self._targets.target_for(instance)
        client.hangup(target, record.call_id)
        return self._after_control(instance, record, client, target)

    def stop_video(self, principal: Principal, instance_name: str, call_id: str) -> CallRecord:
        """Turn the camera off: the call keeps its slot."""
        instance, record = self._controlled(principal, instance_name, call_id)
        if record.ended:
            raise CallEnded("the call has ended")
        client, target = self._targets.target_for(instance)
        client.stop_video(target, record.call_id)
        return self._after_control(instance, record, client, target)

    def get(self, principal: Principal, instance_name: str, call_id: str) -> CallRecord:
        instance = self._instances.get_instance(principal.tenant, instance_name)
        return self._existing(instance, call_id)

    # --- plumbing --------------------------------------------------------------------------

    def _controlled(self, principal: Principal, instance_name: str, call_id: str) -> tuple[Instance, CallRecord]:
        instance = self._instances.get_instance(principal.tenant, instance_name)
        record = self._existing(instance, call_id)
        if not may_control(record, attendant_of(principal), is_admin=principal.has(Scope.ADMIN)):
            raise Forbidden("only the call's owner or an admin can control it")
        return instance, record

    def _after_control(
        self, instance: Instance, record: CallRecord, client: ProviderClient, target: ProviderTarget
    ) -> CallRecord:
        """Read the call back: the provider's word (not ours) moves the record."""
        try:
            call = client.get_call(target, record.call_id)
        except ProviderError as error:
            logger.warning("call read after control failed", extra={"instance": instance.key, "error": error.code})
            return record
        if call is None:
            return record
        return self.apply_provider_call(instance, call, "provider_answer")

    def _existing(self, instance: Instance, call_id: str) -> CallRecord:
        record = self._get(instance, call_id)
        if record is None or record.tenant != instance.tenant:
            raise NotFound("call not found")
        return record

    def _get(self, instance: Instance, call_id: str) -> CallRecord | None:
        return self._store.get_call(
            instance.tenant, instance.name, instance.provider_id, instance.provider_instance_id, call_id
        )

    def _update(self, instance: Instance, call_id: str, change: Callable[[CallRecord], CallRecord]) -> CallRecord:
        for _ in range(MAX_ATTEMPTS):
            previous = self._get(instance, call_id)
            base = previous or new_record(
                instance.tenant, instance.name, instance.provider_id, instance.provider_instance_id, call_id
            )
            record = change(base)
            attempt: DialAttempt | None = None
            if record.direction == "outgoing" and record.holds_slot is None:
                attempt, holds = self._correlate(instance, record)
                record = (
                    bind_to_attempt(record, attempt) if attempt else record.model_copy(update={"holds_slot": holds})
                )
            if previous is not None and record.same_content(previous):
                return previous
            stored = self._save(instance, previous, record, attempt)
            if stored is not None:
                return stored
        raise RuntimeError(f"call {call_id} on {instance.name} not settled after {MAX_ATTEMPTS} attempts")

    def _correlate(self, instance: Instance, record: CallRecord) -> tuple[DialAttempt | None, bool]:
        """Which pending dial attempt an outgoing call seen first by webhook (or read) is.

        The provider's `call` event does not carry our Idempotency-Key, so the peer decides:
        exactly one pending attempt to that peer -> that one; several -> wait for their dial
        answers (they keep counting meanwhile); none -> a call dialled outside switchboard,
        which takes a slot of its own.
        """
        peer = digits(record.peer)
        candidates = [
            a for a in self._store.pending_attempts(instance.tenant, instance.name) if peer and digits(a.to) == peer
        ]
        if len(candidates) == 1:
            return candidates[0], True
        return None, not candidates

    def _save(
        self, instance: Instance, previous: CallRecord | None, record: CallRecord, attempt: DialAttempt | None
    ) -> CallRecord | None:
        """The stored record, or None when a concurrent write won (the caller reads again)."""
        try:
            stored = self._store.save(previous, record, attempt)
        except StaleRecord:
            return None
        except LineNotReady:
            self._store.ensure_line(instance.tenant, instance.name)
            return None
        self._told(previous, stored, attempt)
        return stored

    # --- live updates --------------------------------------------------------------------------

    def line_changed(self, tenant: str, instance: str) -> None:
        """After a committed change of how many slots are taken: the line, read back, on the bus."""
        if self._publisher is None:
            return
        line = self._store.line(tenant, instance)
        if line is None:
            return
        self._publisher.publish(
            LINE_OCCUPANCY_CHANGED,
            {"tenant": tenant, "instance": instance, "occupied": len(line.occupants), "limit": line.limit},
        )

    def _told(self, previous: CallRecord | None, stored: CallRecord, attempt: DialAttempt | None) -> None:
        if self._publisher is None:
            return
        before = previous.state if previous else None
        owner_before = previous.owner if previous else None
        if stored.state != before or stored.owner != owner_before:
            detail = {
                "tenant": stored.tenant,
                "instance": stored.instance,
                "callId": stored.call_id,
                "state": stored.state,
            }
            if stored.owner is not None:
                detail["owner"] = stored.owner
                if previous is None or stored.owner == owner_before:
                    # Only its owner's agent console needs it; a change of owner goes to every
                    # console of the tenant, so the previous owner's drops the call too.
                    detail["attendant"] = stored.owner
            self._publisher.publish(CALL_STATE_CHANGED, detail)
        # A reservation bound to its call hands its slot over: the count moves only otherwise.
        held_before = previous is not None and previous.occupant() is not None
        held_after = stored.occupant() is not None
        if int(held_after) - int(held_before) - int(attempt is not None) != 0:
            self.line_changed(stored.tenant, stored.instance)

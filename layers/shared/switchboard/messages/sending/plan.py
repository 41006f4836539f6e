"""The plan of one message, in two steps: what the job decides before the claim (`draft`), then
what the claimed message decides (`complete`).

- `draft`, from the job alone: the key's configuration and the numbers in order. The
  recipient's affinity, else a round-robin ticket, orders them (`pool.domain.plan_numbers`); the
  worker claims the message with the first route it would try already in flight. A message pinned
  to one instance (the console's test message) has that instance's number alone, with that
  instance as its one route.
- `complete`, from the claimed message: a route a dead worker left in flight becomes the
  message's pending route, unless a resend through it could make a second copy (then the message
  ends `ambiguous_outcome` unsent); the pending route's number goes first. A message past its
  `expires_at` (and with no pending route) is not tried.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from switchboard.core.clock import utcnow
from switchboard.core.errors import NotFound
from switchboard.core.observability import logger
from switchboard.messages.domain import (
    EXPIRED,
    Claim,
    Message,
    PendingRoute,
    SendJob,
    TraceEvent,
    needs_conversation_number,
    quoted_id,
)
from switchboard.messages.window import has_window
from switchboard.pool.domain import NumberPlan, plan_numbers
from switchboard.providers.kinds import spec_for

if TYPE_CHECKING:
    from switchboard.messages.ports import ConfigSource, Messages, PinnedConfigs, Tickets
    from switchboard.pool.domain import Affinity, NumberRoutes, SendingConfig

AMBIGUOUS_OUTCOME = "ambiguous_outcome"
# A reaction or quoted reply whose conversation has no number of this key (never written to
# through one), or whose number cannot send now: it never leaves through another number.
NO_CONVERSATION_NUMBER = "no_conversation_number"
CONVERSATION_NUMBER_UNAVAILABLE = "conversation_number_unavailable"
API_KEY_REVOKED = "api_key_revoked"
# The instance a pinned message was to leave through was deleted after it was accepted.
PINNED_INSTANCE_GONE = "instance_not_found"


@dataclass(frozen=True)
class Draft:
    """What the job alone decides: the key's configuration, the recipient's affinity, the numbers
    in order, and the trace begun."""

    config: SendingConfig
    affinity: Affinity | None
    selection: NumberPlan
    events: list[TraceEvent]


@dataclass(frozen=True)
class Plan:
    """What to try for one message: `numbers` in order, and the trace begun (which the later
    steps extend)."""

    config: SendingConfig
    message: Message
    affinity: Affinity | None
    selection: NumberPlan
    numbers: list[NumberRoutes]
    events: list[TraceEvent]


@dataclass(frozen=True)
class Unsendable:
    """The message must end FAILED `reason` without being tried (`config` None: the key is gone)."""

    config: SendingConfig | None
    reason: str
    events: list[TraceEvent]


class Planner:
    def __init__(
        self,
        messages: Messages,
        *,
        configs: ConfigSource,
        tickets: Tickets,
        pinned: PinnedConfigs | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`pinned`: the configuration of a message pinned to one instance (None: a worker that
        is given none fails such a job like any unexpected error)."""
        self._messages = messages
        self._configs = configs
        self._pinned_configs = pinned
        self._tickets = tickets
        self._clock = clock

    def draft(self, job: SendJob) -> Draft | Unsendable:
        """The key's configuration (one read, cached per container), the recipient's affinity in
        pool mode (one read) and, when affinity does not decide, a round-robin ticket."""
        if job.instance is not None:
            return self._pinned(job, job.instance)
        try:
            config = self._configs.get(job.tenant, job.api_key_id)
        except NotFound:
            return Unsendable(None, API_KEY_REVOKED, [])
        # The affinity item also holds who heard from the recipient: read in pool mode, and where a
        # number of the key sends only within the customer-service window.
        wanted = (config.mode == "pool" and bool(config.pool)) or _has_window_route(config)
        affinity = self._messages.affinity(job.tenant, job.to) if wanted else None
        selection = plan_numbers(config, affinity, lambda: self._tickets.next_ticket(config.api_key_id))
        return Draft(config, affinity, selection, [TraceEvent(stage="pool.number.resolved", data=selection.resolved)])

    def _pinned(self, job: SendJob, instance: str) -> Draft | Unsendable:
        """The plan of a message pinned to `instance`: its number alone. The recipient's affinity is
        read all the same: who wrote to the number lately is what the ban watch asks of it."""
        if self._pinned_configs is None:
            raise RuntimeError("the configuration of pinned messages is not provided")
        try:
            config = self._pinned_configs.pinned(job.tenant, job.api_key_id, instance)
        except NotFound:
            return Unsendable(None, PINNED_INSTANCE_GONE, [])
        number = config.default
        resolved = {
            "selectionMode": "instance",
            "instance": instance,
            "resolvedNumber": number.digits if number is not None and number.connected else None,
        }
        selection = NumberPlan(numbers=[number] if number is not None else [], resolved=resolved)
        affinity = self._messages.affinity(job.tenant, job.to)
        return Draft(config, affinity, selection, [TraceEvent(stage="pool.number.resolved", data=resolved)])

    def complete(self, draft: Draft, claim: Claim) -> Plan | Unsendable:
        """The plan for the claimed message, or why it must not be sent at all."""
        checked = self._sendable(claim, draft.config)
        if isinstance(checked, Unsendable):
            return checked
        numbers = _pending_first(draft.selection.numbers, checked, draft.events)
        if needs_conversation_number(checked):
            pinned = self._conversation_numbers(checked, draft, numbers)
            if isinstance(pinned, Unsendable):
                return pinned
            numbers = pinned
        return Plan(draft.config, checked, draft.affinity, draft.selection, numbers, draft.events)

    def _conversation_numbers(
        self, message: Message, draft: Draft, numbers: list[NumberRoutes]
    ) -> list[NumberRoutes] | Unsendable:
        """The one number a reaction or a quoted reply may leave through: the number that sent
        the message it refers to (one of ours), else the number the conversation is on."""
        about = quoted_id(message)
        number_id = None
        if about is not None:
            try:
                ours = self._messages.get(message.tenant, about)
            except NotFound:
                ours = None
            if ours is not None and ours.to == message.to:
                number_id = ours.number_id
        if number_id is None and draft.affinity is not None:
            number_id = draft.affinity.number_id
        if number_id is None and draft.config.mode != "pool" and len(numbers) == 1:
            number_id = numbers[0].number_id  # a key with one number: the conversation is on it
        event = TraceEvent(stage="pool.number.conversation", data={"numberId": number_id})
        if number_id is None:
            return Unsendable(draft.config, NO_CONVERSATION_NUMBER, [*draft.events, event])
        pinned = [number for number in numbers if number.number_id == number_id]
        if not pinned or not pinned[0].connected:
            return Unsendable(draft.config, CONVERSATION_NUMBER_UNAVAILABLE, [*draft.events, event])
        draft.events.append(event)
        return pinned

    def config_if_readable(self, job: SendJob) -> SendingConfig | None:
        """The key's configuration, so a failure after an unexpected error still reaches the
        client's webhook; None when it cannot be read either (the failure is still recorded), or
        for a pinned message, which tells no client webhook."""
        if job.instance is not None:
            return None
        try:
            return self._configs.get(job.tenant, job.api_key_id)
        except Exception:
            logger.warning("sending configuration unreadable", extra={"message_id": job.message_id})
            return None

    def _sendable(self, claim: Claim, config: SendingConfig) -> Message | Unsendable:
        """The message to send (with the route a dead worker left in flight as its pending
        route), or why it must not be sent at all. A route the claim itself marked in flight is
        this worker's, about to be called: nothing was sent through it yet."""
        message = claim.message
        if message.in_flight is not None and not claim.marked:
            # The worker that held it died mid-send: the message may have left through that
            # route, so it is resent only where a resend cannot make a copy (or the key accepts one).
            if not may_resend(message.in_flight.kind, config):
                return Unsendable(config, AMBIGUOUS_OUTCOME, [_interrupted(message.in_flight)])
            message = message.model_copy(update={"pending": message.in_flight})
        if message.expires_at is not None and message.pending is None and self._clock() >= message.expires_at:
            # Past its validity it must not leave (unless a timed-out send of it may have: that
            # route is retried as usual).
            return Unsendable(config, EXPIRED, [])
        return message


def _has_window_route(config: SendingConfig) -> bool:
    numbers = [config.default] if config.default is not None else []
    return any(has_window(route.kind) for number in numbers for route in number.routes)


def may_resend(kind: str | None, config: SendingConfig) -> bool:
    """Whether a send through a route of `kind` may be repeated after an ambiguous end (a timeout,
    a worker dead mid-send): the kind dedupes by message id, or the key accepts a second copy."""
    # A route without a kind was stored before routes carried one: only resendable ones were.
    return kind is None or spec_for(kind).retry_safe or config.at_least_once


def _interrupted(route: PendingRoute) -> TraceEvent:
    return TraceEvent(
        stage="send.attempt.interrupted",
        data={"numberId": route.number_id, "instance": route.instance, "reason": AMBIGUOUS_OUTCOME},
    )


def _pending_first(numbers: list[NumberRoutes], message: Message, events: list[TraceEvent]) -> list[NumberRoutes]:
    """After an ambiguous timeout the same route goes first, with the same idempotency key."""
    if message.pending is None:
        return numbers
    first = [number for number in numbers if number.number_id == message.pending.number_id]
    events.append(
        TraceEvent(
            stage="send.retry.pending_route",
            data={"numberId": message.pending.number_id, "instance": message.pending.instance},
        )
    )
    return first + [number for number in numbers if number not in first]

"""The send worker's use case: plan -> gates -> claim -> attempt -> outcome.

Per job:

- `plan`, from the job: the key's configuration and the numbers in order (`Planner.draft`);
- `gates` open: the ban watch names the route the message would try first;
- claim the message (QUEUED -> SENDING under a lease, with that route in flight: one conditional
  write that also reads it): a message already final, or held by another worker, is skipped, so
  neither a redelivered nor a concurrently delivered job sends twice; then the plan completes
  from the stored message (a route left pending or in flight, the validity);
- `gates`: per number and route, the ban watch, the spam guard and pacing pass it over or let it try;
- `attempt`: the route records itself in flight (the first one already is, by the claim) and
  calls the provider; a refusal, a throttle or
  a disconnected instance moves on to the next instance, then the next number (each skip in the
  trace), a transient failure ends the loop;
- a fallback template: when no route sent a free-form message and a Cloud API number was passed
  over for the customer-service window (or refused it for that, 131047), the message's
  `fallback_template` leaves through that number instead (`message.fallback_template` traced);
  when Meta accepted the free-form send and failed it later for the window (131047 in a status),
  the receipt queues the message again and its template leaves through the number the content
  left from, once (`Message.window_refused_at`);
- `outcome`: SENT, FAILED, retried later, back to QUEUED (paced) or WAITING, each one conditional
  write, then a client webhook queued, best effort: it never fails the send.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import ValidationError

from switchboard.core.clock import new_id
from switchboard.core.errors import NotFound, ProviderThrottled, RetryLater
from switchboard.core.observability import logger, metrics
from switchboard.messages.domain import (
    Claim,
    MessageStatus,
    PendingRoute,
    SendJob,
    SendOutcome,
    SentAs,
    TraceEvent,
)
from switchboard.messages.sending.attempt import Lost, Refused, Sent, Throttled, Transient
from switchboard.messages.sending.plan import Unsendable
from switchboard.messages.sending.trace import at, pending_route, skip
from switchboard.messages.window import OUTSIDE_SERVICE_WINDOW

if TYPE_CHECKING:
    from switchboard.core.ports import Backoff
    from switchboard.messages.domain import Message
    from switchboard.messages.ports import Messages
    from switchboard.messages.sending.attempt import Attempts, Tried
    from switchboard.messages.sending.gates import Gates, MessageGates
    from switchboard.messages.sending.outcome import Outcomes
    from switchboard.messages.sending.plan import Draft, Plan, Planner
    from switchboard.pool.domain import NumberRoutes, Route

INTERNAL_ERROR = "internal_error"
# Longer than one invocation (30 s), shorter than SendQueue's visibility (180 s): a crashed
# worker's message is claimable again by the time SQS redelivers it.
LEASE_SECONDS = 60


class SendingService:
    def __init__(
        self, messages: Messages, *, planner: Planner, gates: Gates, attempts: Attempts, outcomes: Outcomes
    ) -> None:
        self._messages = messages
        self._planner = planner
        self._gates = gates
        self._attempts = attempts
        self._outcomes = outcomes

    def process(self, job: SendJob, attempt: int) -> SendOutcome:
        """Send one queued message. `attempt` is the SQS receive count (1 on first delivery).

        Raises RetryLater (with `delay`) on a transient provider failure before the last attempt.
        """
        draft, gates = self._prepare(job, attempt)
        planned = None if isinstance(draft, Unsendable) else draft
        first = None
        if planned is not None and gates is not None:
            numbers = planned.selection.numbers
            first = (
                _route_of(numbers, job.fallback)
                if job.fallback is not None
                else gates.first_open(numbers, free_form=not job.template)
            )
        claim = self._claim(job, first)
        if claim is None:
            if job.wake is not None and self._woken_early(job):
                raise RetryLater("the message is not yet recorded WAITING", delay=LEASE_SECONDS)
            logger.info("send skipped: message final or held by another worker", extra={"message_id": job.message_id})
            metrics.add_metric(name="SendSkipped", unit="Count", value=1)
            return self._outcomes.skipped(job.message_id)
        message = claim.message
        if isinstance(draft, Unsendable):
            return self._outcomes.failed(message, draft.config, draft.reason, draft.events)
        if draft is None or gates is None:
            return self._outcomes.failed(message, self._planner.config_if_readable(job), INTERNAL_ERROR, [])
        try:
            return self._send_claimed(job, draft, gates, claim, attempt)
        except RetryLater:
            raise
        except Exception:
            # An unexpected error (not a provider's answer): SQS retries the job; on the last
            # attempt the message ends FAILED rather than waiting in the DLQ as SENDING forever.
            if self._outcomes.retries_left(attempt):
                raise
            logger.exception("send failed on its last attempt", extra={"message_id": message.id})
            return self._outcomes.failed(message, self._planner.config_if_readable(job), INTERNAL_ERROR, [])

    def _prepare(self, job: SendJob, attempt: int) -> tuple[Draft | Unsendable | None, MessageGates | None]:
        """The plan as far as the job decides it and the gates opened on it, before the claim (a
        revoked key: why the claimed message ends FAILED, no gates). An unexpected error is raised
        for SQS to retry the job, as after the claim; on the last attempt it is logged and there
        is no plan, for the claimed message to end FAILED `internal_error`."""
        try:
            draft = self._planner.draft(job)
            if isinstance(draft, Unsendable):
                return draft, None
            return draft, self._gates.open(draft)
        except Exception:
            if self._outcomes.retries_left(attempt):
                raise
            logger.exception("send not planned on its last attempt", extra={"message_id": job.message_id})
            return None, None

    def _claim(self, job: SendJob, first: tuple[NumberRoutes, Route] | None) -> Claim | None:
        """The claim, with the route the message tries first in flight when there is one: the
        attempt through it then writes nothing before calling the provider."""
        token = new_id("lease")
        if first is not None:
            route = pending_route(*first)
            return self._messages.claim_in_flight(
                job.message_id, job.tenant, token, LEASE_SECONDS, route=route, wake=job.wake
            )
        message = self._messages.claim(job.message_id, job.tenant, token, LEASE_SECONDS, job.wake)
        return None if message is None else Claim(message=message, marked=False)

    def _send_claimed(self, job: SendJob, draft: Draft, gates: MessageGates, claim: Claim, attempt: int) -> SendOutcome:
        plan = self._planner.complete(draft, claim)
        if isinstance(plan, Unsendable):
            return self._outcomes.failed(claim.message, plan.config, plan.reason, plan.events)
        message, config, events = plan.message, plan.config, plan.events
        unsent = _Unsent()
        if message.window_refused_at is not None and message.sent_as is None:
            return self._fallback_after_refusal(job, plan, gates, unsent, attempt)
        # A message that may already have left through its pending route (an ambiguous end there)
        # is resent through that route only, where the provider recognises the resend: through any
        # other route it would be a second copy, unless the key accepts copies.
        in_doubt = message.pending if not config.at_least_once else None
        for number in plan.numbers:
            if in_doubt is not None and number.number_id != in_doubt.number_id:
                break
            if not number.connected:
                events.append(skip("pool.number.skipped", number, None, "disconnected"))
                continue
            for route in gates.routes(number, message, events):
                if in_doubt is not None and (route.instance, route.provider_id) != (
                    in_doubt.instance,
                    in_doubt.provider_id,
                ):
                    break
                tried = self._attempts.make(message, number, route, events)
                message = tried.message
                ended = self._after(
                    tried, plan=plan, gates=gates, number=number, route=route, unsent=unsent, attempt=attempt
                )
                if ended is not None:
                    return ended
            events.extend(gates.passed_over(number))
        if in_doubt is None and message.fallback_template is not None and gates.window_closed:
            ended = self._fallback(message, plan, gates, unsent, attempt)
            if ended is not None:
                return ended
        if in_doubt is not None:
            return self._outcomes.in_doubt(message, config=config, pending=in_doubt, events=events, attempt=attempt)
        return self._outcomes.unsent(
            job,
            message,
            config,
            events,
            refusal=unsent.refusal,
            throttled=unsent.throttled,
            held=gates.held,
            attempt=attempt,
        )

    def _fallback(
        self, message: Message, plan: Plan, gates: MessageGates, unsent: _Unsent, attempt: int
    ) -> SendOutcome | None:
        """No number sent the free-form content, and a Cloud API number was passed over for the
        window: the message's fallback template leaves through it instead, traced as such."""
        template = message.fallback_template
        assert template is not None
        number, route = gates.window_closed[0]
        plan.events.append(
            at(
                "message.fallback_template",
                number,
                route,
                reason=OUTSIDE_SERVICE_WINDOW,
                template=template.name,
                language=template.language,
            )
        )
        tried = self._attempts.make(message, number, route, plan.events, instead=template)
        return self._after(
            tried,
            plan=plan,
            gates=gates,
            number=number,
            route=route,
            unsent=unsent,
            attempt=attempt,
        )

    def _fallback_after_refusal(
        self, job: SendJob, plan: Plan, gates: MessageGates, unsent: _Unsent, attempt: int
    ) -> SendOutcome:
        """Meta accepted the free-form content and failed it later for the window: the fallback
        template leaves through the route the content left through, traced as such; without that
        route in the key's pool any more, the message ends FAILED `outside_service_window`."""
        message, template = plan.message, plan.message.fallback_template
        assert template is not None
        left = PendingRoute(
            number_id=message.number_id or "", instance=message.instance, provider_id=message.provider_id or ""
        )
        found = _route_of(plan.numbers, left)
        if found is None:
            plan.events.append(
                TraceEvent(
                    stage="message.fallback_template",
                    data={"number": message.source_number, "instance": message.instance, "reason": "route_unavailable"},
                )
            )
            return self._outcomes.failed(message, plan.config, OUTSIDE_SERVICE_WINDOW, plan.events)
        number, route = found
        plan.events.append(
            at(
                "message.fallback_template",
                number,
                route,
                reason=OUTSIDE_SERVICE_WINDOW,
                template=template.name,
                language=template.language,
                after="receipt.failed",  # Meta's status failed it after accepting the content
            )
        )
        tried = self._attempts.make(message, number, route, plan.events, instead=template)
        ended = self._after(tried, plan=plan, gates=gates, number=number, route=route, unsent=unsent, attempt=attempt)
        if ended is not None:
            return ended
        return self._outcomes.unsent(
            job,
            tried.message,
            plan.config,
            plan.events,
            refusal=unsent.refusal or OUTSIDE_SERVICE_WINDOW,
            throttled=unsent.throttled,
            held=None,
            attempt=attempt,
        )

    def _after(
        self,
        tried: Tried,
        *,
        plan: Plan,
        gates: MessageGates,
        number: NumberRoutes,
        route: Route,
        unsent: _Unsent,
        attempt: int,
    ) -> SendOutcome | None:
        """The outcome when the attempt ends the message's send, else None (what it left noted)."""
        message, config, events = tried.message, plan.config, plan.events
        match tried:
            case Lost():
                return self._outcomes.skipped(message.id)
            case Refused(code=code) if code is not None:
                unsent.refusal = code
                if code == OUTSIDE_SERVICE_WINDOW:
                    gates.note_window_closed(number, route)
            case Throttled(error=error):
                unsent.throttled = error
            case Transient(error=error):
                return self._outcomes.transient(
                    message,
                    config=config,
                    number=number,
                    route=route,
                    error=error,
                    events=events,
                    attempt=attempt,
                )
            case Sent(provider_message_id=provider_message_id, instead=instead):
                return self._outcomes.sent(
                    message,
                    config=config,
                    number=number,
                    route=route,
                    provider_message_id=provider_message_id,
                    events=events,
                    remember_affinity=not plan.selection.keeps_affinity_after(number),
                    spam_history=gates.kept_after(route),
                    sent_as=SentAs.template(instead) if instead is not None else None,
                )
        return None

    def _woken_early(self, job: SendJob) -> bool:
        """The wake job arrived before the worker that queued it recorded WAITING (it still holds
        the message under the lease token the job carries): it must come back, not be dropped."""
        try:
            current = self._messages.get(job.tenant, job.message_id)
        except NotFound:
            return False
        return current.status is MessageStatus.SENDING and current.lease_token == job.wake


def _route_of(numbers: list[NumberRoutes], wanted: PendingRoute) -> tuple[NumberRoutes, Route] | None:
    """`wanted` among the plan's numbers (None: the key no longer sends through it)."""
    for number in numbers:
        if number.number_id != wanted.number_id:
            continue
        for route in number.routes:
            if (route.instance, route.provider_id) == (wanted.instance, wanted.provider_id):
                return number, route
    return None


@dataclass
class _Unsent:
    """Why no route has sent the message so far: a provider's refusal, a throttled number."""

    refusal: str | None = None
    throttled: ProviderThrottled | None = None


class SendWorker:
    """One SendQueue record: parse, process, and on RetryLater set its backoff before failing it."""

    def __init__(self, service: SendingService, backoff: Backoff) -> None:
        self._service = service
        self._backoff = backoff

    def handle(self, body: str, receipt_handle: str, receive_count: int) -> SendOutcome | None:
        """None for a malformed job (dropped: it can never succeed). Raises RetryLater."""
        try:
            job = SendJob.model_validate_json(body)
        except ValidationError:
            logger.error("malformed send job dropped")
            return None
        try:
            return self._service.process(job, receive_count)
        except RetryLater as exc:
            self._backoff.delay(receipt_handle, int(exc.details.get("delay", 0)))
            raise

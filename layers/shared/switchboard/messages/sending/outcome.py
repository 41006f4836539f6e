"""How a send ends: each outcome is one conditional write, then the client is told (best effort).

- SENT (with affinity, receipt index, the spam guard's history and the instance's usage in one
  transaction), then counted by the ban watch;
- FAILED, with the reason;
- `RetryLater` after a transient provider failure (the job goes back to SQS with backoff); a
  timeout is ambiguous (the message may have left): the retry goes to the same route first where
  a resend is safe, else the message ends FAILED `ambiguous_outcome`, as it does after a timeout
  on the last attempt;
- nothing sent: when every number able to send is paced, back to QUEUED with a fresh delayed job;
  when every number tried was throttled, `RetryLater`; a message with validity left and no
  provider refusal WAITING for a delayed job to try again; else FAILED `no_number_available` (or
  the provider's refusal code, or `outside_service_window` when a Cloud API number was passed over
  for the customer-service window).

A message finished meanwhile by another delivery ends SKIPPED: its write is refused, and nothing
is told twice.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from switchboard.core.clock import utcnow
from switchboard.core.errors import AlreadyFinal, ProviderError, ProviderThrottled, ProviderTimeout, RetryLater
from switchboard.core.observability import emit_metric, logger, metrics
from switchboard.messages.domain import (
    EXPIRED,
    Message,
    MessageStatus,
    PendingRoute,
    SendJob,
    SendOutcome,
    SentAs,
    TraceEvent,
    next_check_seconds,
)
from switchboard.messages.sending.plan import AMBIGUOUS_OUTCOME, may_resend
from switchboard.messages.sending.trace import pending_route
from switchboard.messages.spam_guard import SPAM_GUARD
from switchboard.messages.window import OUTSIDE_SERVICE_WINDOW

if TYPE_CHECKING:
    from switchboard.messages.choices import Menus
    from switchboard.messages.ports import DelayedJobs, Hold, Messages, StatusNotifier, Usage, Watch
    from switchboard.messages.spam_guard import KeptTexts
    from switchboard.pool.domain import NumberRoutes, Route, SendingConfig

NO_NUMBER = "no_number_available"
# Retried while the route a message may already have left through cannot send it again.
PENDING_ROUTE_UNAVAILABLE = "pending_route_unavailable"
MAX_DELAY_SECONDS = 900  # SQS's longest per-message delay


def retry_delay_seconds(attempt: int) -> int:
    """Backoff before attempt `attempt + 1`: 10 s, 20 s, 40 s, ... capped at 5 minutes."""
    return int(min(300, 10 * 2 ** max(0, attempt - 1)))


class Outcomes:
    def __init__(
        self,
        messages: Messages,
        *,
        notifier: StatusNotifier,
        max_attempts: int,
        usage: Usage | None = None,
        jobs: DelayedJobs | None = None,
        health: Watch | None = None,
        menus: Menus | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`jobs` queues the delayed job that wakes a WAITING message; without it (a worker that
        never waits) a message with a validity fails at once like one without. `menus` keeps the
        options of an interactive message once it is SENT, for the customer's answer."""
        self._menus = menus
        self._messages = messages
        self._notifier = notifier
        self._max_attempts = max_attempts
        self._usage = usage
        self._jobs = jobs
        self._health = health
        self._clock = clock

    def retries_left(self, attempt: int) -> bool:
        """Whether SQS delivers the job again after attempt `attempt` (the receive count)."""
        return attempt < self._max_attempts

    def skipped(self, message_id: str) -> SendOutcome:
        return SendOutcome(message_id=message_id, status="SKIPPED")

    def sent(
        self,
        message: Message,
        *,
        config: SendingConfig,
        number: NumberRoutes,
        route: Route,
        provider_message_id: str,
        events: list[TraceEvent],
        remember_affinity: bool,
        spam_history: KeptTexts | None,
        sent_as: SentAs | None = None,
    ) -> SendOutcome:
        """`sent_as`: the message's fallback template left in its place."""
        try:
            sent = self._messages.record_sent(
                message,
                number_id=number.number_id,
                source_number=number.digits,
                instance=route.instance,
                provider_id=route.provider_id,
                provider_message_id=provider_message_id,
                events=events,
                remember_affinity=remember_affinity,
                spam_history=spam_history,
                counted_on=route.source,
                sent_as=sent_as,
            )
        except AlreadyFinal:
            logger.warning("message finished by another delivery meanwhile", extra={"message_id": message.id})
            return self.skipped(message.id)
        logger.info(
            "message sent",
            extra={"message_id": message.id, "source_number": number.digits, "instance": route.instance},
        )
        metrics.add_metric(name="MessagesSent", unit="Count", value=1)
        if self._usage is not None and route.source is not None:
            self._usage.sent(route.source)
        if self._menus is not None and sent.sent_as is None:  # a template went: no menu is open
            self._menus.sent(sent, number_id=number.number_id, number=number.digits, kind=route.kind)
        self._observe_sent(route, sent)
        self._notify(sent, config)
        return SendOutcome(
            message_id=message.id, status=MessageStatus.SENT, source_number=number.digits, instance=route.instance
        )

    def failed(
        self, message: Message, config: SendingConfig | None, reason: str, events: list[TraceEvent]
    ) -> SendOutcome:
        events.append(TraceEvent(stage="message.failed", data={"reason": reason}))
        try:
            failed = self._messages.record_failed(message, reason, events)
        except AlreadyFinal:
            return self.skipped(message.id)
        logger.info("message failed", extra={"message_id": message.id, "reason": reason})
        metrics.add_metric(name="MessagesFailed", unit="Count", value=1)
        # Per reason too: a reason is one of a fixed set of codes (ours, the provider errors' and
        # the media's), a bounded dimension; the total above is what the failure-rate alarm reads.
        emit_metric("MessagesFailedByReason", reason=reason)
        self._notify(failed, config)
        return SendOutcome(message_id=message.id, status=MessageStatus.FAILED, failure_reason=reason)

    def transient(
        self,
        message: Message,
        *,
        config: SendingConfig,
        number: NumberRoutes,
        route: Route,
        error: ProviderError,
        events: list[TraceEvent],
        attempt: int,
    ) -> SendOutcome:
        """After a timeout or an unavailable provider. Raises RetryLater unless the message ends."""
        timeout = isinstance(error, ProviderTimeout)
        # A timeout with no resend allowed, or none left, ends ambiguous: the message may have
        # left, so the client must not read the failure as "not sent".
        if timeout and (not may_resend(route.kind, config) or not self.retries_left(attempt)):
            return self.failed(message, config, AMBIGUOUS_OUTCOME, events)
        pending = pending_route(number, route) if timeout else message.pending
        return self._retry(message, config=config, code=error.code, events=events, pending=pending, attempt=attempt)

    def in_doubt(
        self,
        message: Message,
        *,
        config: SendingConfig,
        pending: PendingRoute,
        events: list[TraceEvent],
        attempt: int,
    ) -> SendOutcome:
        """The message may have left through `pending`, which could not send it now (its number
        disconnected or held, the route gone from the pool, a refusal): no other route may, so it
        is tried again later through that one, and ends ambiguous when no attempt is left.
        Raises RetryLater otherwise."""
        if not self.retries_left(attempt):
            return self.failed(message, config, AMBIGUOUS_OUTCOME, events)
        return self._retry(
            message, config=config, code=PENDING_ROUTE_UNAVAILABLE, events=events, pending=pending, attempt=attempt
        )

    def unsent(
        self,
        job: SendJob,
        message: Message,
        config: SendingConfig,
        events: list[TraceEvent],
        *,
        refusal: str | None,
        throttled: ProviderThrottled | None,
        held: Hold | None,
        attempt: int,
    ) -> SendOutcome:
        """No route sent it. Raises RetryLater when it is to be tried again later on this job."""
        if held is not None and refusal is None:
            return self._defer(job, message, events, held)
        if throttled is not None and refusal is None:
            # Every number tried was throttled or held back: retried later, when the ban watch
            # has paused the throttled ones for new contacts (or their limit has passed).
            return self._retry(
                message, config=config, code=throttled.code, events=events, pending=None, attempt=attempt
            )
        return self._nothing_sent(job, message, config, events, refusal=refusal or _spam_guard_refusal(events))

    def _retry(
        self,
        message: Message,
        *,
        config: SendingConfig,
        code: str,
        events: list[TraceEvent],
        pending: PendingRoute | None,
        attempt: int,
    ) -> SendOutcome:
        if not self.retries_left(attempt):
            return self.failed(message, config, code, events)
        delay = retry_delay_seconds(attempt)
        metrics.add_metric(name="SendRetries", unit="Count", value=1)
        events.append(TraceEvent(stage="send.retry.scheduled", data={"reason": code, "delaySeconds": delay}))
        try:
            self._messages.record_retry(message, code, events, pending)
        except AlreadyFinal:
            return self.skipped(message.id)
        logger.info("send will be retried", extra={"message_id": message.id, "reason": code, "delay": delay})
        raise RetryLater(f"transient provider failure: {code}", delay=delay, reason=code)

    def _defer(self, job: SendJob, message: Message, events: list[TraceEvent], held: Hold) -> SendOutcome:
        """Every number able to send is over its pacing: back to QUEUED, and a fresh delayed job
        (its own receive count, so waiting never reaches the queue's redrive) for when the first
        frees up, at most SQS's 15 minutes away. QUEUED is written first: a crash before the new
        job exists leaves the original job, which SQS delivers again."""
        delay = max(1, min(held.wait_seconds, MAX_DELAY_SECONDS))
        first = message.last_error != held.reason
        if first:
            events.append(TraceEvent(stage="send.deferred", data={"reason": held.reason, "delaySeconds": delay}))
        if self._jobs is None:
            raise RetryLater(f"paced: {held.reason}", delay=delay, reason=held.reason)
        try:
            self._messages.record_retry(message, held.reason, events if first else [], None)
        except AlreadyFinal:
            return self.skipped(message.id)
        retry = job.model_copy(update={"wake": None})  # the same job otherwise (a pinned one stays pinned)
        self._jobs.send_later(retry.model_dump_json(exclude_none=True), delay)
        metrics.add_metric(name="SendsPaced", unit="Count", value=1)
        logger.info("send paced", extra={"message_id": message.id, "reason": held.reason, "delay": delay})
        return SendOutcome(message_id=message.id, status=MessageStatus.QUEUED)

    def _nothing_sent(
        self, job: SendJob, message: Message, config: SendingConfig, events: list[TraceEvent], *, refusal: str | None
    ) -> SendOutcome:
        """No number took it: with validity left and no provider refusal it waits, else it fails."""
        if refusal is None and message.expires_at is not None and self._jobs is not None:
            return self._wait(job, message, config, events)
        return self.failed(message, config, refusal or _window_refusal(events) or NO_NUMBER, events)

    def _wait(self, job: SendJob, message: Message, config: SendingConfig, events: list[TraceEvent]) -> SendOutcome:
        """No number could take it: WAITING until a delayed job tries the normal selection again.

        A fresh job rather than a visibility change: the wait never counts against SendQueue's
        redrive budget (maxReceiveCount), however long the validity. The job is queued before the
        status is written, so a crash in between leaves a job (which finds the message under this
        claim's lease and comes back) and never a WAITING message nothing will wake.
        """
        assert message.expires_at is not None and self._jobs is not None
        now = self._clock()
        seconds_left = (message.expires_at - now).total_seconds()
        if seconds_left <= 0:
            return self.failed(message, config, EXPIRED, events)
        delay = next_check_seconds(message.wait_checks, seconds_left)
        first = message.wait_checks == 0
        if first:
            events.append(
                TraceEvent(
                    stage="message.waiting",
                    data={"expiresAt": message.expires_at.isoformat(), "nextCheckSeconds": delay},
                )
            )
        wake = job.model_copy(update={"wake": message.lease_token})
        self._jobs.send_later(wake.model_dump_json(exclude_none=True), delay)
        try:
            # A re-check that still finds nothing leaves no trace: the first wait already says why.
            waiting = self._messages.record_waiting(message, now + timedelta(seconds=delay), events if first else [])
        except AlreadyFinal:
            return self.skipped(message.id)
        logger.info("message waiting for a number", extra={"message_id": message.id, "delay": delay})
        metrics.add_metric(name="SendWaits", unit="Count", value=1)
        if first:
            self._notify(waiting, config)
        return SendOutcome(message_id=message.id, status=MessageStatus.WAITING)

    def _observe_sent(self, route: Route, message: Message) -> None:
        if self._health is None or route.source is None:
            return
        try:
            self._health.sent(route.source, message.to, message.text)
        except Exception:
            logger.exception("send not counted by the ban watch", extra={"message_id": message.id})

    def _notify(self, message: Message, config: SendingConfig | None) -> None:
        """After a committed status change; without a config (the key is gone) there is no client webhook."""
        try:
            self._notifier.message_changed(message, config.webhook_url if config else None)
        except Exception:  # the client webhook must never fail or block the send
            logger.exception("client webhook not queued", extra={"message_id": message.id})


def _window_refusal(events: list[TraceEvent]) -> str | None:
    """`outside_service_window` when a Cloud API number was passed over for the window: what kept
    the message from the number that would have sent it, rather than "no number"."""
    closed = any(
        event.data.get("reason") == OUTSIDE_SERVICE_WINDOW for event in events if event.stage == "pool.instance.skipped"
    )
    return OUTSIDE_SERVICE_WINDOW if closed else None


def _spam_guard_refusal(events: list[TraceEvent]) -> str | None:
    """`spam_guard` when a spam guard refused a route: the message must not wait for a number."""
    refused = any(event.data.get("reason") == SPAM_GUARD for event in events if event.stage == "pool.instance.skipped")
    return SPAM_GUARD if refused else None

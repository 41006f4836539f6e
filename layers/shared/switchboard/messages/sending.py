"""The send worker's use case: pick the source number and instance, send, record the outcome.

Per job: claim the message (QUEUED -> SENDING under a lease, one conditional write that also
reads it): a message already final, or held by another worker, is skipped, so neither a
redelivered nor a concurrently delivered job sends twice. The plan (the recipient's affinity,
else a round-robin ticket) orders the numbers; inside a number its routes are tried in order.
Before each provider call the route is recorded as the message's `in_flight` (conditional on the
lease: a worker whose lease was taken over sends nothing); a redelivery that finds it still set
(the worker died mid-send) treats it as a timeout there: same route first where a resend is
safe, else FAILED `ambiguous_outcome`.

- `ProviderDisconnected`, `ProviderRejected`, a misconfigured route: next instance, then next
  number, each skip in the trace;
- `ProviderTimeout`, `ProviderUnavailable`: `RetryLater` (the job goes back to SQS with backoff).
  A timeout is ambiguous (the message may have left): where the kind is `retry_safe` the retry
  goes to the same instance first with the same message id; where it is not, the message ends
  FAILED `ambiguous_outcome` rather than risk a second copy, unless the key asked for
  at-least-once delivery. On the last attempt the message ends FAILED (`ambiguous_outcome`
  after a timeout: it may have left);
- an instance whose spam guard refuses the text (`spam_guard.py`): next instance, then next
  number, like a refusal;
- an instance the ban watch holds back (`health/`: paused, or paused for new contacts and the
  recipient is a new contact of its number: neither attached to it nor heard by it within the
  last 24 h): passed over unasked, the reason in the trace;
- `ProviderThrottled` (WhatsApp refused the number: 463, Meta 130429 / 131056): the ban watch
  hears it, next instance, then next number; when every number tried was throttled, `RetryLater`;
- a number over its pacing (`health/pacing.py`): next number; when every number able to send is
  paced, the message goes back to QUEUED with a fresh delayed job (see `_defer`);
- nothing could send: FAILED `no_number_available` (or the provider's refusal code); a message
  with validity left goes WAITING instead (see `_wait`), and one past its `expires_at` ends
  FAILED `expired` without being tried.

The outcome is one conditional write (SENT with affinity and receipt index, or FAILED); then a
client webhook is queued, best effort: it never fails the send.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import ValidationError

from switchboard.catalog.domain import Instance
from switchboard.core.clock import new_id, utcnow
from switchboard.core.errors import (
    AlreadyFinal,
    InvalidInput,
    NotFound,
    ProviderDisconnected,
    ProviderError,
    ProviderRejected,
    ProviderThrottled,
    ProviderTimeout,
    ProviderUnavailable,
    RetryLater,
    UnsupportedByProvider,
)
from switchboard.core.observability import logger, metrics
from switchboard.core.ports import Backoff, Secrets
from switchboard.core.secrets import instance_token_name, provider_secret_name
from switchboard.messages.domain import (
    EXPIRED,
    Message,
    MessageStatus,
    PendingRoute,
    SendJob,
    SendOutcome,
    TraceEvent,
    next_check_seconds,
)
from switchboard.messages.ports import DelayedJobs, Messages
from switchboard.messages.spam_guard import SPAM_GUARD, SpamCheck, SpamGuard
from switchboard.pool.domain import (
    Affinity,
    NumberRoutes,
    Route,
    SendingConfig,
    Ticket,
    known_to,
    plan_numbers,
)
from switchboard.providers.base import ProviderTarget, SentMessage
from switchboard.providers.kinds import spec_for

NO_NUMBER = "no_number_available"
# Longer than one invocation (30 s), shorter than SendQueue's visibility (180 s): a crashed
# worker's message is claimable again by the time SQS redelivers it.
INTERNAL_ERROR = "internal_error"
AMBIGUOUS_OUTCOME = "ambiguous_outcome"
LEASE_SECONDS = 60
MAX_DELAY_SECONDS = 900  # SQS's longest per-message delay


class TextSender(Protocol):
    """What a send needs of a provider client (`switchboard.providers.base.ProviderClient`)."""

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage: ...


class ConfigSource(Protocol):
    def get(self, tenant: str, api_key_id: str) -> SendingConfig: ...


class Tickets(Protocol):
    def next_ticket(self, api_key_id: str) -> Ticket: ...


class Usage(Protocol):
    def record_outgoing(self, instance: Instance, when: datetime, message_id: str | None = None) -> bool: ...


class Notifier(Protocol):
    def message_changed(self, message: Message, webhook_url: str | None) -> None: ...


class Watch(Protocol):
    """The ban watch (`switchboard.health.service.HealthWatch`)."""

    @property
    def now(self) -> datetime: ...
    def health_of(self, instance_keys: Collection[str]) -> Mapping[str, InstanceHealth]: ...
    def sent(self, instance: Instance, recipient: str | None = None, text: str | None = None) -> None: ...
    def refused(self, instance: Instance, provider_code: str | None) -> None: ...


class Pacing(Protocol):
    """Per-number pacing (`switchboard.health.pacing.Pacer`)."""

    def admit(self, number: NumberRoutes, *, new_contact: bool) -> Hold | None: ...


class Hold(Protocol):
    @property
    def reason(self) -> str: ...
    @property
    def wait_seconds(self) -> int: ...


class InstanceHealth(Protocol):
    def blocks(self, now: datetime, *, new_contact: bool) -> str | None: ...
    def active_reasons(self, now: datetime) -> Sequence[HealthReason]: ...


class HealthReason(Protocol):
    @property
    def code(self) -> str: ...


def retry_delay_seconds(attempt: int) -> int:
    """Backoff before attempt `attempt + 1`: 10 s, 20 s, 40 s, ... capped at 5 minutes."""
    return int(min(300, 10 * 2 ** max(0, attempt - 1)))


class SendingService:
    def __init__(
        self,
        messages: Messages,
        *,
        configs: ConfigSource,
        tickets: Tickets,
        secrets: Secrets,
        client_for: Callable[[str], TextSender],
        notifier: Notifier,
        max_attempts: int,
        usage: Usage | None = None,
        jobs: DelayedJobs | None = None,
        spam_guard: SpamGuard | None = None,
        health: Watch | None = None,
        pacer: Pacing | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`jobs` queues the delayed job that wakes a WAITING message; without it (a worker that
        never waits) a message with a validity fails at once like one without."""
        self._messages = messages
        self._configs = configs
        self._tickets = tickets
        self._secrets = secrets
        self._client_for = client_for
        self._notifier = notifier
        self._max_attempts = max_attempts
        self._usage = usage
        self._jobs = jobs
        self._spam_guard = spam_guard
        self._health = health
        self._pacer = pacer
        self._clock = clock

    def process(self, job: SendJob, attempt: int) -> SendOutcome:
        """Send one queued message. `attempt` is the SQS receive count (1 on first delivery).

        Raises RetryLater (with `delay`) on a transient provider failure before the last attempt.
        """
        message = self._messages.claim(job.message_id, job.tenant, new_id("lease"), LEASE_SECONDS, job.wake)
        if message is None:
            if job.wake is not None and self._woken_early(job):
                raise RetryLater("the message is not yet recorded WAITING", delay=LEASE_SECONDS)
            logger.info("send skipped: message final or held by another worker", extra={"message_id": job.message_id})
            metrics.add_metric(name="SendSkipped", unit="Count", value=1)
            return SendOutcome(message_id=job.message_id, status="SKIPPED")
        try:
            return self._send_claimed(job, message, attempt)
        except RetryLater:
            raise
        except Exception:
            # An unexpected error (not a provider's answer): SQS retries the job; on the last
            # attempt the message ends FAILED rather than waiting in the DLQ as SENDING forever.
            if attempt < self._max_attempts:
                raise
            logger.exception("send failed on its last attempt", extra={"message_id": message.id})
            return self._fail(message, self._config_if_readable(job), INTERNAL_ERROR, [])

    def _config_if_readable(self, job: SendJob) -> SendingConfig | None:
        """The key's configuration, so a failure after an unexpected error still reaches the
        client's webhook; None when it cannot be read either (the failure is still recorded)."""
        try:
            return self._configs.get(job.tenant, job.api_key_id)
        except Exception:
            logger.warning("sending configuration unreadable", extra={"message_id": job.message_id})
            return None

    def _send_claimed(self, job: SendJob, message: Message, attempt: int) -> SendOutcome:
        try:
            config = self._configs.get(job.tenant, job.api_key_id)
        except NotFound:
            return self._fail(message, None, "api_key_revoked", [])
        checked = self._sendable(message, config)
        if isinstance(checked, SendOutcome):
            return checked
        message = checked
        affinity = self._messages.affinity(job.tenant, job.to) if config.mode == "pool" and config.pool else None
        events: list[TraceEvent] = []
        plan = plan_numbers(config, affinity, lambda: self._tickets.next_ticket(config.api_key_id))
        events.append(TraceEvent(stage="pool.number.resolved", data=plan.resolved))
        numbers = _pending_first(plan.numbers, message, events)
        gate = self._gate(config, plan.numbers, affinity)
        pace = PaceRecord(config, affinity, self._clock())
        refusal: str | None = None
        throttled: ProviderThrottled | None = None
        checks: dict[str, SpamCheck] = {}  # this message's spam guard reads, by instance key
        for number in numbers:
            if not number.connected:
                events.append(_skip("pool.number.skipped", number, None, "disconnected"))
                continue
            for route in self._paced(
                self._unguarded_routes(number, message, events, gate, checks), number, pace, events
            ):
                try:
                    message = self._mark_in_flight(message, number, route)
                except AlreadyFinal:
                    # This worker's lease ran out and another worker claimed the message: that one sends.
                    return SendOutcome(message_id=message.id, status="SKIPPED")
                try:
                    sent = self._send(route, message)
                except ProviderThrottled as exc:
                    # WhatsApp refused the number, not the message (nothing was sent): the ban
                    # watch hears it, and the next number may send it now.
                    code = exc.details.get("provider_code")
                    events.append(_skip("pool.instance.skipped", number, route, exc.code, providerCode=code))
                    self._observe_refusal(route, code)
                    throttled = exc
                    continue
                except (ProviderDisconnected, ProviderRejected, InvalidInput, UnsupportedByProvider) as exc:
                    events.append(_skip("pool.instance.skipped", number, route, exc.code))
                    if isinstance(exc, ProviderRejected):
                        self._observe_refusal(route, exc.details.get("provider_code"))
                    if not isinstance(exc, ProviderDisconnected):
                        refusal = exc.code
                    continue
                except ProviderError as exc:  # timeout or unavailable: transient
                    events.append(_skip("send.attempt.failed", number, route, exc.code))
                    # A timeout with no resend allowed, or none left, ends ambiguous: the message
                    # may have left, so the client must not read the failure as "not sent".
                    if isinstance(exc, ProviderTimeout) and (
                        not _may_resend(route, config) or attempt >= self._max_attempts
                    ):
                        return self._fail(message, config, AMBIGUOUS_OUTCOME, events)
                    pending = _pending(number, route) if isinstance(exc, ProviderTimeout) else message.pending
                    return self._retry(
                        message, config=config, code=exc.code, events=events, pending=pending, attempt=attempt
                    )
                events.append(_at("message.sent", number, route, providerMessageId=sent))
                return self._sent(
                    message,
                    config=config,
                    number=number,
                    route=route,
                    provider_message_id=sent,
                    events=events,
                    remember_affinity=not plan.keeps_affinity_after(number),
                    spam_check=checks.get(route.source.key) if route.source is not None else None,
                )
            events.extend(pace.passed_over(number))
        return self._unsent(
            job, message, config, events, refusal=refusal, throttled=throttled, held=pace.held, attempt=attempt
        )

    # --- steps -------------------------------------------------------------------------------

    def _sendable(self, message: Message, config: SendingConfig) -> Message | SendOutcome:
        """The message to send (with the route a dead worker left in flight as its pending
        route), or the outcome when it must not be sent at all."""
        if message.in_flight is not None:
            # The worker that held it died mid-send: the message may have left through that
            # route, so it is resent only where a resend cannot make a copy (or the key accepts one).
            if not _may_resend_kind(message.in_flight.kind, config):
                return self._fail(message, config, AMBIGUOUS_OUTCOME, [_interrupted(message.in_flight)])
            message = message.model_copy(update={"pending": message.in_flight})
        if message.expires_at is not None and message.pending is None and self._clock() >= message.expires_at:
            # Past its validity it must not leave (unless a timed-out send of it may have: that
            # route is retried as usual).
            return self._fail(message, config, EXPIRED, [])
        return message

    def _mark_in_flight(self, message: Message, number: NumberRoutes, route: Route) -> Message:
        """Record the route before calling it, so a redelivery after a crash knows where the send
        may have gone. Raises AlreadyFinal when the lease was lost: the caller must not send."""
        marked = _pending(number, route)
        if message.in_flight == marked:
            return message
        return self._messages.record_in_flight(message, marked)

    def _send(self, route: Route, message: Message) -> str:
        name = (
            instance_token_name(self._secrets, message.tenant, route.instance)
            if route.instance is not None
            else provider_secret_name(self._secrets, route.provider_id, "admin-token")
        )
        try:
            token = self._secrets.get(name)
        except Exception as exc:  # the secret store is down or the token is missing: retried, then FAILED
            raise ProviderUnavailable(f"credentials of {route.instance or route.provider_id} unavailable") from exc
        target = ProviderTarget(
            kind=route.kind,
            base_url=route.base_url,
            provider_instance_id=route.provider_instance_id,
            instance_token=token,
            meta_phone_id=route.meta_phone_id,
        )
        client = self._client_for(route.kind)
        return client.send_text(target, message.to, message.text, idempotency_key=message.id).provider_message_id

    def _sent(
        self,
        message: Message,
        *,
        config: SendingConfig,
        number: NumberRoutes,
        route: Route,
        provider_message_id: str,
        events: list[TraceEvent],
        remember_affinity: bool,
        spam_check: SpamCheck | None = None,
    ) -> SendOutcome:
        # The guard's history joins the send's record, built from the read that let the text
        # through: no second read, no request of its own.
        kept = None if self._spam_guard is None or spam_check is None else self._spam_guard.kept_after(spam_check)
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
                spam_history=kept,
            )
        except AlreadyFinal:
            logger.warning("message finished by another delivery meanwhile", extra={"message_id": message.id})
            return SendOutcome(message_id=message.id, status="SKIPPED")
        logger.info(
            "message sent",
            extra={"message_id": message.id, "source_number": number.digits, "instance": route.instance},
        )
        metrics.add_metric(name="MessagesSent", unit="Count", value=1)
        self._count_usage(route, sent)
        self._observe_sent(route, sent)
        self._notify(sent, config)
        return SendOutcome(
            message_id=message.id, status=MessageStatus.SENT, source_number=number.digits, instance=route.instance
        )

    def _fail(
        self, message: Message, config: SendingConfig | None, reason: str, events: list[TraceEvent]
    ) -> SendOutcome:
        events.append(TraceEvent(stage="message.failed", data={"reason": reason}))
        try:
            failed = self._messages.record_failed(message, reason, events)
        except AlreadyFinal:
            return SendOutcome(message_id=message.id, status="SKIPPED")
        logger.info("message failed", extra={"message_id": message.id, "reason": reason})
        metrics.add_metric(name="MessagesFailed", unit="Count", value=1)
        self._notify(failed, config)
        return SendOutcome(message_id=message.id, status=MessageStatus.FAILED, failure_reason=reason)

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
        if attempt >= self._max_attempts:
            return self._fail(message, config, code, events)
        delay = retry_delay_seconds(attempt)
        metrics.add_metric(name="SendRetries", unit="Count", value=1)
        events.append(TraceEvent(stage="send.retry.scheduled", data={"reason": code, "delaySeconds": delay}))
        try:
            self._messages.record_retry(message, code, events, pending)
        except AlreadyFinal:
            return SendOutcome(message_id=message.id, status="SKIPPED")
        logger.info("send will be retried", extra={"message_id": message.id, "reason": code, "delay": delay})
        raise RetryLater(f"transient provider failure: {code}", delay=delay, reason=code)

    def _unsent(
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
        if held is not None and refusal is None:
            return self._defer(job, message, events, held)
        if throttled is not None and refusal is None:
            # Every number tried was throttled or held back: retried later, when the ban watch
            # has paused the throttled ones for new contacts (or their limit has passed).
            return self._retry(
                message, config=config, code=throttled.code, events=events, pending=None, attempt=attempt
            )
        return self._nothing_sent(job, message, config, events, refusal=refusal or _spam_guard_refusal(events))

    def _nothing_sent(
        self, job: SendJob, message: Message, config: SendingConfig, events: list[TraceEvent], *, refusal: str | None
    ) -> SendOutcome:
        """No number took it: with validity left and no provider refusal it waits, else it fails."""
        if refusal is None and message.expires_at is not None and self._jobs is not None:
            return self._wait(job, message, config, events)
        return self._fail(message, config, refusal or NO_NUMBER, events)

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
            return self._fail(message, config, EXPIRED, events)
        delay = next_check_seconds(message.wait_checks, seconds_left)
        first = message.wait_checks == 0
        if first:
            events.append(
                TraceEvent(
                    stage="message.waiting",
                    data={"expiresAt": message.expires_at.isoformat(), "nextCheckSeconds": delay},
                )
            )
        wake = SendJob(
            message_id=message.id, tenant=job.tenant, api_key_id=job.api_key_id, to=job.to, wake=message.lease_token
        )
        self._jobs.send_later(wake.model_dump_json(exclude_none=True), delay)
        try:
            # A re-check that still finds nothing leaves no trace: the first wait already says why.
            waiting = self._messages.record_waiting(message, now + timedelta(seconds=delay), events if first else [])
        except AlreadyFinal:
            return SendOutcome(message_id=message.id, status="SKIPPED")
        logger.info("message waiting for a number", extra={"message_id": message.id, "delay": delay})
        metrics.add_metric(name="SendWaits", unit="Count", value=1)
        if first:
            self._notify(waiting, config)
        return SendOutcome(message_id=message.id, status=MessageStatus.WAITING)

    def _woken_early(self, job: SendJob) -> bool:
        """The wake job arrived before the worker that queued it recorded WAITING (it still holds
        the message under the lease token the job carries): it must come back, not be dropped."""
        try:
            current = self._messages.get(job.tenant, job.message_id)
        except NotFound:
            return False
        return current.status is MessageStatus.SENDING and current.lease_token == job.wake

    def _count_usage(self, route: Route, message: Message) -> None:
        """One outgoing message on the instance's usage. SENT happens once per message,
        so no dedupe marker is needed; a failure is logged and never fails the send."""
        if self._usage is None or route.source is None or message.sent_at is None:
            return
        try:
            self._usage.record_outgoing(route.source, message.sent_at)
        except Exception:
            logger.exception("outgoing usage not counted", extra={"message_id": message.id})

    def _unguarded_routes(
        self,
        number: NumberRoutes,
        message: Message,
        events: list[TraceEvent],
        gate: HealthGate | None,
        checks: dict[str, SpamCheck],
    ) -> Iterator[Route]:
        """The number's routes in order, less those the ban watch holds back for this recipient and
        those whose spam guard refuses the text (each skip traced when reached, so the trace keeps
        the order of the attempts). Each guard check made is kept in `checks` for the send's record."""
        for route in _routes_in_order(number, message.pending):
            held = gate.holds(number, route) if gate is not None else None
            if held is not None:
                reason, codes = held
                events.append(_skip("pool.instance.skipped", number, route, reason, healthReasons=codes))
            elif self._spam_refuses(route, message, checks):
                events.append(_skip("pool.instance.skipped", number, route, SPAM_GUARD))
            else:
                yield route

    def _spam_refuses(self, route: Route, message: Message, checks: dict[str, SpamCheck]) -> bool:
        """Whether the route's instance's spam guard refuses the text; its history is read once per
        message and instance (a pending route met again reuses the read)."""
        instance = route.source
        if self._spam_guard is None or instance is None:
            return False
        check = checks.get(instance.key)
        if check is None:
            check = self._spam_guard.check(instance, message.to, message.text)
            if check is None:
                return False
            checks[instance.key] = check
        return check.refused

    def _paced(
        self, routes: Iterator[Route], number: NumberRoutes, pace: PaceRecord, events: list[TraceEvent]
    ) -> Iterator[Route]:
        """`routes`, once the number's pacing admits this message (asked when its first usable
        route comes up, so a number passed over for other reasons spends nothing)."""
        for index, route in enumerate(routes):
            if index == 0 and self._pacer is not None:
                held = self._pacer.admit(number, new_contact=pace.new_contact(number))
                if held is not None:
                    events.append(
                        _skip("pool.number.skipped", number, None, held.reason, retryAfterSeconds=held.wait_seconds)
                    )
                    pace.hold(number, held)
                    return
            yield route

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
            return SendOutcome(message_id=message.id, status="SKIPPED")
        retry = SendJob(message_id=message.id, tenant=job.tenant, api_key_id=job.api_key_id, to=job.to)
        self._jobs.send_later(retry.model_dump_json(exclude_none=True), delay)
        metrics.add_metric(name="SendsPaced", unit="Count", value=1)
        logger.info("send paced", extra={"message_id": message.id, "reason": held.reason, "delay": delay})
        return SendOutcome(message_id=message.id, status=MessageStatus.QUEUED)

    def _gate(self, config: SendingConfig, numbers: list[NumberRoutes], affinity: Affinity | None) -> HealthGate | None:
        """The health of every instance the plan may use (read once per message, from the ban
        watch's per-container copy), and which numbers the recipient is no new contact of."""
        if self._health is None:
            return None
        keys = [route.source.key for number in numbers for route in number.routes if route.source is not None]
        if not keys:
            return None
        try:
            health = self._health.health_of(keys)
        except Exception:  # the ban watch unreadable: send as if every number were healthy
            logger.exception("instance health unreadable")
            return None
        now = self._health.now
        pool_mode = config.mode == "pool" and bool(config.pool)
        return HealthGate(health, now, known_to(config, affinity, now), pool_mode=pool_mode)

    def _observe_sent(self, route: Route, message: Message) -> None:
        if self._health is None or route.source is None:
            return
        try:
            self._health.sent(route.source, message.to, message.text)
        except Exception:
            logger.exception("send not counted by the ban watch", extra={"message_id": message.id})

    def _observe_refusal(self, route: Route, provider_code: object) -> None:
        if self._health is None or route.source is None:
            return
        try:
            self._health.refused(route.source, provider_code if isinstance(provider_code, str) else None)
        except Exception:
            logger.exception("refusal not recorded by the ban watch", extra={"instance": route.instance})

    def _notify(self, message: Message, config: SendingConfig | None) -> None:
        """After a committed status change; without a config (the key is gone) there is no client webhook."""
        try:
            self._notifier.message_changed(message, config.webhook_url if config else None)
        except Exception:  # the client webhook must never fail or block the send
            logger.exception("client webhook not queued", extra={"message_id": message.id})


class PaceRecord:
    """Which numbers are new to the recipient (pacing's new-contact budget), and the hold that
    frees up soonest among the numbers pacing passed over.

    A number is no new contact of the recipient when it is the one attached to them (the
    pool's affinity) or when they wrote to it within the last 24 h (`HEARD_WINDOW`)."""

    def __init__(self, config: SendingConfig, affinity: Affinity | None, now: datetime) -> None:
        # Only the pool knows who a number's contacts are; a default number has nowhere else to go.
        self._pool_mode = config.mode == "pool" and bool(config.pool)
        self._known = known_to(config, affinity, now) if self._pool_mode else frozenset()
        self.held: Hold | None = None
        self.held_number: str | None = None

    def new_contact(self, number: NumberRoutes) -> bool:
        return self._pool_mode and number.number_id not in self._known

    def passed_over(self, number: NumberRoutes) -> list[TraceEvent]:
        """The trace entry of a number none of whose routes sent (pacing already traced its own)."""
        if self.held_number == number.number_id:
            return []
        return [_skip("pool.number.skipped", number, None, "no_instance_could_send")]

    def hold(self, number: NumberRoutes, held: Hold) -> None:
        self.held_number = number.number_id
        if self.held is None or held.wait_seconds < self.held.wait_seconds:
            self.held = held


class HealthGate:
    """Which routes the ban watch holds back for one message.

    A paused instance sends nothing; one paused for new contacts still sends to a recipient
    who is no new contact of its number: attached to it (the pool's affinity: an existing
    conversation) or who wrote to it within the last 24 h (WhatsApp's reach-out timelock spares
    them too). In default mode there is no other number to go to, so only a full pause holds
    the default number back.
    """

    def __init__(
        self,
        health: Mapping[str, InstanceHealth],
        now: datetime,
        known: Collection[str],
        *,
        pool_mode: bool,
    ) -> None:
        self._health = health
        self._now = now
        self._known = known
        self._pool_mode = pool_mode

    def holds(self, number: NumberRoutes, route: Route) -> tuple[str, list[str]] | None:
        """(`health_<state>`, the active reasons' codes) when `route` must not send, else None."""
        health = self._health.get(route.source.key) if route.source is not None else None
        if health is None:
            return None
        new_contact = self._pool_mode and number.number_id not in self._known
        state = health.blocks(self._now, new_contact=new_contact)
        if state is None:
            return None
        return f"health_{state}", [reason.code for reason in health.active_reasons(self._now)]


def _may_resend(route: Route, config: SendingConfig) -> bool:
    return _may_resend_kind(route.kind, config)


def _may_resend_kind(kind: str | None, config: SendingConfig) -> bool:
    # A route without a kind was stored before routes carried one: only resendable ones were.
    return kind is None or spec_for(kind).retry_safe or config.at_least_once


def _spam_guard_refusal(events: list[TraceEvent]) -> str | None:
    """`spam_guard` when a spam guard refused a route: the message must not wait for a number."""
    refused = any(event.data.get("reason") == SPAM_GUARD for event in events if event.stage == "pool.instance.skipped")
    return SPAM_GUARD if refused else None


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


def _routes_in_order(number: NumberRoutes, pending: PendingRoute | None) -> list[Route]:
    routes = list(number.routes)
    if pending is not None and pending.number_id == number.number_id:
        routes.sort(key=lambda route: (route.instance, route.provider_id) != (pending.instance, pending.provider_id))
    return routes


def _pending(number: NumberRoutes, route: Route) -> PendingRoute:
    return PendingRoute(
        number_id=number.number_id, instance=route.instance, provider_id=route.provider_id, kind=route.kind
    )


def _skip(stage: str, number: NumberRoutes, route: Route | None, reason: str, **data: object) -> TraceEvent:
    return _at(stage, number, route, reason=reason, **data)


def _at(stage: str, number: NumberRoutes, route: Route | None, **data: object) -> TraceEvent:
    return TraceEvent(
        stage=stage,
        data={
            "number": number.digits,
            "instance": route.instance if route else None,
            "providerId": route.provider_id if route else None,
            **data,
        },
    )


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

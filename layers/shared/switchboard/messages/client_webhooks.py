"""Client webhooks: `message.waiting|sent|failed|delivered|read` to the API key's `webhookUrl`.

A message's status change reaches ClientWebhookQueue from the bus: the writers publish one
`message.status.changed` (messages/status_events.py) and a rule of the bus puts the event, as
EventBridge delivers it, on the queue when the key has a webhook URL and the status has a client
event. An instance's event is still queued as a job by its writer (`ClientWebhookPublisher`).
The client-webhooks function turns either into a `ClientWebhookJob` and delivers it
(`ClientWebhookDeliverer`), signed with Standard Webhooks
headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`) by the `standardwebhooks`
package, with the key's signing secret from the secret store. A failed delivery raises, so SQS
retries it with backoff and finally parks it in the DLQ; the send is never blocked by it.

EventBridge delivers at least once, so one change may reach the queue twice: a status change's
`webhook-id` is derived from the message and the status (`status_webhook_id`), the same for both
copies, which is what Standard Webhooks receivers deduplicate on.

The signing secret (`whsec_...`) is per API key: created on first use, rotated and shown once
by `POST /api/api-keys/{key_id}/webhook-secret`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets as random
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from pydantic import ConfigDict, Field, ValidationError
from standardwebhooks import Webhook

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import ApiKey, Instance
from switchboard.core.clock import new_id, utcnow
from switchboard.core.errors import InvalidInput, NotFound, RetryLater
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import emit_metric, logger
from switchboard.core.ports import Backoff, JobQueue, Secrets
from switchboard.core.urls import check_outbound_url
from switchboard.messages.delivery_log import DeliveryAttempt, DeliveryRecorder, short_error
from switchboard.messages.domain import ClientEvent, ClientWebhookJob, MessageStatus

EVENT_FOR_STATUS: dict[MessageStatus, ClientEvent] = {
    MessageStatus.WAITING: "message.waiting",  # queued once, when it starts waiting for a number
    MessageStatus.SENT: "message.sent",
    MessageStatus.FAILED: "message.failed",
    MessageStatus.DELIVERED: "message.delivered",
    MessageStatus.READ: "message.read",
}


def instance_signing_secret_name(store: Secrets, tenant: str, instance: str) -> str:
    return store.name("instances", tenant, instance, "events-webhook-secret")


class HttpPoster(Protocol):
    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """POST and answer the status code; raises on a transport error."""
        ...


class Keys(Protocol):
    def get_api_key(self, tenant: str, key_id: str) -> ApiKey: ...
    def get_instance(self, tenant: str, name: str) -> Instance: ...


def signing_secret_name(store: Secrets, api_key_id: str) -> str:
    return store.name("api-keys", api_key_id, "webhook-secret")


def new_signing_secret() -> str:
    return "whsec_" + base64.b64encode(random.token_bytes(32)).decode()


def retry_delay_seconds(attempt: int, first: int = 30) -> int:
    """`first` (30 s), then twice as long each time (60 s, 120 s, ...), capped at 15 minutes (SQS's
    maximum delay): eight attempts span about 1 h 45 min."""
    return int(min(900, first * 2 ** max(0, attempt - 1)))


class ClientWebhookPublisher:
    """Queues an instance's event for its events webhook (a message's status change comes from
    the bus instead, see the module's docstring)."""

    def __init__(self, queue: JobQueue) -> None:
        self._queue = queue

    def instance_event(self, instance: Instance, event: str, data: dict[str, Any]) -> None:
        """Queue an instance's event for its `eventsWebhookUrl` (nothing when it has none)."""
        if not instance.events_webhook_url:
            return
        job = ClientWebhookJob.model_validate(
            {
                "id": new_id("whk"),
                "tenant": instance.tenant,
                "instance": instance.name,
                "event": event,
                "timestamp": utcnow(),
                "data": data,
            }
        )
        self._queue.send(job.model_dump_json(exclude_none=True))


class StatusChangedDetail(Model):
    """The detail of `message.status.changed` (messages/status_events.py `status_detail`)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    tenant: str
    key_id: str = Field(alias="keyId")
    message_id: str = Field(alias="messageId")
    status: MessageStatus
    at: datetime
    client_webhook: bool = Field(default=False, alias="clientWebhook")
    destination_number: str = Field(alias="destinationNumber")
    source_number: str | None = Field(default=None, alias="sourceNumber")
    # Kept as published (ISO strings): the webhook's body carries them exactly so.
    sent_at: str | None = Field(default=None, alias="sentAt")
    failure_reason: str | None = Field(default=None, alias="failureReason")
    expires_at: str | None = Field(default=None, alias="expiresAt")
    # The fallback template sent in the message's place (`messages.domain.SentAs`).
    sent_as: dict[str, Any] | None = Field(default=None, alias="sentAs")


class StatusChangedEvent(Model):
    """`message.status.changed` as EventBridge puts it on ClientWebhookQueue (its envelope's
    fields as AWS sends them; Powertools' EventBridgeModel is the same shape, but importing it
    loads every parser model at the function's cold start)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    version: str
    id: str
    detail_type: Literal["message.status.changed"] = Field(alias="detail-type")
    source: Literal["switchboard"]
    account: str
    time: datetime
    region: str
    resources: list[str]
    detail: StatusChangedDetail


def status_webhook_id(message_id: str, status: MessageStatus, *, sent_as: bool = False) -> str:
    """The `webhook-id` of a message's change to `status`: every copy of the change has the same.
    A message SENT again as its fallback template (Meta failed the free-form send later) is
    another change, with another id: a receiver deduplicating by id must not drop it."""
    change = f"{message_id}\n{status.value}" + ("\ntemplate" if sent_as else "")
    digest = hashlib.sha256(change.encode()).hexdigest()
    return f"whk_{digest[:20]}"


def status_job(change: StatusChangedDetail) -> ClientWebhookJob | None:
    """The client webhook of one status change (None: the status has no client event); its
    `data` is `client_event_data` of the message as the change left it."""
    event = EVENT_FOR_STATUS.get(change.status)
    if event is None:
        return None
    return ClientWebhookJob(
        id=status_webhook_id(change.message_id, change.status, sent_as=change.sent_as is not None),
        tenant=change.tenant,
        api_key_id=change.key_id,
        event=event,
        timestamp=change.at,
        data={
            "messageId": change.message_id,
            "sourceNumber": change.source_number,
            "destinationNumber": change.destination_number,
            "status": change.status.value,
            "sentAt": change.sent_at,
            "failureReason": change.failure_reason,
            "expiresAt": change.expires_at,
            "sentAs": change.sent_as,
        },
    )


class ClientWebhookDeliverer:
    def __init__(
        self,
        keys: Keys,
        store: Secrets,
        poster: HttpPoster,
        audit: Audit,
        *,
        local_mode: bool,
        log: DeliveryRecorder | None = None,
        max_attempts: int = 8,
        retry_seconds: int = 30,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._keys = keys
        self._store = store
        self._poster = poster
        self._audit = audit
        self._local_mode = local_mode
        self._log = log
        self._max_attempts = max_attempts
        self._retry_seconds = retry_seconds
        self._clock = clock
        self._monotonic = monotonic

    def deliver(self, job: ClientWebhookJob, attempt: int) -> bool:
        """POST the job to the destination's current URL; each attempt's end is in the delivery
        log. False when there is nothing to deliver to, when the URL is refused (`dropped`) and
        when this was the last attempt (`failed`: the log's dead-letter view holds it, replayable).

        Raises RetryLater (with `delay`) on a non-2xx answer or a transport error before the last
        attempt. The URL is checked against the outbound policy (SSRF) at call time.
        """
        destination = self._destination(job)
        if destination is None:
            return False
        webhook_url, secret_name = destination
        try:
            # The poster's transport resolves the host once and dials only an address the policy
            # allows; resolving here as well would be a second lookup that proves nothing.
            url = check_outbound_url(webhook_url, local_mode=self._local_mode, resolve=False)
        except InvalidInput as exc:
            return self._dropped(job, exc, 0)
        body = json.dumps(job.payload(), separators=(",", ":"))
        now = self._clock()
        signature = Webhook(self._secret(secret_name)).sign(job.id, now, body)
        headers = {
            "content-type": "application/json",
            "webhook-id": job.id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signature,
        }
        started = self._monotonic()
        status: int | None = None
        error: str | None = None
        try:
            status = self._poster.post(url, body.encode(), headers)
        except InvalidInput as exc:  # the host resolved to an address the policy refuses
            return self._dropped(job, exc, self._elapsed_ms(started))
        except Exception as exc:
            # The error's kind only: an exception's text may carry the URL.
            error = f"no answer ({type(exc).__name__})"
        latency = self._elapsed_ms(started)
        if status is not None and 200 <= status < 300:
            self._record(
                job, DeliveryAttempt(at=self._clock(), status_code=status, latency_ms=latency, outcome="delivered")
            )
            logger.info("client webhook delivered", extra={"webhook_id": job.id, "event": job.event})
            return True
        error = error or f"answered {status}"
        if attempt >= self._max_attempts:
            outcome = DeliveryAttempt(
                at=self._clock(), status_code=status, latency_ms=latency, error=error, outcome="failed"
            )
            self._record(job, outcome, final=True)
            logger.warning(
                "client webhook failed: every attempt refused",
                extra={"webhook_id": job.id, "event": job.event, "attempts": attempt, "status": status},
            )
            return False
        delay = retry_delay_seconds(attempt, self._retry_seconds)
        at = self._clock()
        retrying = DeliveryAttempt(at=at, status_code=status, latency_ms=latency, error=error, outcome="retrying")
        self._record(job, retrying, next_retry_at=at + timedelta(seconds=delay))
        if status is None:
            raise RetryLater("client webhook unreachable", delay=delay)
        raise RetryLater(f"client webhook answered {status}", delay=delay, status=status)

    def _record(
        self,
        job: ClientWebhookJob,
        attempt: DeliveryAttempt,
        *,
        next_retry_at: datetime | None = None,
        final: bool = False,
    ) -> None:
        """The attempt in the delivery log and its count. A log that cannot be written never
        fails a delivery that went through or will be retried anyway; a final one (failed,
        dropped) raises, so the queue keeps the job (and finally parks it in the DLQ) rather than
        forgetting it without a trace."""
        # Bounded: four outcomes (the destination, a tenant's key or instance, is in the log).
        emit_metric("ClientWebhookDeliveries", outcome=attempt.outcome)
        if self._log is None:
            return
        try:
            self._log.attempted(job, attempt, next_retry_at)
        except Exception:
            logger.exception("client webhook attempt not logged", extra={"webhook_id": job.id})
            if final:
                raise

    def _elapsed_ms(self, started: float) -> int:
        return max(0, round((self._monotonic() - started) * 1000))

    def _destination(self, job: ClientWebhookJob) -> tuple[str, str] | None:
        """The current URL and signing secret's name: the instance's for an instance event, else
        the API key's; None when the key or instance is gone or has no URL any more."""
        try:
            if job.instance is not None:
                instance = self._keys.get_instance(job.tenant, job.instance)
                url = instance.events_webhook_url
                secret_name = instance_signing_secret_name(self._store, job.tenant, job.instance)
            elif job.api_key_id is not None:
                key = self._keys.get_api_key(job.tenant, job.api_key_id)
                url, secret_name = key.webhook_url, signing_secret_name(self._store, key.id)
            else:
                return None
        except NotFound:
            logger.info("client webhook dropped: key or instance deleted", extra={"webhook_id": job.id})
            return None
        return (url, secret_name) if url else None

    def _dropped(self, job: ClientWebhookJob, refusal: InvalidInput, latency: int) -> bool:
        """A refused URL stays refused: retrying would only fill the dead-letter queue. The log
        says why, for the tenant to fix its URL and replay."""
        logger.warning("client webhook dropped: URL refused", extra={"webhook_id": job.id, "reason": refusal.message})
        dropped = DeliveryAttempt(
            at=self._clock(), latency_ms=latency, error=short_error(refusal.message), outcome="dropped"
        )
        self._record(job, dropped, final=True)
        return False

    def rotate_secret(self, principal: Principal, key_id: str) -> str:
        """A new signing secret for the key, returned once; the previous one stops at once."""
        self._keys.get_api_key(principal.tenant, key_id)
        secret = new_signing_secret()
        self._store.put(signing_secret_name(self._store, key_id), secret)
        self._audit.record(principal, "api_key.webhook_secret_rotated", key_id)
        return secret

    def rotate_instance_secret(self, principal: Principal, name: str) -> str:
        """A new signing secret for the instance's events webhook, returned once."""
        self._keys.get_instance(principal.tenant, name)
        secret = new_signing_secret()
        self._store.put(instance_signing_secret_name(self._store, principal.tenant, name), secret)
        self._audit.record(principal, "instance.events_webhook_secret_rotated", name)
        return secret

    def _secret(self, name: str) -> str:
        try:
            return self._store.get(name)
        except GetParameterError:
            self._store.put(name, new_signing_secret())
            return self._store.get(name, fresh=True)


class ClientWebhookWorker:
    """One ClientWebhookQueue record (a job, or a status change from the bus): deliver, and on
    RetryLater set its backoff before failing it."""

    def __init__(self, deliverer: ClientWebhookDeliverer, backoff: Backoff) -> None:
        self._deliverer = deliverer
        self._backoff = backoff

    def handle(self, body: str, receipt_handle: str, receive_count: int) -> bool:
        job = self._job(body)
        if job is None:
            return False
        try:
            return self._deliverer.deliver(job, receive_count)
        except RetryLater as exc:
            self._backoff.delay(receipt_handle, int(exc.details.get("delay", 0)))
            raise

    def _job(self, body: str) -> ClientWebhookJob | None:
        try:
            raw = json.loads(body)
            if isinstance(raw, dict) and "detail-type" in raw:
                return status_job(StatusChangedEvent.model_validate(raw).detail)
            return ClientWebhookJob.model_validate(raw)
        except (ValueError, ValidationError):
            logger.error("malformed client webhook job dropped")
            return None

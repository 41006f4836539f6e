"""The webhook delivery log: every delivery of a client webhook, what each attempt got, and replays.

A delivery is one event (its `webhook-id`) to one destination: an API key's `webhookUrl` or an
instance's `eventsWebhookUrl`. The client-webhooks function records each attempt when it ends
(one UpdateItem: the answer's status code, the latency, the error, when it is tried next), so an
operator reads what happened without reading logs. A delivery's status:

- `retrying`: its last attempt failed and the queue brings it back at `nextRetryAt`;
- `delivered`: an attempt was answered 2xx;
- `failed`: every attempt failed (`CLIENT_WEBHOOK_MAX_ATTEMPTS`): it is in the dead-letter view
  and stays there until replayed;
- `dropped`: the URL is refused by the outbound policy (retrying would not change that);
- `replaying`: an operator replayed it; queued again, not attempted yet.

A replay queues the job exactly as it was first queued, under the same `webhook-id`; the deliverer
signs it when it sends it (a fresh `webhook-timestamp` and signature, with the destination's
current URL and secret). It is refused while the delivery is `retrying` or a replay of it is
queued: the receiver would get the event twice at once. A replay queued and never attempted (a
queue that lost it) may be replayed again after `REPLAY_PENDING`.

A delivery is kept `DELIVERY_RETENTION` (30 days) after its last attempt, then the table's TTL
removes it: long enough to replay what an outage of a client's endpoint left undelivered, after
the queue's own retries (at most about 1 h 45 min) are over.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal, Protocol

from pydantic import ConfigDict

from switchboard.audit.ports import Audit
from switchboard.core.clock import utcnow
from switchboard.core.errors import DeliveryInProgress, InvalidInput, QueueUnavailable
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.core.ports import JobQueue
from switchboard.messages.domain import ClientWebhookJob

DeliveryStatus = Literal["retrying", "delivered", "failed", "dropped", "replaying"]
DELIVERY_STATUSES: tuple[DeliveryStatus, ...] = ("retrying", "delivered", "failed", "dropped", "replaying")
# What a replay may start from: a delivery whose attempts are over.
REPLAYABLE: tuple[DeliveryStatus, ...] = ("delivered", "failed", "dropped")
DELIVERY_RETENTION = timedelta(days=30)
REPLAY_PENDING = timedelta(minutes=15)
MAX_DELIVERY_PAGE = 100
MAX_REPLAY_RANGE = 100  # deliveries one replay of a time range queues; its cursor gives the rest
MAX_ERROR_CHARS = 200


class DeliveryAttempt(Model):
    """One attempt: when it ended, the answer's status code (None: no answer), how long it took,
    the error in words (never the URL), and what it made of the delivery."""

    model_config = ConfigDict(frozen=True)

    at: datetime
    status_code: int | None = None
    latency_ms: int = 0
    error: str | None = None
    outcome: DeliveryStatus


class Delivery(Model):
    """A delivery as the log keeps it: the job (what a replay queues again) and its attempts."""

    tenant: str
    id: str  # the Standard Webhooks `webhook-id`
    event: str
    api_key_id: str | None = None
    instance: str | None = None
    status: DeliveryStatus
    attempts: int = 0
    replays: int = 0
    status_code: int | None = None
    latency_ms: int | None = None
    error: str | None = None
    next_retry_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    delivered_at: datetime | None = None
    replayed_at: datetime | None = None
    history: list[DeliveryAttempt] = []
    job: ClientWebhookJob


class DeliveryFilter(Model):
    """What a listing of the delivery log asks for; every field narrows it."""

    status: tuple[DeliveryStatus, ...] | None = None
    event: str | None = None
    api_key_id: str | None = None
    instance: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 50
    cursor: str | None = None

    @property
    def dead_letters(self) -> bool:
        """Only deliveries that exhausted their attempts: the dead-letter index serves it."""
        return self.status == ("failed",)


class DeliveryPage(Model):
    items: list[Delivery]
    cursor: str | None = None


class ReplayedRange(Model):
    """What a replay of a time range of the dead-letter view queued, and where the rest starts."""

    replayed: list[str]
    skipped: list[str]  # replayed by someone else meanwhile
    cursor: str | None = None


class DeliveryStore(Protocol):
    def record_attempt(self, job: ClientWebhookJob, attempt: DeliveryAttempt, next_retry_at: datetime | None) -> None:
        """One attempt's end, creating the delivery at its first."""
        ...

    def get(self, tenant: str, delivery_id: str) -> Delivery:
        """Raises NotFound (another tenant's delivery too)."""
        ...

    def page(self, tenant: str, query: DeliveryFilter) -> DeliveryPage: ...

    def mark_replaying(self, tenant: str, delivery_id: str, now: datetime) -> Delivery:
        """Make the delivery `replaying` (one conditional write); the delivery as it was before.
        Raises NotFound, or DeliveryInProgress while it is retrying or a replay is queued."""
        ...

    def unmark_replaying(self, tenant: str, before: Delivery) -> None:
        """Put back the delivery as it was (`before`), when its replay could not be queued."""
        ...


class DeliveryRecorder(Protocol):
    """What the deliverer needs of the log: each attempt's end."""

    def attempted(self, job: ClientWebhookJob, attempt: DeliveryAttempt, next_retry_at: datetime | None) -> None: ...


class DeliveryLog:
    """The log's use cases: record attempts (the deliverer), list, read and replay (the API)."""

    def __init__(
        self,
        store: DeliveryStore,
        queue: JobQueue | None = None,
        audit: Audit | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._store = store
        self._queue = queue
        self._audit = audit
        self._clock = clock

    def attempted(self, job: ClientWebhookJob, attempt: DeliveryAttempt, next_retry_at: datetime | None) -> None:
        self._store.record_attempt(job, attempt, next_retry_at)

    def list(self, principal: Principal, query: DeliveryFilter) -> DeliveryPage:
        return self._store.page(principal.tenant, query)

    def get(self, principal: Principal, delivery_id: str) -> Delivery:
        return self._store.get(principal.tenant, delivery_id)

    def replay(self, principal: Principal, delivery_id: str) -> Delivery:
        """Queue the delivery's job again, same `webhook-id`; audited.

        Raises NotFound, DeliveryInProgress (still retrying, or a replay already queued), or
        QueueUnavailable when the queue refuses it (the delivery is then left as it was)."""
        replaying = self._queued_again(principal.tenant, delivery_id)
        if self._audit is not None:
            self._audit.record(principal, "webhook_delivery.replayed", delivery_id)
        return replaying

    def replay_failed(
        self, principal: Principal, since: datetime, until: datetime, cursor: str | None = None
    ) -> ReplayedRange:
        """Replay the deliveries of the dead-letter view first attempted between `since` and
        `until`, at most `MAX_REPLAY_RANGE` per call (the answer's cursor continues); audited once."""
        if until < since:
            raise InvalidInput("until is before since", code="invalid_range")
        query = DeliveryFilter(status=("failed",), since=since, until=until, limit=MAX_REPLAY_RANGE, cursor=cursor)
        page = self._store.page(principal.tenant, query)
        replayed: list[str] = []
        skipped: list[str] = []
        for delivery in page.items:
            try:
                self._queued_again(principal.tenant, delivery.id)
            except DeliveryInProgress:
                skipped.append(delivery.id)
                continue
            replayed.append(delivery.id)
        if self._audit is not None and replayed:
            window = f"{since.isoformat()}..{until.isoformat()}"
            self._audit.record(principal, "webhook_delivery.replayed_range", window, after={"deliveries": replayed})
        return ReplayedRange(replayed=replayed, skipped=skipped, cursor=page.cursor)

    def _queued_again(self, tenant: str, delivery_id: str) -> Delivery:
        if self._queue is None:
            raise QueueUnavailable("client webhooks are not configured here")
        now = self._clock()
        before = self._store.mark_replaying(tenant, delivery_id, now)
        try:
            self._queue.send(before.job.model_dump_json(exclude_none=True))
        except Exception as exc:
            logger.warning("replay not queued", extra={"webhook_id": delivery_id, "error": type(exc).__name__})
            self._store.unmark_replaying(tenant, before)
            raise QueueUnavailable("the replay could not be queued; try again") from exc
        logger.info("client webhook replayed", extra={"webhook_id": delivery_id, "event": before.event})
        return before.model_copy(
            update={"status": "replaying", "replays": before.replays + 1, "replayed_at": now, "next_retry_at": None}
        )


def short_error(text: str) -> str:
    """An attempt's error as the log keeps it: one line, bounded."""
    return " ".join(text.split())[:MAX_ERROR_CHARS]

"""Bodies and answers of the webhook delivery log (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from switchboard.core.wire import Body, Instant, View
from switchboard.messages.delivery_log import Delivery, DeliveryAttempt, DeliveryPage, DeliveryStatus, ReplayedRange

STATUS_WORDS = (
    "`retrying` (the last attempt failed; tried again at `nextRetryAt`), `delivered`, `failed` (every "
    "attempt failed: in the dead-letter view, replayable), `dropped` (the URL is refused by the outbound "
    "policy) or `replaying` (replayed, not attempted yet)."
)


class DestinationView(View):
    type: Literal["apiKey", "instance"]
    id: str = Field(description="The API key's id, or the instance's name.")


class AttemptView(View):
    at: datetime
    status_code: int | None = Field(description="The answer's HTTP status; null: no answer (timeout, refused).")
    latency_ms: int
    error: str | None
    outcome: DeliveryStatus

    @classmethod
    def of(cls, attempt: DeliveryAttempt) -> AttemptView:
        return cls.model_validate(attempt.model_dump())


class DeliveryView(View):
    id: str = Field(description="The Standard Webhooks `webhook-id`: the same on every attempt and replay.")
    event: str
    destination: DestinationView
    status: DeliveryStatus = Field(description=STATUS_WORDS)
    attempts: int = Field(description="Attempts made, replays included.")
    replays: int
    status_code: int | None = Field(description="The last attempt's HTTP status.")
    latency_ms: int | None
    error: str | None = Field(description="The last attempt's error, in words.")
    next_retry_at: datetime | None
    created_at: datetime = Field(description="When it was first attempted.")
    updated_at: datetime
    delivered_at: datetime | None
    replayed_at: datetime | None
    history: list[AttemptView] = Field(description="Every attempt, oldest first.")
    payload: dict[str, Any] = Field(description="The body every attempt posts: `{event, timestamp, data}`.")

    @classmethod
    def of(cls, delivery: Delivery) -> DeliveryView:
        if delivery.instance is not None:
            destination = DestinationView(type="instance", id=delivery.instance)
        else:
            destination = DestinationView(type="apiKey", id=delivery.api_key_id or "")
        return cls(
            id=delivery.id,
            event=delivery.event,
            destination=destination,
            status=delivery.status,
            attempts=delivery.attempts,
            replays=delivery.replays,
            status_code=delivery.status_code,
            latency_ms=delivery.latency_ms,
            error=delivery.error,
            next_retry_at=delivery.next_retry_at,
            created_at=delivery.created_at,
            updated_at=delivery.updated_at,
            delivered_at=delivery.delivered_at,
            replayed_at=delivery.replayed_at,
            history=[AttemptView.of(attempt) for attempt in delivery.history],
            payload=delivery.job.payload(),
        )


class DeliveryPageView(View):
    items: list[DeliveryView]
    cursor: str | None = Field(description="Pass it as `cursor` for the next page; null: this is the last.")

    @classmethod
    def of(cls, page: DeliveryPage) -> DeliveryPageView:
        return cls(items=[DeliveryView.of(delivery) for delivery in page.items], cursor=page.cursor)


class ReplayRange(Body):
    since: Instant = Field(strict=False, description="The first attempt's time, from (included).")
    until: Instant = Field(strict=False, description="The first attempt's time, to (included).")
    cursor: str | None = Field(default=None, max_length=2048, description="The previous answer's, to go on.")


class ReplayedRangeView(View):
    replayed: list[str] = Field(description="The deliveries queued again (their `webhook-id`).")
    skipped: list[str] = Field(description="Replayed by someone else meanwhile: left as they are.")
    cursor: str | None = Field(description="More failed deliveries in the range: send it back to replay them.")

    @classmethod
    def of(cls, result: ReplayedRange) -> ReplayedRangeView:
        return cls(replayed=result.replayed, skipped=result.skipped, cursor=result.cursor)

"""The message records, as the send API and the send worker use them."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from switchboard.messages.domain import Message, PendingRoute, TraceEvent
from switchboard.messages.spam_guard import KeptTexts
from switchboard.pool.domain import Affinity


class Messages(Protocol):
    def create(self, message: Message) -> None: ...

    def get(self, tenant: str, message_id: str) -> Message: ...

    def claim(
        self, message_id: str, tenant: str, token: str, lease_seconds: int, wake: str | None = None
    ) -> Message | None: ...

    def affinity(self, tenant: str, recipient: str) -> Affinity | None: ...

    def record_sent(
        self,
        message: Message,
        *,
        number_id: str,
        source_number: str,
        instance: str | None,
        provider_id: str,
        provider_message_id: str,
        events: list[TraceEvent],
        remember_affinity: bool,
        spam_history: KeptTexts | None = None,
    ) -> Message: ...

    def record_failed(self, message: Message, reason: str, events: list[TraceEvent]) -> Message: ...

    def record_retry(
        self, message: Message, error_code: str, events: list[TraceEvent], pending: PendingRoute | None
    ) -> None: ...

    def record_in_flight(self, message: Message, route: PendingRoute) -> Message: ...

    def record_waiting(self, message: Message, next_check_at: datetime, events: list[TraceEvent]) -> Message: ...


class DelayedJobs(Protocol):
    """The send queue, for a job that must not be delivered before `delay_seconds` (0..900)."""

    def send_later(self, body: str, delay_seconds: int) -> None: ...


class DailyQuota(Protocol):
    """The tenant's messages per UTC day, counted as each message is accepted."""

    def charge(self, tenant: str) -> None:
        """Count one message; raises DailyQuotaExceeded when the tenant's day is spent."""
        ...


class StatusNotifier(Protocol):
    """Told once per committed status change of a message (see `messages.status_events`)."""

    def message_changed(self, message: Message, webhook_url: str | None) -> None: ...

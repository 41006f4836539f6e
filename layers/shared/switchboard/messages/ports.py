"""The message records, as the send API and the send worker use them."""

from __future__ import annotations

from typing import Protocol

from switchboard.messages.domain import Message, PendingRoute, TraceEvent
from switchboard.pool.domain import Affinity


class Messages(Protocol):
    def create(self, message: Message) -> None: ...

    def get(self, tenant: str, message_id: str) -> Message: ...

    def claim(self, message_id: str, tenant: str, token: str, lease_seconds: int) -> Message | None: ...

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
    ) -> Message: ...

    def record_failed(self, message: Message, reason: str, events: list[TraceEvent]) -> Message: ...

    def record_retry(
        self, message: Message, error_code: str, events: list[TraceEvent], pending: PendingRoute | None
    ) -> None: ...

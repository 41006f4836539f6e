"""Ports that every capability shares: the secret store, queues and the event bus."""

from __future__ import annotations

from typing import Any, Protocol


class Secrets(Protocol):
    """Write-only secrets (SSM SecureString in AWS): the table keeps only a hint of each."""

    def name(self, *parts: str) -> str: ...
    def put(self, name: str, value: str) -> None: ...
    def get(self, name: str, *, fresh: bool = False) -> str: ...
    def delete(self, name: str) -> None: ...


class JobQueue(Protocol):
    def send(self, body: str) -> None: ...


class Backoff(Protocol):
    """Makes a received queue message visible again after `seconds` (its retry delay)."""

    def delay(self, receipt_handle: str, seconds: int) -> None: ...


class Publisher(Protocol):
    """The event bus (`core.bus.EventPublisher`): best effort, after the change is committed."""

    def publish(self, detail_type: str, detail: dict[str, Any]) -> bool: ...

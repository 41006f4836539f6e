"""Ports that every capability shares: the secret store and queues."""

from __future__ import annotations

from typing import Protocol


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

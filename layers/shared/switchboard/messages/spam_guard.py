"""The per-instance spam guard: an instance with `spamguard_enabled` does not send a recipient a
text equal to one of the last 2 it sent them within 24 hours.

Texts are compared normalised (trimmed, inner whitespace collapsed, casefolded) and kept only as
SHA-256 hashes. The history of one (instance, recipient) is one small item, written after a
successful send; two workers sending to the same recipient at once may lose one of the two
entries (last writer wins), which a guard against repeated texts can accept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import ConfigDict

from switchboard.catalog.domain import Instance, utcnow
from switchboard.core.model import Model

SPAM_GUARD = "spam_guard"
WINDOW = timedelta(hours=24)
KEPT = 2


def normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def text_hash(text: str) -> str:
    return hashlib.sha256(normalised(text).encode()).hexdigest()


class SentText(Model):
    model_config = ConfigDict(frozen=True)

    hash: str
    at: datetime


class SpamHistory(Protocol):
    def recent(self, instance: str, recipient: str) -> list[SentText]:
        """The texts last sent through `instance` (an `Instance.key`) to `recipient`, newest first."""
        ...

    def replace(self, instance: str, recipient: str, texts: list[SentText], expires_at: datetime) -> None: ...


class SpamGuard:
    def __init__(self, history: SpamHistory, clock: Callable[[], datetime] = utcnow) -> None:
        self._history = history
        self._clock = clock

    def refuses(self, instance: Instance, recipient: str, text: str) -> bool:
        """Whether `instance` must not send `text` to `recipient` now (False when its guard is off)."""
        if not instance.spamguard_enabled:
            return False
        digest = text_hash(text)
        return any(sent.hash == digest for sent in self._within_window(instance, recipient))

    def remember(self, instance: Instance, recipient: str, text: str) -> None:
        """Record a text just sent through a guarded instance (nothing for an unguarded one)."""
        if not instance.spamguard_enabled:
            return
        now = self._clock()
        texts = [SentText(hash=text_hash(text), at=now), *self._within_window(instance, recipient)][:KEPT]
        self._history.replace(instance.key, recipient, texts, now + WINDOW)

    def _within_window(self, instance: Instance, recipient: str) -> list[SentText]:
        since = self._clock() - WINDOW
        return [sent for sent in self._history.recent(instance.key, recipient) if sent.at > since]

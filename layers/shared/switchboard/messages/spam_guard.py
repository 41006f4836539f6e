"""The per-instance spam guard: an instance with `spamguard_enabled` does not send a recipient a
text equal to one of the last 2 it sent them within 24 hours.

Texts are compared normalised (trimmed, inner whitespace collapsed, casefolded) and kept only as
SHA-256 hashes. The history of one (instance, recipient) is one small item, read once per message
(`check`) and, after a successful send, rewritten from that same read in the transaction that
records the send (`kept_after`): no second read, no request of its own. Two workers sending to the
same recipient at once may lose one of the two entries (last writer wins), which a guard against
repeated texts can accept.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import ConfigDict

from switchboard.catalog.domain import Instance
from switchboard.core.clock import utcnow
from switchboard.core.model import Model
from switchboard.core.text import text_hash

SPAM_GUARD = "spam_guard"
WINDOW = timedelta(hours=24)
KEPT = 2


class SentText(Model):
    model_config = ConfigDict(frozen=True)

    hash: str
    at: datetime


class SpamCheck(Model):
    """One message's text against the history of (instance, recipient) as read for it: what the
    guard decides from, and what the send's record starts from (so the history is read once)."""

    model_config = ConfigDict(frozen=True)

    instance: str
    recipient: str
    digest: str
    recent: tuple[SentText, ...]
    since: datetime

    @property
    def refused(self) -> bool:
        return any(sent.hash == self.digest and sent.at > self.since for sent in self.recent)


class KeptTexts(Model):
    """The history of (instance, recipient) after a send, newest first, and when it expires:
    written with the send's record, in the same transaction."""

    model_config = ConfigDict(frozen=True)

    instance: str
    recipient: str
    texts: tuple[SentText, ...]
    expires_at: datetime


class SpamHistory(Protocol):
    def recent(self, instance: str, recipient: str) -> list[SentText]:
        """The texts last sent through `instance` (an `Instance.key`) to `recipient`, newest first."""
        ...


class SpamGuard:
    def __init__(self, history: SpamHistory, clock: Callable[[], datetime] = utcnow) -> None:
        self._history = history
        self._clock = clock

    def check(self, instance: Instance, recipient: str, text: str) -> SpamCheck | None:
        """`text` to `recipient` through `instance` against its history (one read); None when the
        instance's guard is off (nothing read, nothing to keep)."""
        if not instance.spamguard_enabled:
            return None
        return SpamCheck(
            instance=instance.key,
            recipient=recipient,
            digest=text_hash(text),
            recent=tuple(self._history.recent(instance.key, recipient)),
            since=self._clock() - WINDOW,
        )

    def kept_after(self, check: SpamCheck) -> KeptTexts:
        """The history once the checked text has been sent now: it first, then the texts of the
        read still within the window, at most `KEPT`; it expires a window after the send."""
        now = self._clock()
        since = now - WINDOW
        texts = [SentText(hash=check.digest, at=now), *(sent for sent in check.recent if sent.at > since)]
        return KeptTexts(
            instance=check.instance, recipient=check.recipient, texts=tuple(texts[:KEPT]), expires_at=now + WINDOW
        )

"""What the rest of switchboard asks of the media capability: put inline bytes in the bucket,
get a message's file into the bucket from wherever its provider keeps it, read it back.

The bucket is private and encrypted; keys start with the tenant's prefix and never hold a
secret. Every file is typed by its bytes and checked against its kind's limits before it is
stored: what fails is a `MediaUnavailable`, with a stable reason the agent is told in words.
"""

from __future__ import annotations

from typing import Literal, Protocol

from switchboard.core.clock import Deadline
from switchboard.core.errors import SwitchboardError
from switchboard.providers.content import Media, MediaRef

UnavailableReason = Literal[
    "expired",  # the provider no longer has it (Meta's id after ~7 days, a 404 or 410)
    "not_found",
    "too_large",  # over its kind's limit (announced or measured)
    "bad_type",  # an executable, or bytes that are not what the kind allows
    "mismatch",  # bytes whose sha256 or size differ from what the provider announced
    "provider_error",  # the provider failed (5xx, timeout) and retries did not help
    "too_slow",  # the provider did not hand it over within the time a forward may wait
    "forbidden_url",  # a URL the outbound policy refuses (not the provider's own host)
    "no_source",  # the provider said a file was sent and gave no way to fetch it
]


class MediaUnavailable(SwitchboardError):
    """A message's file that cannot reach the bucket. `retryable`: a later try may succeed (the
    provider answered 5xx or timed out); otherwise the agent gets a placeholder at once."""

    def __init__(self, reason: UnavailableReason, detail: str = "", *, retryable: bool = False) -> None:
        super().__init__(detail or reason, code=reason)
        self.reason: UnavailableReason = reason
        self.retryable = retryable


class MediaIntake(Protocol):
    def put_inline(self, owner_tag: str | None, instance: str, message_id: str, media: Media, data: bytes) -> Media:
        """The ingest's claim check: `data` typed, checked and stored; returns `media` with
        `stored` set and `inline` kept. Raises `MediaUnavailable` (not retryable) for bytes
        refused by type or size: the event then carries the reason instead of the file."""
        ...


class MediaResolver(Protocol):
    def resolve(
        self, owner_tag: str | None, instance: str, message_id: str, media: Media, *, deadline: Deadline | None = None
    ) -> MediaRef:
        """`media.stored` if set, else its bytes fetched from `media.source` through the
        instance's provider and stored (idempotent by message id: a second call after a
        crash finds the object and fetches nothing). Raises `MediaUnavailable`; `too_slow`
        (retryable) when the fetch had not ended by `deadline`."""
        ...


class MediaReader(Protocol):
    def read(self, ref: MediaRef) -> bytes:
        """The stored bytes of `ref` (checked against its sha256)."""
        ...

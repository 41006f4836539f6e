"""Provider webhook events, after the signature and the instance binding were verified.

The ingest turns each event of an authentic delivery into a `ProviderEvent` (catalog/events.py). Its effects come
in two kinds, each owned by the capability whose state it changes:

- an `AcceptWrite` joins the unit of work accepting the event (its dedupe marker and pending
  record) with its repository's operations: they commit exactly once with it, never again,
  and cost no request of their own. Only a write that cannot be refused belongs here (a counter,
  say), or one whose refusal gives way (an optional update: a heard mark that only moves
  forward): any other refused condition would cancel the event's acceptance with it.
- an `EffectHandler` runs after that commit (a queue message, a state guarded by `seq`).
  Handlers must be idempotent: the ingest may run them again for the same event (a redelivery
  of an event whose effects were not all applied, or the sweep of pending events), and they
  guard their own state with `seq` or the config version so that an older event never
  overwrites a newer state.

The event's `instance` is the instance's configuration as the ingest bound it (possibly kept
by the container since an earlier delivery): an effect reads its state from its own store.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import field_validator

from switchboard.catalog.events import ProviderEvent
from switchboard.core.model import Model

if TYPE_CHECKING:
    from switchboard.core.store import UnitOfWork

EventStatus = Literal["pending", "applied", "ignored"]
# What storing an event came to: `accepted` (ours to apply), `stale` (the catalog it was bound
# against changed: nothing written), `replayed` (its bearer token brought a body it may no longer
# bring: nothing written), or a redelivery: `duplicate` (applied, ignored or no record left),
# `in_flight` (pending, leased to another delivery) or `claimable` (pending, lease run out).
Acceptance = Literal["accepted", "stale", "replayed", "duplicate", "in_flight", "claimable"]

# A provider delivery may be up to 1 MB, most of it media posted as base64 inside a message
# event; a DynamoDB item holds at most 400 KB. What is stored of an event is bounded well below:
MAX_TEXT_CHARS = 65_536  # WhatsApp's own limit on a text message
MAX_FIELD_CHARS = 4_096  # any other string longer than this is media or a thumbnail: dropped
MAX_DATA_BYTES = 256 * 1024  # the stored `data` as JSON, whatever it holds
TEXT_KEYS = frozenset({"text", "body", "caption", "reason"})  # `body`: a text content's (`providers.content`)
MAX_FALLBACK_KEYS = 256


def storable(data: dict[str, Any]) -> dict[str, Any]:
    """`data` bounded for storage: long strings that are not texts dropped, texts capped.

    The effects of an event read its texts, ids and states, never its media; what is dropped is
    what no effect reads. A text is cut only past WhatsApp's own limit or when the event would
    not fit otherwise; an event that is still too large (thousands of keys, which no provider
    sends) keeps only the top-level entries that fit."""
    text_limit, field_limit = MAX_TEXT_CHARS, MAX_FIELD_CHARS
    bounded: dict[str, Any] = _bounded(data, text_limit, field_limit)
    size = _size(bounded)
    while size > MAX_DATA_BYTES and (text_limit or field_limit):
        text_limit, field_limit = text_limit // 2, field_limit // 2
        bounded = _bounded(bounded, text_limit, field_limit)
        size, before = _size(bounded), size
        if size == before:  # no string left to cut
            break
    if size <= MAX_DATA_BYTES:
        return bounded
    kept: dict[str, Any] = {}
    budget = MAX_DATA_BYTES - 2
    for name, item in list(bounded.items())[:MAX_FALLBACK_KEYS]:
        cost = _size({name: item})
        if cost <= budget:
            kept[name] = item
            budget -= cost
    return kept


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def _bounded(value: Any, text_limit: int, field_limit: int, key: str = "") -> Any:
    if isinstance(value, dict):
        kept = {name: _bounded(item, text_limit, field_limit, str(name)) for name, item in value.items()}
        return {name: item for name, item in kept.items() if item is not _DROPPED}
    if isinstance(value, list):
        items = (_bounded(item, text_limit, field_limit, key) for item in value)
        return [item for item in items if item is not _DROPPED]
    if isinstance(value, str):
        if key in TEXT_KEYS:
            return value[:text_limit]
        return value if len(value) <= field_limit else _DROPPED
    return value


_DROPPED = object()


class StoredEvent(Model):
    provider_id: str
    provider_instance_id: str
    instance_key: str  # `Instance.key`
    name: str
    event_id: str
    seq: int | None = None
    data: dict[str, Any]
    envelope_instance: dict[str, Any] | None = None
    received_at: datetime
    status: EventStatus = "pending"
    reason: str | None = None  # why an `ignored` event is not applied
    reason_code: str | None = None  # the same, as one of `providers.base.IgnoredKind`
    body_sha256: str | None = None  # the delivery's raw body is never stored, only its digest

    @field_validator("data", "envelope_instance")
    @classmethod
    def _storable(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else storable(value)


class IgnoredEvent(Model):
    """A provider event an instance's provider sent and the ingest acknowledged without applying it."""

    event_id: str
    name: str
    reason: str
    reason_code: str
    received_at: datetime


class IgnoredPage(Model):
    items: list[IgnoredEvent]
    cursor: str | None = None


class EffectHandler(Protocol):
    def __call__(self, event: ProviderEvent) -> None: ...


class AcceptWrite(Protocol):
    def __call__(self, uow: UnitOfWork, event: ProviderEvent) -> None: ...


class NotAccepted(Exception):
    """The event store refused to accept an event: what its stored state says of the delivery
    (`replayed`, or a redelivery: `duplicate`, `in_flight`, `claimable`); nothing was written."""

    def __init__(self, acceptance: Acceptance) -> None:
        super().__init__(acceptance)
        self.acceptance: Acceptance = acceptance

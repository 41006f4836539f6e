"""Incoming messages in the message log, and what became of each downstream.

The ingest's acceptance of a `message` event writes its row (an `AcceptWrite`: it joins the
transaction that accepts the event, costs no request of its own and is written exactly once per
event). A message the forward will not take (no sender, no content) is logged `ignored: <reason>`
there and then; every other one is `received` until the forwarder reports `forwarded`,
`forwarded: placeholder (<reason>)` (its file could not be had: the agent got a placeholder
saying why), `no_downstream` or `failed: <reason>` through `IncomingOutcomes`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from switchboard.catalog.events import ProviderEvent
from switchboard.core.observability import emit_metric, logger
from switchboard.core.store import UnitOfWork
from switchboard.messages.domain import (
    INCOMING_FAILED,
    INCOMING_FORWARDED,
    INCOMING_IGNORED,
    INCOMING_NO_DOWNSTREAM,
    IncomingRecord,
    recipient_digits,
)
from switchboard.providers.content import MediaMessage, Text, content_from, kind_of

# How long an incoming message stays in the log (the table's TTL removes it after). The
# conversation itself lives in the downstream; the log answers "what came in and what became of it"
# for the last quarter.
INCOMING_RETENTION = timedelta(days=90)


class IncomingLogStore(Protocol):
    def record_incoming(self, uow: UnitOfWork, record: IncomingRecord) -> None: ...

    def record_outcome(self, event_key: str, status: str, outcome: str, reason: str | None) -> bool: ...


class IncomingOutcomes(Protocol):
    """What the forwarder reports of an incoming message, by its forward's event id."""

    def forwarded(self, event_key: str) -> None: ...

    def forwarded_with_placeholder(self, event_key: str, reason: str) -> None:
        """Posted, its file replaced by a placeholder saying `reason`."""
        ...

    def no_downstream(self, event_key: str) -> None: ...

    def failed(self, event_key: str, reason: str) -> None: ...


def event_key(event: ProviderEvent) -> str:
    """The key of an incoming message: the id its forward carries too."""
    return f"{event.provider_id}#{event.instance.provider_instance_id}#{event.event_id}"


class IncomingLog:
    """Writes incoming messages into the log and their outcome (`IncomingOutcomes`)."""

    def __init__(self, store: IncomingLogStore) -> None:
        self._store = store

    def record(self, uow: UnitOfWork, event: ProviderEvent) -> None:
        """The event's message in the log, joining the unit of work that accepts it."""
        data = event.data
        sender_raw = data.get("from")
        lid = data.get("lid")
        sender = recipient_digits(sender_raw) if isinstance(sender_raw, str) else None
        contact = sender or (lid if isinstance(lid, str) and lid else None)
        message_id = data.get("id")
        kind, text, ignored = "unknown", None, None
        try:
            content = content_from(data)
        except ValueError:
            ignored = "no_content"
        else:
            kind = kind_of(content)
            if isinstance(content, Text):
                text = content.body
            elif isinstance(content, MediaMessage):
                text = content.media.caption
        if contact is None:
            ignored = "no_sender"
        status, outcome = ("RECEIVED", "received") if ignored is None else (INCOMING_IGNORED, f"ignored: {ignored}")
        if ignored is not None:
            # Counted when the row is written (a transaction retried on a conflict counts it again,
            # rarely); every other outcome is counted when the forwarder reports it.
            emit_metric("IncomingMessages", outcome="ignored")
        self._store.record_incoming(
            uow,
            IncomingRecord(
                event_key=event_key(event),
                tenant=event.instance.tenant,
                id=message_id if isinstance(message_id, str) and message_id else event.event_id,
                created_at=event.received_at,
                kind=kind,
                status=status,
                outcome=outcome,
                sender=contact or "unknown",
                instance=event.instance.name,
                number_id=event.instance.number_id,
                provider_message_id=message_id if isinstance(message_id, str) else None,
                text=text,
                failure_reason=ignored,
                expires_at=event.received_at + INCOMING_RETENTION,
            ),
        )

    def forwarded(self, event_key: str) -> None:
        self._outcome(event_key, INCOMING_FORWARDED, "forwarded", None)

    def forwarded_with_placeholder(self, event_key: str, reason: str) -> None:
        self._outcome(event_key, INCOMING_FORWARDED, f"forwarded: placeholder ({reason})", reason)

    def no_downstream(self, event_key: str) -> None:
        self._outcome(event_key, INCOMING_NO_DOWNSTREAM, "no_downstream", "no_downstream")

    def failed(self, event_key: str, reason: str) -> None:
        self._outcome(event_key, INCOMING_FAILED, f"failed: {reason}", reason)

    def _outcome(self, key: str, status: str, outcome: str, reason: str | None) -> None:
        emit_metric("IncomingMessages", outcome=status.lower())  # forwarded, no_downstream, failed
        # The log never fails a forward: the message reached (or not) the downstream either way.
        try:
            if not self._store.record_outcome(key, status, outcome, reason):
                logger.info("incoming message not in the log", extra={"outcome": outcome})
        except Exception:
            logger.exception("incoming message outcome not logged", extra={"outcome": outcome})

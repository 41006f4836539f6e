"""Who wrote to which number: an incoming `message` event marks its sender as heard by the number.

Pacing's new-contact budget and the ban watch's pause for new contacts spare a recipient who is
no new contact of a number, and someone who wrote to a number within the last 24 h is none
(`switchboard.pool.domain.HEARD_WINDOW`), even if nothing was ever sent to them through it. The
mark is `heard_<number id>` on the recipient's affinity item, written by an update that joins
the unit of work accepting the event (an `AcceptWrite`): no request of its own, exactly once per
event. The send worker reads it with the affinity it already reads.

The mark is when the person wrote (the message's own timestamp, never later than its arrival),
which is what WhatsApp's customer-service window counts from, and it only moves forward: a
provider redelivers a message late (Meta retries for days), so an older message may be accepted
after a newer one, and it must not shorten the window the newer one opened. Its condition gives
way in the acceptance rather than cancel it (`UnitOfWork.update(optional=True)`).

The event is a text from a person: the provider kinds ignore what they send from the phone,
groups, broadcasts and status updates before any effect (see `switchboard.providers`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from switchboard.catalog.events import ProviderEvent
from switchboard.core.store import UnitOfWork
from switchboard.messages.domain import recipient_digits


class HeardStore(Protocol):
    def record_heard(self, uow: UnitOfWork, tenant: str, recipient: str, number_id: str, at: datetime) -> None: ...


class HeardFrom:
    def __init__(self, store: HeardStore) -> None:
        self._store = store

    def record(self, uow: UnitOfWork, event: ProviderEvent) -> None:
        """The heard mark of the event's sender on the instance's number, joining `uow`; none
        when the event names no phone number (the key must be the one the send API gives the
        same person)."""
        sender = event.data.get("from")
        recipient = recipient_digits(sender) if isinstance(sender, str) else None
        if recipient is None:
            return
        instance = event.instance
        self._store.record_heard(uow, instance.tenant, recipient, instance.number_id, written_at(event))


def written_at(event: ProviderEvent) -> datetime:
    """When the person wrote: the message's timestamp as its provider gave it (ISO 8601), never
    later than the event's arrival (a clock ahead must not stretch the window); the arrival when
    the provider gave none."""
    stamp = event.data.get("timestamp")
    try:
        written = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        written = None
    if written is None or written.tzinfo is None:
        return event.received_at
    return min(written, event.received_at)

"""Records of the routing capability, shared by its services and their DynamoDB adapters.

`OutboxEntry` / `Outcome`: a reply waiting for its instance, and what finally became of it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from switchboard.core.model import Model

OutboxStatus = Literal["PENDING", "SENDING", "SENT", "FAILED"]
FinalStatus = Literal["SENT", "FAILED"]


class OutboxEntry(Model):
    """A reply waiting for its instance. A reply longer than one message of the instance's kind
    leaves in parts, one after the other: `parts_sent` counts those accepted so far, and
    `part_chars` is the length its parts were cut to (fixed by the first part sent, so a later
    drain cuts the same parts). `in_flight` is the part whose send started and whose outcome is
    not recorded yet: found set by a later drain, the drain that sent it died mid-send."""

    instance: str
    message_id: str  # the downstream's message id: the dedupe key
    phone: str  # digits, or the LID (`<digits>@lid`) of a contact whose number WhatsApp hides
    text: str
    conversation_id: int | None = None
    owner_tag: str | None = None
    enqueued_at: datetime
    parts_sent: int = 0
    part_chars: int | None = None
    in_flight: int | None = None


class Outcome(Model):
    status: OutboxStatus
    reason: str | None = None
    provider_message_id: str | None = None

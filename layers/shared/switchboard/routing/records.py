"""Records of the routing capability, shared by its services and their DynamoDB adapters.

`OutboxEntry` / `Outcome`: a reply waiting for its instance, and what finally became of it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from switchboard.core.model import Model
from switchboard.providers.base import Quote
from switchboard.providers.content import Content

OutboxStatus = Literal["PENDING", "SENDING", "SENT", "FAILED"]
FinalStatus = Literal["SENT", "FAILED"]


class OutboxEntry(Model):
    """A reply waiting for its instance. A reply leaves in parts, one after the other: its text
    cut to the instance's kind (`routing.parts`) and its attachments (`items`: a media message
    whose file is a reference to the media bucket, never its bytes, or a location), the first
    attachment carrying the text as its caption when it can (`reply_parts`). `parts_sent`
    counts the parts accepted so far, `sent_ids` their WhatsApp ids, and `part_chars` is the
    length the text was cut to (fixed by the first part sent, so a later drain cuts the same
    parts). `in_flight` is the part whose send started and whose outcome is not recorded yet:
    found set by a later drain, the drain that sent it died mid-send. `quote`: the message the
    reply quotes, as the provider knows it (its first part carries it). `media_valid_until`:
    when the bucket's retention removes the attachments' files (a part sent later cannot go)."""

    instance: str
    message_id: str  # the downstream's message id: the dedupe key
    phone: str  # digits, or the LID (`<digits>@lid`) of a contact whose number WhatsApp hides
    text: str
    items: list[Content] = Field(default_factory=list)
    quote: Quote | None = None
    media_valid_until: datetime | None = None
    sent_ids: list[str] = Field(default_factory=list)
    conversation_id: int | None = None
    owner_tag: str | None = None
    enqueued_at: datetime
    parts_sent: int = 0
    part_chars: int | None = None
    in_flight: int | None = None


class Outcome(Model):
    """What became of a reply: its status, why it failed, the WhatsApp id of its last part and of
    every part (`provider_message_ids`, in order: what a deletion revokes), and whether the agent's
    deletion revoked them (`revoked`)."""

    status: OutboxStatus
    reason: str | None = None
    provider_message_id: str | None = None
    provider_message_ids: list[str] = Field(default_factory=list)
    revoked: bool = False

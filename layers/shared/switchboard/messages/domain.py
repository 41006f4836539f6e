"""Outgoing messages: the stored record, its trace, the jobs on the queues, and status rules.

A message is stored QUEUED before it is queued. A send worker claims it (QUEUED -> SENDING with
a lease: a concurrent or redelivered job finds it taken), sends, and records SENT or FAILED, or
gives it back QUEUED for a retry. The lease expires, so a crashed worker's message is claimed
again by the redelivery. Provider receipts then move it forward only: SENT -> DELIVERED -> READ.
FAILED is terminal.

A message sent with a validity (`valid_for` seconds) that finds no number able to take it goes
WAITING instead of FAILED: a fresh, delayed job (`SendJob.wake`) will claim it again through the
normal selection, until it is sent or its `expires_at` passes (FAILED `expired`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import ConfigDict, Field

from switchboard.catalog.domain import Record
from switchboard.core.clock import utcnow
from switchboard.core.model import Model
from switchboard.providers.content import Content, MediaMessage, Reaction, Template, Text

MAX_TEXT_LENGTH = 4096  # WhatsApp's limit for a text body
# A recipient in E.164, with or without the leading +; stored (and keyed) as its digits only.
RECIPIENT_PATTERN = r"^\+?[1-9][0-9]{7,14}$"
_RECIPIENT = re.compile(RECIPIENT_PATTERN)
# The longest a message may wait for a number. A day covers an overnight outage (a number
# re-paired the next morning); beyond it a text is stale, and the API's Idempotency-Key window
# (24 h) would no longer protect the client's retry of a message still waiting.
MAX_VALID_FOR_SECONDS = 24 * 3600
EXPIRED = "expired"
# Re-checks of a WAITING message: after 5 s, 10 s, 20 s, 40 s, then every 60 s. A dropped session
# often comes back within seconds, so the first re-checks are quick; past a minute the number is
# being re-paired or unbanned by hand, and a minute's delay once it is back is small, while a
# day's wait costs at most about 1,440 re-checks (a claim, a conditional write and an SQS send
# each). Waiting in SQS's largest steps (900 s) would leave a number that is back idle for 15 min.
FIRST_CHECK_SECONDS = 5
MAX_CHECK_SECONDS = 60


class MessageStatus(StrEnum):
    QUEUED = "QUEUED"
    SENDING = "SENDING"
    WAITING = "WAITING"  # no number could take it; tried again until `expires_at`
    SENT = "SENT"
    DELIVERED = "DELIVERED"
    READ = "READ"
    FAILED = "FAILED"


ReceiptStatus = Literal["delivered", "read", "failed"]

# The statuses a receipt may move a message from (forward only; FAILED and READ are final).
RECEIPT_TRANSITIONS: dict[MessageStatus, tuple[MessageStatus, ...]] = {
    MessageStatus.DELIVERED: (MessageStatus.SENT,),
    MessageStatus.READ: (MessageStatus.SENT, MessageStatus.DELIVERED),
    MessageStatus.FAILED: (MessageStatus.SENT,),
}


class TraceEvent(Model):
    stage: str
    at: datetime = Field(default_factory=utcnow)
    data: dict[str, Any] = Field(default_factory=dict)


class PendingRoute(Model):
    """The instance whose send timed out: the outcome is unknown, so the retry goes there first."""

    number_id: str
    instance: str | None = None
    provider_id: str
    kind: str | None = None  # the route's provider kind: may a send there be repeated without a copy?


class SentAs(Model):
    """What left in place of a message's own content: its fallback template, when no number could
    send the free-form content within the customer-service window (or Meta failed it for that
    after accepting it). The message keeps its own content and type; this says what went."""

    model_config = ConfigDict(frozen=True)

    type: Literal["template"] = "template"
    name: str
    language: str

    @classmethod
    def template(cls, template: Template) -> SentAs:
        return cls(name=template.name, language=template.language)

    def outcome(self) -> str:
        """The message log's words for it (the row's `outcome`, which the log's index copies)."""
        return f"sent as template {self.name} ({self.language})"


_SENT_AS = re.compile(r"^sent as template (\S+) \((\S+)\)$")


def sent_as_of(outcome: str | None) -> SentAs | None:
    """What `SentAs.outcome` wrote, read back from a message log row (None: sent as itself)."""
    match = _SENT_AS.match(outcome or "")
    return SentAs(name=match.group(1), language=match.group(2)) if match else None


class Message(Record):
    id: str
    api_key_id: str
    to: str
    # A text message's text; for any other content its canonical form (`content_signature`),
    # which the spam guard compares as it compares texts.
    text: str
    # What leaves, when it is not a plain text (None: `text` is the message). A media message's
    # file is a reference to the media bucket (`Media.stored`), never its bytes.
    content: Content | None = None
    # The message this one quotes: switchboard's id of a message sent to this recipient, or
    # the provider's id of a message in this conversation.
    reply_to: str | None = None
    # The one instance it may leave through (the console's test message of that instance), not
    # the key's number or pool; None for every message sent through the API.
    pinned_instance: str | None = None
    # Sent instead of free-form content that no number may send: a Cloud API number outside the
    # recipient's customer-service window, with no other number of the key able to take it.
    fallback_template: Template | None = None
    # When Meta failed the free-form send for the customer-service window after accepting it
    # (131047 in a status webhook): the fallback template then leaves through the same number.
    # Written once, by a conditional write: a redelivered status finds it set.
    window_refused_at: datetime | None = None
    # Set when the fallback template left in place of the content.
    sent_as: SentAs | None = None
    body_hash: str
    idempotency_key: str | None = None
    status: MessageStatus = MessageStatus.QUEUED
    source_number: str | None = None
    number_id: str | None = None
    instance: str | None = None
    provider_id: str | None = None
    provider_message_id: str | None = None
    attempts: int = 0
    failure_reason: str | None = None
    last_error: str | None = None
    # The provider's own words for the last refusal (Meta's `error.code` and message, ...).
    provider_code: str | None = None
    provider_message: str | None = None
    pending: PendingRoute | None = None
    # The route a send is going through right now, written before the provider is called and
    # removed by every recorded outcome: still set when the worker died mid-send, so the
    # redelivery knows the message may have left there.
    in_flight: PendingRoute | None = None
    lease_token: str | None = None
    valid_for: int = 0  # seconds the message may wait for a number; 0 fails at once
    # Stored as `expires_at`, not the table's TTL attribute: an expired message stays readable.
    expires_at: datetime | None = None
    wake_token: str | None = None  # the one delayed job that may claim it while WAITING
    wait_checks: int = 0  # re-checks made while WAITING (the next interval grows with them)
    next_check_at: datetime | None = None
    sent_at: datetime | None = None
    delivered_at: datetime | None = None
    read_at: datetime | None = None
    updated_at: datetime = Field(default_factory=utcnow)
    trace: list[TraceEvent] = Field(default_factory=list)


class SendJob(Model):
    """The SendQueue body: enough to resolve the route; the text stays in the table."""

    model_config = ConfigDict(frozen=True)

    message_id: str
    tenant: str
    api_key_id: str
    to: str
    # Set on the delayed job that wakes a WAITING message: the lease token of the worker that
    # made it wait, which it writes as the message's `wake_token`. Any other job skips it.
    wake: str | None = None
    # The message's `pinned_instance`: the plan is that instance alone, not the key's numbers.
    instance: str | None = None
    # True on a template's job: its first route may be one whose customer-service window is
    # closed (the claim, which reads no content, marks it in flight at once).
    template: bool | None = None
    # Set on the job a failed status queues when Meta refused the free-form send for the window
    # after accepting it: the route it left through, which its fallback template now takes.
    fallback: PendingRoute | None = None


class Claim(Model):
    """A message a send worker claimed, and whether the claim also recorded the worker's first
    route in flight (`marked`). Unmarked: the message came back with a route pending or in flight
    from an earlier attempt, which the claim left as they were for the plan to decide from."""

    model_config = ConfigDict(frozen=True)

    message: Message
    marked: bool


class SendOutcome(Model):
    """What the worker did with one job."""

    message_id: str
    status: MessageStatus | Literal["SKIPPED"]
    source_number: str | None = None
    instance: str | None = None
    failure_reason: str | None = None


ClientEvent = Literal[
    "message.waiting",
    "message.sent",
    "message.failed",
    "message.delivered",
    "message.read",
    "message.choice",  # the customer's answer to reply buttons or a list the key sent
]
# Events of an instance, for its `eventsWebhookUrl` rather than an API key's webhook.
InstanceEvent = Literal["number.health.changed"]


class ClientWebhookJob(Model):
    """The ClientWebhookQueue body: one event for one API key's webhook URL."""

    model_config = ConfigDict(frozen=True)

    id: str  # the Standard Webhooks `webhook-id`: the same on every retry
    tenant: str
    api_key_id: str | None = None  # an API key's event: to the key's webhookUrl, signed with its secret
    instance: str | None = None  # an instance's event: to its eventsWebhookUrl, signed with its own secret
    event: ClientEvent | InstanceEvent
    timestamp: datetime
    data: dict[str, Any]

    def payload(self) -> dict[str, Any]:
        return {"event": self.event, "timestamp": self.timestamp.isoformat(), "data": self.data}


def client_event_data(message: Message) -> dict[str, Any]:
    """The `data` of a client webhook: the message, its status and the number it left from."""
    return {
        "messageId": message.id,
        "sourceNumber": message.source_number,
        "destinationNumber": message.to,
        "status": str(message.status),
        "sentAt": message.sent_at.isoformat() if message.sent_at else None,
        "failureReason": message.failure_reason,
        "expiresAt": message.expires_at.isoformat() if message.expires_at else None,
        "sentAs": message.sent_as.model_dump(mode="json") if message.sent_as else None,
    }


def next_check_seconds(checks_made: int, seconds_left: float) -> int:
    """The delay before the next re-check of a WAITING message, never past its expiry: the last
    re-check lands on `expires_at` (rounded up to SQS's whole seconds), so it ends `expired` on time."""
    interval = min(MAX_CHECK_SECONDS, FIRST_CHECK_SECONDS << max(0, min(checks_made, 8)))
    return max(1, min(interval, math.ceil(seconds_left)))


def content_signature(content: Content, reply_to: str | None) -> str:
    """The canonical text of a content that is not a plain text (sorted JSON): what its
    Idempotency-Key is bound to and what the spam guard compares."""
    data = {"content": content.model_dump(mode="json", exclude_defaults=True), "replyTo": reply_to}
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def needs_conversation_number(message: Message) -> bool:
    """A reaction or a quoted reply refers to a message of one conversation: it leaves only
    through the number that conversation is on."""
    return message.reply_to is not None or isinstance(message.content, Reaction)


def quoted_id(message: Message) -> str | None:
    """The id (switchboard's or the provider's) of the message `message` quotes or reacts to."""
    if isinstance(message.content, Reaction):
        return message.content.target_id
    return message.reply_to


def is_free_form(content: Content | None) -> bool:
    """Whether `content` is what a Cloud API number may send only inside the customer-service
    window: anything but an approved template."""
    return not isinstance(content, Template)


def is_plain_text(message: Message) -> bool:
    return message.reply_to is None and (message.content is None or isinstance(message.content, Text))


def media_of(message: Message) -> MediaMessage | None:
    return message.content if isinstance(message.content, MediaMessage) else None


def body_hash(to: str, text: str, valid_for: int = 0) -> str:
    """What an Idempotency-Key is bound to; a validity is part of it (0 keeps the plain hash).

    The validity leads (at most 5 digits, where a recipient has 8 or more), so no text can
    make one body hash like another."""
    body = f"{to}\n{text}" if not valid_for else f"{valid_for}\n{to}\n{text}"
    return hashlib.sha256(body.encode()).hexdigest()


def keyed_message_id(api_key_id: str, idempotency_key: str) -> str:
    """The id of the message an (API key, Idempotency-Key) pair stands for: a retry finds it again."""
    digest = hashlib.sha256(f"{api_key_id}\n{idempotency_key}".encode()).hexdigest()
    return f"msg_{digest[:24]}"


def recipient_digits(phone: str) -> str | None:
    """`phone` as a message's `to` is stored (E.164 digits, no +), or None when it is not a
    phone number: the send API and an incoming message's sender both go through it, so a
    person who wrote in and a message sent to them name one recipient."""
    return phone.removeprefix("+") if _RECIPIENT.fullmatch(phone) else None


# --- the message log ---------------------------------------------------------------------------

Direction = Literal["in", "out"]
# An incoming message's status in the log: what became of it downstream.
INCOMING_RECEIVED = "RECEIVED"  # accepted, its forward queued
INCOMING_FORWARDED = "FORWARDED"
INCOMING_NO_DOWNSTREAM = "NO_DOWNSTREAM"
INCOMING_IGNORED = "IGNORED"
INCOMING_FAILED = "FAILED"
MAX_LOG_PAGE = 100


class LogEntry(Model):
    """One row of the message log: an outgoing message or an incoming one."""

    id: str
    direction: Direction
    kind: str  # `text`, a media kind, ...
    status: str  # a `MessageStatus` (out) or an incoming status (in)
    outcome: str | None = None  # in: `forwarded`, `no_downstream`, `ignored: <reason>`, `failed: <reason>`
    contact: str  # the customer: the recipient (out) or the sender (in)
    number: str | None = None  # the tenant's number it left from or came in on
    number_id: str | None = None
    instance: str | None = None
    api_key_id: str | None = None
    preview: str | None = None
    text: str | None = None  # the whole text, in a conversation (read from the item)
    failure_reason: str | None = None
    provider_code: str | None = None
    provider_message: str | None = None
    sent_as: SentAs | None = None  # out: the fallback template that left in its place
    created_at: datetime


class LogFilter(Model):
    """What a listing of the message log asks for; every field narrows it."""

    direction: Direction | None = None
    status: tuple[str, ...] | None = None
    number: str | None = None
    instance: str | None = None
    contact: str | None = None  # served by the contact's own index
    api_key_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    kind: str | None = None
    limit: int = 50
    cursor: str | None = None
    oldest_first: bool = False  # a conversation reads in order

    def matches(self, entry: LogEntry) -> bool:
        """Whether `entry` passes every filter but the contact and the time (the index's keys)."""
        return (
            (self.direction is None or entry.direction == self.direction)
            and (self.status is None or entry.status in self.status)
            and (self.number is None or self.number in (entry.number, entry.number_id))
            and (self.instance is None or entry.instance == self.instance)
            and (self.api_key_id is None or entry.api_key_id == self.api_key_id)
            and (self.kind is None or entry.kind == self.kind)
        )


class LogPage(Model):
    items: list[LogEntry]
    cursor: str | None = None  # the next page's; None: this was the last


class IncomingRecord(Model):
    """An incoming message as the log keeps it."""

    event_key: str  # `<provider>#<instance id>#<event id>`: the forward's event id too
    tenant: str
    id: str  # the provider's message id
    created_at: datetime
    kind: str
    status: str = INCOMING_RECEIVED
    outcome: str = "received"
    sender: str
    to: str | None = None
    instance: str
    number_id: str | None = None
    provider_message_id: str | None = None
    text: str | None = None
    failure_reason: str | None = None
    expires_at: datetime | None = None

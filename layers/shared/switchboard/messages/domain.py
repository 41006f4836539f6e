"""Outgoing messages: the stored record, its trace, the jobs on the queues, and status rules.

A message is stored QUEUED before it is queued. A send worker claims it (QUEUED -> SENDING with
a lease: a concurrent or redelivered job finds it taken), sends, and records SENT or FAILED, or
gives it back QUEUED for a retry. The lease expires, so a crashed worker's message is claimed
again by the redelivery. Provider receipts then move it forward only: SENT -> DELIVERED -> READ.
FAILED is terminal.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import ConfigDict, Field

from switchboard.catalog.domain import Record, utcnow
from switchboard.core.model import Model

MAX_TEXT_LENGTH = 4096  # WhatsApp's limit for a text body


class MessageStatus(StrEnum):
    QUEUED = "QUEUED"
    SENDING = "SENDING"
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


class Message(Record):
    id: str
    api_key_id: str
    to: str
    text: str
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
    pending: PendingRoute | None = None
    lease_token: str | None = None
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


class SendOutcome(Model):
    """What the worker did with one job."""

    message_id: str
    status: MessageStatus | Literal["SKIPPED"]
    source_number: str | None = None
    instance: str | None = None
    failure_reason: str | None = None


ClientEvent = Literal["message.sent", "message.failed", "message.delivered", "message.read"]


class ClientWebhookJob(Model):
    """The ClientWebhookQueue body: one event for one API key's webhook URL."""

    model_config = ConfigDict(frozen=True)

    id: str  # the Standard Webhooks `webhook-id`: the same on every retry
    tenant: str
    api_key_id: str
    event: ClientEvent
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
    }


def body_hash(to: str, text: str) -> str:
    return hashlib.sha256(f"{to}\n{text}".encode()).hexdigest()


def keyed_message_id(api_key_id: str, idempotency_key: str) -> str:
    """The id of the message an (API key, Idempotency-Key) pair stands for: a retry finds it again."""
    digest = hashlib.sha256(f"{api_key_id}\n{idempotency_key}".encode()).hexdigest()
    return f"msg_{digest[:24]}"

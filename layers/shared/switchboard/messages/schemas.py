"""Request and response bodies of the send API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator

from switchboard.catalog.schemas import Body, View
from switchboard.messages.domain import MAX_TEXT_LENGTH, Message, MessageStatus

IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"  # printable ASCII, no spaces


class SendMessage(Body):
    to: Annotated[str, StringConstraints(pattern=r"^\+?[1-9][0-9]{7,14}$")] = Field(
        description="Recipient in E.164, with or without the leading +."
    )
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_LENGTH)]

    @field_validator("to")
    @classmethod
    def _digits(cls, value: str) -> str:
        return value.removeprefix("+")

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text must not be blank")
        return value


class AcceptedView(View):
    id: str
    status: MessageStatus


class TraceEventView(View):
    stage: str
    at: datetime
    data: dict[str, Any]


class MessageView(View):
    id: str
    status: MessageStatus
    to: str
    source_number: str | None
    instance: str | None
    attempts: int
    failure_reason: str | None
    last_error: str | None
    provider_message_id: str | None
    created_at: datetime
    sent_at: datetime | None
    delivered_at: datetime | None
    read_at: datetime | None
    updated_at: datetime
    trace: list[TraceEventView]

    @classmethod
    def of(cls, message: Message) -> MessageView:
        return cls.model_validate(message.model_dump(exclude={"tenant", "text", "body_hash", "pending"}))


class ClientWebhookSecretView(View):
    api_key_id: str
    secret: str = Field(description="The Standard Webhooks signing secret. Shown only in this response.")

"""Request and response bodies of the send API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator

from switchboard.core.model import Text
from switchboard.core.wire import Body, View
from switchboard.messages.domain import (
    MAX_TEXT_LENGTH,
    MAX_VALID_FOR_SECONDS,
    RECIPIENT_PATTERN,
    Message,
    MessageStatus,
    recipient_digits,
)

IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"  # printable ASCII, no spaces


class SendMessage(Body):
    to: Annotated[str, StringConstraints(pattern=RECIPIENT_PATTERN)] = Field(
        description="Recipient in E.164, with or without the leading +."
    )
    text: Annotated[Text, StringConstraints(min_length=1, max_length=MAX_TEXT_LENGTH)]
    valid_for: int = Field(
        default=0,
        ge=0,
        le=MAX_VALID_FOR_SECONDS,
        description=(
            "Seconds the message may wait for a number when none of the key's numbers can take it "
            "(all disconnected, logged out or banned): it stays WAITING and is tried again through "
            "the normal selection until `expiresAt`, then ends FAILED `expired`. 0 (the default) "
            "fails it at once with `no_number_available`. At most 86400 (a day)."
        ),
    )

    @field_validator("to")
    @classmethod
    def _digits(cls, value: str) -> str:
        digits = recipient_digits(value)
        if digits is None:  # the pattern already refused it; kept for the type checker
            raise ValueError("to must be a phone number in E.164")
        return digits

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
    provider_code: str | None = Field(default=None, description="The provider's own code of its last refusal.")
    provider_message: str | None = Field(default=None, description="The provider's own message of its last refusal.")
    valid_for: int = Field(description="Seconds it may wait for a number (0: it fails at once).")
    expires_at: datetime | None = Field(
        description="When a message still unsent stops waiting and ends FAILED `expired`; null without a validity."
    )
    next_check_at: datetime | None = Field(description="While WAITING: when the numbers are tried again.")
    provider_message_id: str | None
    created_at: datetime
    sent_at: datetime | None
    delivered_at: datetime | None
    read_at: datetime | None
    updated_at: datetime
    trace: list[TraceEventView]

    @classmethod
    def of(cls, message: Message) -> MessageView:
        hidden = {"tenant", "text", "body_hash", "pending", "lease_token", "wake_token", "wait_checks"}
        view = message.model_dump(exclude=hidden)
        if message.status is not MessageStatus.WAITING:
            view["next_check_at"] = None
        return cls.model_validate(view)


class ClientWebhookSecretView(View):
    api_key_id: str
    secret: str = Field(description="The Standard Webhooks signing secret. Shown only in this response.")

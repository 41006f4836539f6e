"""Answers of the message log (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from switchboard.core.wire import View
from switchboard.messages.domain import Direction, LogEntry, LogPage


class SentAsView(View):
    """What left in a message's place: its fallback template (the message keeps its own type)."""

    type: Literal["template"]
    name: str = Field(description="The fallback template's name.")
    language: str = Field(description="The fallback template's language and locale code.")


SENT_AS_DESCRIPTION = (
    "Set when the message's `fallbackTemplate` was sent in its place (no number could send the "
    "free-form content within the contact's 24-hour window, or Meta failed it for that after "
    "accepting it); null when the message was sent as itself."
)


class LogEntryView(View):
    id: str
    direction: Direction
    type: str = Field(description="`text`, a media kind (`image`, `audio`, ...), or the content's type.")
    status: str = Field(
        description="Out: the message's status. In: RECEIVED, FORWARDED, NO_DOWNSTREAM, IGNORED or FAILED."
    )
    outcome: str | None = Field(
        description=(
            "In: `received`, `forwarded`, `no_downstream`, `ignored: <reason>` or `failed: <reason>`. "
            "Out: `sent as template <name> (<language>)` when its fallback template left in its place."
        )
    )
    contact: str = Field(
        description="The customer: the recipient of an outgoing message, the sender of an incoming one."
    )
    number: str | None
    number_id: str | None
    instance: str | None
    api_key_id: str | None
    preview: str | None = Field(description="The text's first 120 characters.")
    text: str | None = Field(description="The whole text, in a contact's conversation.")
    failure_reason: str | None = Field(description="A stable reason code.")
    provider_code: str | None = Field(description="The provider's own error code (Meta's `error.code`, ...).")
    provider_message: str | None = Field(description="The provider's own error message.")
    sent_as: SentAsView | None = Field(default=None, description=SENT_AS_DESCRIPTION)
    created_at: datetime

    @classmethod
    def of(cls, entry: LogEntry) -> LogEntryView:
        return cls.model_validate({**entry.model_dump(exclude={"kind"}), "type": entry.kind})


class LogPageView(View):
    items: list[LogEntryView]
    cursor: str | None = Field(description="Pass it as `cursor` for the next page; null: this is the last.")

    @classmethod
    def of(cls, page: LogPage) -> LogPageView:
        return cls(items=[LogEntryView.of(entry) for entry in page.items], cursor=page.cursor)

"""Answers of the instance's ignored provider events (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from switchboard.core.wire import View
from switchboard.webhooks.events import IgnoredEvent, IgnoredPage


class IgnoredEventView(View):
    event_id: str = Field(description="The provider's id of the event (or a digest of its body).")
    event: str = Field(description="What the provider called it, mapped: `message`, `receipt`, ...")
    reason: str = Field(description="Why it was not applied, in words.")
    reason_code: str = Field(
        description="`from_us` (our own message or receipt echoed back), `group` (a group, broadcast or "
        "newsletter), `unsupported` (an event, message type or status switchboard does not apply), "
        "`no_sender`, `malformed` (not in the provider's format) or `no_effect`."
    )
    received_at: datetime

    @classmethod
    def of(cls, event: IgnoredEvent) -> IgnoredEventView:
        return cls(
            event_id=event.event_id,
            event=event.name,
            reason=event.reason,
            reason_code=event.reason_code,
            received_at=event.received_at,
        )


class IgnoredPageView(View):
    items: list[IgnoredEventView]
    cursor: str | None = Field(description="Pass it as `cursor` for the next page; null: this is the last.")

    @classmethod
    def of(cls, page: IgnoredPage) -> IgnoredPageView:
        return cls(items=[IgnoredEventView.of(event) for event in page.items], cursor=page.cursor)

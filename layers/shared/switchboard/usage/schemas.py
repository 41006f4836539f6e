"""The usage summary's query and answer."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import Field, StringConstraints

from switchboard.core.wire import View
from switchboard.usage.service import TenantMonthUsage

BY_TYPE = (
    "The incoming messages by type, only the types that came: text, image, video, audio, voice, document, "
    "sticker, location, contacts, choice (a button, list or flow answer), poll, reaction, edit, revoke, other."
)
Month = Annotated[str, StringConstraints(pattern=r"^[0-9]{4}-(0[1-9]|1[0-2])$")]


class DayUsageView(View):
    day: date = Field(description="A UTC day.")
    messages_in: int
    messages_out: int


class InstanceUsageView(View):
    tenant: str
    instance: str
    messages_in: int
    messages_out: int
    messages_in_by_type: dict[str, int] = Field(description=BY_TYPE)
    days: list[DayUsageView] = Field(description="The month's days that had messages, in order.")


class UsageView(View):
    owner_tag: str | None
    month: str
    messages_in: int
    messages_out: int
    messages_in_by_type: dict[str, int] = Field(description=BY_TYPE)
    instances: list[InstanceUsageView]

    @classmethod
    def of(cls, usage: TenantMonthUsage) -> UsageView:
        return cls.model_validate(usage.model_dump())

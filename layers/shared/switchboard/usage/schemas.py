"""The usage summary's query and answer."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from switchboard.core.wire import View
from switchboard.usage.service import TenantMonthUsage

Month = Annotated[str, StringConstraints(pattern=r"^[0-9]{4}-(0[1-9]|1[0-2])$")]


class InstanceUsageView(View):
    tenant: str
    instance: str
    messages_in: int
    messages_out: int
    # The incoming messages by type: `text`, `image`, `video`, `audio`, `voice`, `document`,
    # `sticker`, `location`, `contacts`, `choice` (a button, list or flow answer), `poll`,
    # `reaction`, `edit`, `revoke`, `other`; only the types that came.
    messages_in_by_type: dict[str, int]


class UsageView(View):
    owner_tag: str | None
    month: str
    messages_in: int
    messages_out: int
    messages_in_by_type: dict[str, int]
    instances: list[InstanceUsageView]

    @classmethod
    def of(cls, usage: TenantMonthUsage) -> UsageView:
        return cls.model_validate(usage.model_dump())

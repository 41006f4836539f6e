"""Usage records: messages in and out of one instance on one day, counted where they pass."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from switchboard.core.model import Model

Direction = Literal["in", "out"]


class DailyUsage(Model):
    tenant: str
    instance: str  # its name within `tenant`
    owner_tag: str | None
    day: date
    messages_in: int = 0
    messages_out: int = 0
    # The incoming ones by what they were (`providers.content.kind_of`: text, image, voice, ...).
    messages_in_by_type: dict[str, int] = Field(default_factory=dict)

"""Request and response bodies of the pool API (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from switchboard.catalog.domain import MAX_POOL_SIZE
from switchboard.core.model import Name
from switchboard.core.wire import Body, View
from switchboard.pool.service import PoolMember

NumberId = Annotated[Name, StringConstraints(min_length=1, max_length=64)]


class SetSelectionMode(Body):
    number_selection_mode: Literal["default", "pool"]


class AddPoolNumber(Body):
    whatsapp_number_id: NumberId


class ReorderPool(Body):
    number_ids: list[NumberId] = Field(max_length=MAX_POOL_SIZE, description="Every pool number, in the new order.")


class PoolNumberView(View):
    id: str
    number: str
    display_name: str


class PoolEntryView(View):
    id: str
    api_key_id: str
    whatsapp_number_id: str
    priority: int = Field(description="Position in the pool: 0 is tried first by round-robin.")
    connected: bool = Field(description="Whether the number can send now (a connected instance, or Meta Cloud).")
    added_at: datetime
    whatsapp_number: PoolNumberView

    @classmethod
    def of(cls, member: PoolMember) -> PoolEntryView:
        return cls(
            id=member.entry.id,
            api_key_id=member.api_key_id,
            whatsapp_number_id=member.entry.number_id,
            priority=member.priority,
            connected=member.connected,
            added_at=member.entry.added_at,
            whatsapp_number=PoolNumberView(
                id=member.number.id, number=member.number.number, display_name=member.number.display_name
            ),
        )

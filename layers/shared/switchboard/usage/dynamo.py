"""Usage counters: one item per (instance, owner tag, day) with atomic `ADD`s, listed per (owner_tag, month).

`USAGE#<instance key>` / `DAY#<yyyy-mm-dd>#<owner_tag>` holds `messages_in` and `messages_out`, and
each incoming message's type beside (`in_type_<type>`: `in_type_text`, `in_type_image`, ...): a
count belongs to the owner tag in force when it was counted, so changing an instance's tag moves
nothing already counted (the next count starts the new tag's item). GSI1
`USAGE#<owner_tag>#<yyyy-mm>` lists a tenant's month (one partition per tenant and month, so
no single hot index key). A message received in a provider event is counted in the transaction
that accepts the event (`record_incoming`), a message sent by the send worker in the transaction
that records it SENT (`record_outgoing`), so each commits exactly once with it; any other count
tied to an id (an outbox entry) is written together with a marker (`USAGEMARK#<direction>#<id>`)
in one transaction, so a re-applied effect never counts twice.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from pynamodb.attributes import UnicodeAttribute
from pynamodb.expressions.update import Action

from switchboard.catalog.domain import Instance
from switchboard.core import store
from switchboard.core.store import (
    AttributeFamily,
    EpochAttribute,
    IntegerAttribute,
    TableItem,
    TenantIndex,
    UnitOfWork,
)
from switchboard.usage.domain import DailyUsage, Direction

UNTAGGED = "_untagged"  # cannot collide with an owner tag (they start with [a-z0-9])
MARKER_DAYS = 8


class UsageDay(TableItem):
    PREFIX = "USAGE"
    SORT_PREFIX = "DAY"

    instance = UnicodeAttribute(null=True)
    owner_tag = UnicodeAttribute(null=True)
    tenant = UnicodeAttribute(null=True)
    day = UnicodeAttribute(null=True)
    messages_in = IntegerAttribute(null=True)
    messages_out = IntegerAttribute(null=True)
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    by_month = TenantIndex["UsageDay"]()

    @classmethod
    def month_key(cls, tag: str, month: str) -> str:
        """GSI1's partition: one tag's month."""
        return store.SEPARATOR.join((cls.PREFIX, tag, month))


# The incoming messages of a day by type: a bounded family (`providers.content.kind_of`'s labels).
IN_BY_TYPE = AttributeFamily("in_type_", IntegerAttribute)


class UsageMark(TableItem):
    """An id counted once: the count and its mark are written together or not at all."""

    PREFIX = "USAGEMARK"

    expires_at = EpochAttribute(attr_name="expiresAt")


class _AlreadyCounted(Exception):
    pass


class UsageRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def add(self, instance: Instance, day: date, direction: Direction, count_id: str | None, now: datetime) -> bool:
        """Add one message; with `count_id`, only the first time that id is counted. Returns whether it counted."""
        day_item, actions = self._counter(instance, day, direction)
        if count_id is None:
            store.update(day_item, actions)
            return True
        mark = UsageMark(UsageMark.pk_for(direction, count_id), UsageMark.sk_for())
        mark.expires_at = now + timedelta(days=MARKER_DAYS)
        uow = store.unit_of_work()
        uow.put(mark, UsageMark.pk.does_not_exist(), refused=_AlreadyCounted())
        uow.update(day_item, actions)
        try:
            uow.commit()
        except _AlreadyCounted:
            return False
        return True

    def record_incoming(self, uow: UnitOfWork, instance: Instance, day: date, kind: str) -> None:
        """One incoming message of type `kind`, counted by the transaction that accepts its
        provider event."""
        day_item, actions = self._counter(instance, day, "in")
        uow.update(day_item, [*actions, IN_BY_TYPE[kind].add(1)])

    def record_outgoing(self, uow: UnitOfWork, instance: Instance, day: date) -> None:
        """One message sent through `instance`, counted by the transaction that records it SENT
        (conditional on the sender's claim, so it commits once per message). The item is hot
        (every send through the instance writes it): that transaction retries a conflict."""
        day_item, actions = self._counter(instance, day, "out")
        uow.update(day_item, actions)

    @staticmethod
    def _counter(instance: Instance, day: date, direction: Direction) -> tuple[UsageDay, list[Action]]:
        tag = instance.owner_tag or UNTAGGED
        counter = UsageDay.messages_in if direction == "in" else UsageDay.messages_out
        actions: list[Action] = [
            UsageDay.instance.set(instance.name),
            UsageDay.owner_tag.set(tag),
            UsageDay.tenant.set(instance.tenant),
            UsageDay.day.set(day.isoformat()),
            UsageDay.gsi1pk.set(UsageDay.month_key(tag, day.strftime("%Y-%m"))),
            UsageDay.gsi1sk.set(f"{instance.key}#{day.isoformat()}"),
            counter.add(1),
        ]
        return UsageDay(UsageDay.pk_for(instance.key), UsageDay.sk_for(day.isoformat(), tag)), actions

    def month(self, owner_tag: str | None, month: str) -> list[DailyUsage]:
        tag = owner_tag or UNTAGGED
        return [
            DailyUsage(
                tenant=item.tenant or "",
                instance=item.instance or "",
                owner_tag=owner_tag,
                day=date.fromisoformat(item.day or ""),
                messages_in=item.messages_in or 0,
                messages_out=item.messages_out or 0,
                messages_in_by_type=IN_BY_TYPE.read(item),
            )
            for item in UsageDay.by_month.query(UsageDay.month_key(tag, month))
        ]

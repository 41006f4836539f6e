"""The map of WhatsApp message ids to downstream (Chatwoot) message ids, per instance, both ways.

- `WALINK#<instance key>#<provider message id>`: found by the WhatsApp id a quote, a reaction,
  an edit or a deletion names;
- `CWLINK#<instance key>#<downstream message id>`: found by the downstream id an agent's reply
  quotes.

Both items of a link are written in one transaction. Each keeps the first values it was given
(`if_not_exists` on every attribute, no condition to refuse): a link recorded again changes
nothing, and a reply the instance sent in several parts links each part's WhatsApp id to its one
downstream message, whose own item keeps the first part. A link expires after `LINK_DAYS`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pynamodb.attributes import UnicodeAttribute
from pynamodb.expressions.update import Action

from switchboard.core import store
from switchboard.core.clock import utcnow
from switchboard.core.store import EpochAttribute, IntegerAttribute, TableItem
from switchboard.routing.domain import MessageLink

# How long a link is kept. A customer quotes, reacts to or edits what is still on their screen:
# a quarter covers nearly every thread (the incoming message log is kept as long). What refers to
# an older message is posted unthreaded and says which message it meant.
LINK_DAYS = 90


class _LinkItem(TableItem):
    """The attributes both items of a link hold (a base of the two models, no item of its own)."""

    tenant = UnicodeAttribute()
    instance = UnicodeAttribute()
    provider_message_id = UnicodeAttribute()
    conversation_id = IntegerAttribute()
    downstream_message_id = IntegerAttribute()
    direction = UnicodeAttribute()
    message_id = UnicodeAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt")


class ProviderLinkItem(_LinkItem):
    PREFIX = "WALINK"  # pk: WALINK#<instance key>#<provider message id>


class DownstreamLinkItem(_LinkItem):
    PREFIX = "CWLINK"  # pk: CWLINK#<instance key>#<downstream message id>


def _first_values(model: type[_LinkItem], link: MessageLink, expires_at: datetime) -> list[Action]:
    """Set every attribute the item does not hold yet (a link already there is left as it is)."""
    values: list[tuple[Any, Any]] = [
        (model.tenant, link.instance.partition(":")[0]),
        (model.instance, link.instance),
        (model.provider_message_id, link.provider_message_id),
        (model.conversation_id, link.conversation_id),
        (model.downstream_message_id, link.downstream_message_id),
        (model.direction, link.direction),
        (model.expires_at, expires_at),
    ]
    if link.message_id is not None:
        values.append((model.message_id, link.message_id))
    return [attribute.set(attribute | value) for attribute, value in values]


class MessageLinkRepository:
    """`routing.domain.MessageLinks` over the table: one transaction per link, one read per lookup."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def link(self, link: MessageLink) -> None:
        expires_at = utcnow() + timedelta(days=LINK_DAYS)
        uow = store.unit_of_work()
        for model, key in (
            (ProviderLinkItem, link.provider_message_id),
            (DownstreamLinkItem, str(link.downstream_message_id)),
        ):
            uow.update(model(model.pk_for(link.instance, key), model.sk_for()), _first_values(model, link, expires_at))
        uow.commit(conflict_attempts=3)

    def by_provider_id(self, instance: str, provider_message_id: str) -> MessageLink | None:
        return _record(
            store.get(
                ProviderLinkItem, ProviderLinkItem.pk_for(instance, provider_message_id), ProviderLinkItem.sk_for()
            )
        )

    def by_downstream_id(self, instance: str, downstream_message_id: int) -> MessageLink | None:
        key = DownstreamLinkItem.pk_for(instance, str(downstream_message_id))
        return _record(store.get(DownstreamLinkItem, key, DownstreamLinkItem.sk_for()))


def _record(item: _LinkItem | None) -> MessageLink | None:
    # An expired item may still be read until DynamoDB's TTL sweep removes it: it is gone already.
    if item is None or item.expires_at <= utcnow():
        return None
    direction = "out" if item.direction == "out" else "in"
    return MessageLink(
        instance=item.instance,
        provider_message_id=item.provider_message_id,
        conversation_id=item.conversation_id,
        downstream_message_id=item.downstream_message_id,
        direction=direction,
        message_id=item.message_id,
    )

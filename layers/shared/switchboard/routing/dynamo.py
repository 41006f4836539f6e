"""Routing state: per-tenant downstream mappings and their version stamp, and forward attempts.

- `DOWNSTREAM#<owner_tag>`: one mapping per tenant (listed through GSI1 `DOWNSTREAMS`);
- `ROUTING#VERSION`: a counter bumped in the same transaction as every mapping change, so each
  container can tell with one small read whether its cached mappings are still current;
- `FORWARD#<event id>`: when the first forward of an incoming message started, written before
  it posts anything; it expires after the longest a forward job can live (the dead-letter
  queue's retention, from the original enqueue), so a job redriven from it is still known.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pynamodb.attributes import UnicodeAttribute
from pynamodb.expressions.update import Action

from switchboard.core import store
from switchboard.core.errors import InvalidInput, NotFound
from switchboard.core.store import (
    EpochAttribute,
    IntegerAttribute,
    IsoDateTimeAttribute,
    TableItem,
    TenantIndex,
    UnitOfWork,
)
from switchboard.routing.domain import DownstreamMapping, IncomingMessage

FORWARD_ATTEMPT_DAYS = 14  # ForwardDLQ's MessageRetentionPeriod
MAPPINGS = "DOWNSTREAMS"  # GSI1's partition of every mapping


class Mapping(TableItem):
    """The downstream mapping of one tenant (its token lives in the secret store, a hint here)."""

    PREFIX = "DOWNSTREAM"

    owner_tag = UnicodeAttribute()
    tenant = UnicodeAttribute()
    base_url = UnicodeAttribute()
    account_id = IntegerAttribute()
    inbox_id = IntegerAttribute()
    token_hint = UnicodeAttribute(null=True)
    updated_at = IsoDateTimeAttribute()
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    listed = TenantIndex["Mapping"]()


class RoutingVersion(TableItem):
    """The stamp of the mappings: bumped with every change of one."""

    PREFIX = "ROUTING"  # pk: ROUTING#VERSION

    version = IntegerAttribute(null=True)

    @classmethod
    def the(cls) -> RoutingVersion:
        return cls(cls.pk_for("VERSION"), cls.sk_for())


class ForwardAttempt(TableItem):
    """When the first forward of one incoming message started."""

    PREFIX = "FORWARD"

    tenant = UnicodeAttribute()
    instance = UnicodeAttribute()
    started_at = IsoDateTimeAttribute()
    expires_at = EpochAttribute(attr_name="expiresAt")


class RoutingRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    # --- downstream mappings --------------------------------------------------------------

    def version(self) -> int:
        try:
            stamp = RoutingVersion.get(RoutingVersion.pk_for("VERSION"), RoutingVersion.sk_for(), consistent_read=True)
        except RoutingVersion.DoesNotExist:
            return 0
        return stamp.version or 0

    def get_mapping(self, owner_tag: str) -> DownstreamMapping | None:
        try:
            item = Mapping.get(Mapping.pk_for(owner_tag), Mapping.sk_for(), consistent_read=True)
        except Mapping.DoesNotExist:
            return None
        return _mapping(item)

    def list_mappings(self) -> list[DownstreamMapping]:
        return [_mapping(item) for item in store.query(Mapping, MAPPINGS, index=Mapping.listed)]

    def record_mapping(self, uow: UnitOfWork, mapping: DownstreamMapping, *, token_replaced: bool) -> None:
        """Upsert the mapping (of a tenant the caller checks in the same unit of work) and bump the
        version. Without a new token the mapping must already have one: InvalidInput otherwise."""
        actions: list[Action] = [
            Mapping.owner_tag.set(mapping.owner_tag),
            Mapping.tenant.set(mapping.owner_tag),
            Mapping.base_url.set(mapping.base_url),
            Mapping.account_id.set(mapping.account_id),
            Mapping.inbox_id.set(mapping.inbox_id),
            Mapping.updated_at.set(mapping.updated_at),
            Mapping.gsi1pk.set(MAPPINGS),
            Mapping.gsi1sk.set(mapping.owner_tag),
        ]
        if token_replaced:
            actions.append(Mapping.token_hint.set(mapping.token_hint))
        uow.update(
            Mapping(Mapping.pk_for(mapping.owner_tag), Mapping.sk_for()),
            actions,
            None if token_replaced else Mapping.token_hint.exists(),
            refused=InvalidInput("downstreamApiToken is required when creating a mapping", code="token_required"),
        )
        self._bump(uow)

    def delete_mapping(self, owner_tag: str) -> None:
        uow = store.unit_of_work()
        uow.delete(
            Mapping(Mapping.pk_for(owner_tag), Mapping.sk_for()),
            Mapping.pk.exists(),
            refused=NotFound("no downstream mapping for this tenant"),
        )
        self._bump(uow)
        uow.commit()

    @staticmethod
    def _bump(uow: UnitOfWork) -> None:
        uow.update(RoutingVersion.the(), [RoutingVersion.version.add(1)])


def _mapping(item: Mapping) -> DownstreamMapping:
    return DownstreamMapping(
        owner_tag=item.owner_tag,
        base_url=item.base_url,
        account_id=item.account_id,
        inbox_id=item.inbox_id,
        token_hint=item.token_hint or "",
        updated_at=item.updated_at,
    )


class ForwardAttemptsRepository:
    """`routing.forwarder.ForwardAttempts`: one conditional put per forward."""

    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def begin(self, message: IncomingMessage, at: datetime) -> datetime | None:
        """None for the first forward of the message; else when the first one started."""
        attempt = ForwardAttempt(
            ForwardAttempt.pk_for(message.event_id),
            ForwardAttempt.sk_for(),
            tenant=message.instance.partition(":")[0],
            instance=message.instance,
            started_at=at,
            expires_at=at + timedelta(days=FORWARD_ATTEMPT_DAYS),
        )
        try:
            store.put(attempt, ForwardAttempt.pk.does_not_exist(), return_old=True)
        except store.ConditionFailed as refused:
            # The earlier item comes back with the refusal (read again where it does not).
            earlier = refused.old(ForwardAttempt)
            if earlier is None:
                try:
                    earlier = ForwardAttempt.get(attempt.pk, attempt.sk, consistent_read=True)
                except ForwardAttempt.DoesNotExist:
                    return at
            return earlier.started_at
        return None

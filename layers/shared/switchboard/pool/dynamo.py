"""Pool persistence: one item per API key's pool, and its round-robin counter.

- pool (`PoolItem`): pk `APIKEY#<id>`, sk `POOL`: the ordered entries and a `version`
  (optimistic lock); a write joins the caller's unit of work, in which the caller also checks that
  the key (and a number being added) still exists in its tenant; the key's revocation deletes it;
- counter (`PoolCounter`): `shards` items, pk `POOLRR#<id>#<shard>`, sk `#META`: each ticket adds 1
  to `ticket` on one of them (atomic, one request), with `expiresAt` pushed 24 h ahead on every use
  so an idle key's counter expires. One item takes ~1,000 writes/s; spreading the counter lets one
  key take ~1,000 tickets/s per shard.

Which shard: each container takes the shards in turn, from a random first one. Random picks
would let the shards' counts drift apart like a random walk (about the square root of the tickets
per shard); in turn, each container leaves them at most one ticket apart, so they drift only by
how many containers stopped mid-round. `Ticket.index` then spaces the shards' starting points
evenly around the pool, which keeps a number's share within a send or two of even.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pynamodb.attributes import ListAttribute, MapAttribute, UnicodeAttribute, VersionAttribute

from switchboard.core import store
from switchboard.core.clock import utcnow
from switchboard.core.errors import NotFound, PoolChanged
from switchboard.core.store import EpochAttribute, IntegerAttribute, IsoDateTimeAttribute, TableItem, UnitOfWork
from switchboard.pool.domain import Pool, PoolEntry, Ticket

COUNTER_IDLE = timedelta(hours=24)


class PoolEntryMap(MapAttribute[str, Any]):
    id = UnicodeAttribute()
    number_id = UnicodeAttribute()
    added_at = IsoDateTimeAttribute()


class PoolItem(TableItem):
    """A key's pool, in the key's partition (revoked with it)."""

    PREFIX = "APIKEY"
    SORT_PREFIX = "POOL"

    tenant = UnicodeAttribute()
    api_key_id = UnicodeAttribute()
    entries = ListAttribute(of=PoolEntryMap, null=True)
    version = VersionAttribute()


class PoolCounter(TableItem):
    """One shard of a key's round-robin counter: pk `POOLRR#<key id>#<shard>`."""

    PREFIX = "POOLRR"

    ticket = IntegerAttribute(null=True)
    expires_at = EpochAttribute(attr_name="expiresAt", null=True)


class InTurn:
    """This container's shard picks: one after the other, from a random first one (so that
    containers started together do not all begin on the same shard)."""

    def __init__(self, first: int | None = None) -> None:
        self._turns = itertools.count(random.randrange(1 << 30) if first is None else first)

    def __call__(self, shards: int) -> int:
        return next(self._turns) % shards


class PoolRepository:
    def __init__(self, table: Any, *, shards: int = 1, pick_shard: Callable[[int], int] | None = None) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        if shards < 1:
            raise ValueError("shards must be at least 1")
        self._shards = shards
        self._pick_shard = pick_shard or InTurn()
        self._table = table

    def get(self, tenant: str, api_key_id: str) -> Pool:
        """The key's pool (empty, version 0, when none was saved). Another tenant's: NotFound."""
        try:
            item = PoolItem.get(PoolItem.pk_for(api_key_id), PoolItem.sk_for(), consistent_read=True)
        except PoolItem.DoesNotExist:
            return Pool(tenant=tenant, api_key_id=api_key_id)
        if item.tenant != tenant:
            raise NotFound("API key not found")
        entries = tuple(
            PoolEntry(id=entry.id, number_id=entry.number_id, added_at=entry.added_at) for entry in item.entries or ()
        )
        return Pool(tenant=item.tenant, api_key_id=item.api_key_id, entries=entries, version=item.version or 0)

    def record_save(self, uow: UnitOfWork, pool: Pool, expected_version: int) -> Pool:
        """Write `pool` in `uow` if the stored one still has `expected_version` (0: none stored);
        refused, the unit of work raises PoolChanged. Returns the pool as it is once committed."""
        item = PoolItem(
            PoolItem.pk_for(pool.api_key_id),
            PoolItem.sk_for(),
            tenant=pool.tenant,
            api_key_id=pool.api_key_id,
            entries=[_entry_map(entry) for entry in pool.entries],
        )
        if expected_version:  # PynamoDB's lock: the stored one is at this version (else: none stored)
            item.version = expected_version
        uow.put(item, refused=PoolChanged("the pool changed meanwhile; read it again"))
        return pool.model_copy(update={"version": expected_version + 1})

    def record_key_deleted(self, uow: UnitOfWork, api_key_id: str) -> None:
        """The key's pool goes with the key, whatever its version."""
        uow.delete(PoolItem(PoolItem.pk_for(api_key_id), PoolItem.sk_for()), any_version=True)

    def next_ticket(self, api_key_id: str) -> Ticket:
        """The next round-robin ticket of the key: one atomic add on this container's next shard."""
        shard = self._pick_shard(self._shards)
        counter = PoolCounter(PoolCounter.pk_for(api_key_id, str(shard)), PoolCounter.sk_for())
        store.update(counter, [PoolCounter.ticket.add(1), PoolCounter.expires_at.set(utcnow() + COUNTER_IDLE)])
        return Ticket(counter.ticket or 0, shard, self._shards)


def _entry_map(entry: PoolEntry) -> PoolEntryMap:
    stored: PoolEntryMap = PoolEntryMap(  # type: ignore[no-untyped-call]  # PynamoDB leaves it unannotated
        id=entry.id, number_id=entry.number_id, added_at=entry.added_at
    )
    return stored

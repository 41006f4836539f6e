"""Pool persistence: one item per API key's pool, and its round-robin counter.

- pool: pk `APIKEY#<id>`, sk `POOL`: the ordered entries and a `version` (optimistic lock); a
  write also checks that the key still exists in the caller's tenant, in one transaction;
- counter: `shards` items, pk `POOLRR#<id>#<shard>`, sk `#META`: each ticket does `ADD ticket 1`
  on one of them (atomic, one request), with `expiresAt` pushed 24 h ahead on every use so an
  idle key's counter expires. One item takes ~1,000 writes/s; spreading the counter lets one key
  take ~1,000 tickets/s per shard.

Which shard: each container takes the shards in turn, from a random first one. Random picks
would let the shards' counts drift apart like a random walk (about the square root of the tickets
per shard); in turn, each container leaves them at most one ticket apart, so they drift only by
how many containers stopped mid-round. `Ticket.index` then spaces the shards' starting points
evenly around the pool, which keeps a number's share within a send or two of even.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from switchboard.core.dynamo import META, cancellation_codes, entity_key, from_item, to_item
from switchboard.core.errors import NotFound, PoolChanged
from switchboard.pool.domain import Pool, Ticket, unknown_pool_number

POOL_SK = "POOL"
COUNTER_IDLE_SECONDS = 24 * 3600


def pool_key(api_key_id: str) -> dict[str, str]:
    return {"pk": f"APIKEY#{api_key_id}", "sk": POOL_SK}


def counter_key(api_key_id: str, shard: int) -> dict[str, str]:
    return {"pk": f"POOLRR#{api_key_id}#{shard}", "sk": META}


class InTurn:
    """This container's shard picks: one after the other, from a random first one (so that
    containers started together do not all begin on the same shard)."""

    def __init__(self, first: int | None = None) -> None:
        self._turns = itertools.count(random.randrange(1 << 30) if first is None else first)

    def __call__(self, shards: int) -> int:
        return next(self._turns) % shards


class PoolRepository:
    def __init__(self, table: Any, *, shards: int = 1, pick_shard: Callable[[int], int] | None = None) -> None:
        if shards < 1:
            raise ValueError("shards must be at least 1")
        self._shards = shards
        self._pick_shard = pick_shard or InTurn()
        self._table = table
        self._client = table.meta.client
        self._name = table.name

    def get(self, tenant: str, api_key_id: str) -> Pool:
        """The key's pool (empty, version 0, when none was saved). Another tenant's: NotFound."""
        item = self._table.get_item(Key=pool_key(api_key_id), ConsistentRead=True).get("Item")
        if item is None:
            return Pool(tenant=tenant, api_key_id=api_key_id)
        if item.get("tenant") != tenant:
            raise NotFound("API key not found")
        return from_item(Pool, item)

    def save(self, pool: Pool, expected_version: int, *, adding: str | None = None) -> Pool:
        """Write `pool` if the stored one still has `expected_version` and the key still exists,
        and, when a number is being `adding`, that number still exists in the tenant too (a
        deletion racing the add must not leave an entry behind).

        Raises NotFound (the key is gone, or not the tenant's), UnknownReference (the added number
        is) or PoolChanged (lost the race).
        """
        saved = pool.model_copy(update={"version": expected_version + 1})
        same_version = (
            {"ConditionExpression": "attribute_not_exists(pk)"}
            if expected_version == 0
            else {
                "ConditionExpression": "version = :version",
                "ExpressionAttributeValues": {":version": expected_version},
            }
        )
        items: list[dict[str, Any]] = [
            {
                "ConditionCheck": {
                    "TableName": self._name,
                    "Key": entity_key("APIKEY", pool.api_key_id),
                    "ConditionExpression": "tenant = :tenant",
                    "ExpressionAttributeValues": {":tenant": pool.tenant},
                }
            },
            {"Put": {"TableName": self._name, "Item": to_item(saved, pool_key(pool.api_key_id)), **same_version}},
        ]
        if adding is not None:
            items.append(
                {
                    "ConditionCheck": {
                        "TableName": self._name,
                        "Key": entity_key("NUMBER", adding),
                        "ConditionExpression": "tenant = :tenant",
                        "ExpressionAttributeValues": {":tenant": pool.tenant},
                    }
                }
            )
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as error:
            codes = cancellation_codes(error)
            if codes and codes[0] == "ConditionalCheckFailed":
                raise NotFound("API key not found") from error
            if len(codes) > 2 and codes[2] == "ConditionalCheckFailed":
                raise unknown_pool_number() from error
            if "ConditionalCheckFailed" in codes:
                raise PoolChanged("the pool changed meanwhile; read it again") from error
            raise
        return saved

    def next_ticket(self, api_key_id: str) -> Ticket:
        """The next round-robin ticket of the key: one atomic `ADD` on this container's next shard."""
        shard = self._pick_shard(self._shards)
        answer = self._table.update_item(
            Key=counter_key(api_key_id, shard),
            UpdateExpression="ADD ticket :one SET expiresAt = :expires",
            ExpressionAttributeValues={":one": 1, ":expires": int(time.time()) + COUNTER_IDLE_SECONDS},
            ReturnValues="UPDATED_NEW",
        )
        return Ticket(int(answer["Attributes"]["ticket"]), shard, self._shards)

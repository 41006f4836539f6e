"""Round-robin counter: writes per DynamoDB item at 5,000 affinity misses/s, and the pool's spread.

A model, not a DynamoDB: the real `PoolRepository.next_ticket` and `plan_numbers` run against an
in-memory table that counts the `ADD` each ticket makes on its item. One API key, a pool of 50
numbers (five times a pool's limit: the hardest case for an even share, 200 recipients each),
every message a new recipient (the worst case: each one takes a ticket), taken by send-worker
containers in a random interleaving, each with its own counter client (so its own turn over the
shards). DynamoDB takes about 1,000 writes/s on one item (1,000 WCU per partition, and one item
never spans partitions), so the busiest item's writes per second is what caps the key. Printed
with one counter item and with 10 shards, returned for docs/measurements.md; asserts nothing.
`python -m tools.bench shards`.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Callable
from typing import Any

from switchboard.pool.domain import NumberRoutes, SendingConfig, Ticket, plan_numbers
from switchboard.pool.dynamo import InTurn, PoolRepository
from tools.bench.measurements import Figures

ITEM_WRITES_PER_SECOND = 1_000
RATE = 5_000  # affinity misses per second for one API key
SECONDS = 4
POOL = 50
RECIPIENTS = 10_000
SEEDS = 10
SPREAD_TARGET = 0.01
SHARDED = 10  # the POOL_TICKET_SHARDS an operator sets for ~10,000 new recipients/s per key
# Send-worker containers at once: a few (a quiet key), the reconcile worker's cap, and what
# 5,000 sends/s at ~0.2 s per provider call keeps busy.
CONTAINERS = (1, 40, 1_000)


class _CounterTable:
    """Counts the `ADD ticket 1` per item, per simulated second."""

    client = None
    name = "model"

    def __init__(self) -> None:
        self.meta = self
        self.totals: Counter[str] = Counter()
        self.window: Counter[str] = Counter()

    def update_item(self, *, Key: dict[str, str], ExpressionAttributeValues: dict[str, Any], **_: Any) -> Any:
        self.totals[Key["pk"]] += ExpressionAttributeValues[":one"]
        self.window[Key["pk"]] += 1
        return {"Attributes": {"ticket": self.totals[Key["pk"]]}}


def _pool() -> SendingConfig:
    # Routes do not matter here: the ticket alone decides which number a plan starts with.
    numbers = tuple(NumberRoutes(number_id=f"num_{index}", digits=f"55119{index:08d}") for index in range(POOL))
    return SendingConfig(tenant="bench", api_key_id="key_1", mode="pool", default=None, pool=numbers)


def _containers(table: _CounterTable, shards: int, count: int, seed: int) -> Callable[[], Ticket]:
    pick = random.Random(seed)
    clients = [PoolRepository(table, shards=shards, pick_shard=InTurn(pick.randrange(shards))) for _ in range(count)]
    return lambda: pick.choice(clients).next_ticket("key_1")


def busiest_item(shards: int) -> int:
    """The most writes one counter item took in any simulated second at RATE misses/s."""
    table = _CounterTable()
    take = _containers(table, shards, CONTAINERS[-1], seed=shards)
    config, busiest = _pool(), 0
    for _ in range(SECONDS):
        table.window.clear()
        for _ in range(RATE):
            plan_numbers(config, None, take)
        busiest = max(busiest, *table.window.values())
    return busiest


def spreads(shards: int, containers: int) -> list[float]:
    """Per seed: how far the pool's furthest number is from its even share, over RECIPIENTS."""
    config, share = _pool(), RECIPIENTS / POOL
    worst: list[float] = []
    for seed in range(SEEDS):
        take = _containers(_CounterTable(), shards, containers, seed)
        chosen = Counter(plan_numbers(config, None, take).numbers[0].digits for _ in range(RECIPIENTS))
        worst.append(max(abs(chosen[n.digits] - share) / share for n in config.pool))
    return worst


def measure() -> Figures:
    default = SHARDED
    print(f"one API key, {POOL} numbers, {RATE:,} affinity misses/s, item limit {ITEM_WRITES_PER_SECOND:,} writes/s")
    busiest_by_shards: dict[str, int] = {}
    for shards in (1, default):
        busiest = busiest_item(shards)
        busiest_by_shards[str(shards)] = busiest
        capacity = ITEM_WRITES_PER_SECOND * shards
        verdict = "within" if busiest <= ITEM_WRITES_PER_SECOND else "OVER"
        print(
            f"  {shards:>2} shard(s): busiest item {busiest:,} writes/s (target <= {ITEM_WRITES_PER_SECOND:,}: "
            f"{verdict}); key capacity ~{capacity:,} tickets/s"
        )
    print(
        f"  spread over {RECIPIENTS:,} recipients ({RECIPIENTS // POOL} per number), {SEEDS} seeds, "
        f"target +-{SPREAD_TARGET:.0%}:"
    )
    spread_rows: list[Figures] = []
    for shards in (1, default):
        for containers in CONTAINERS if shards > 1 else CONTAINERS[-1:]:
            worst = spreads(shards, containers)
            verdict = "met" if max(worst) <= SPREAD_TARGET else "NOT met"
            print(
                f"    {shards:>2} shard(s), {containers:>5,} containers: furthest number median "
                f"{statistics.median(worst):.1%}, max {max(worst):.1%} of its share ({verdict}; "
                f"{max(worst) * RECIPIENTS / POOL:.0f} sends)"
            )
            spread_rows.append(
                {
                    "shards": shards,
                    "containers": containers,
                    "median": round(statistics.median(worst), 4),
                    "max": round(max(worst), 4),
                }
            )
    return {
        "pool": POOL,
        "rate": RATE,
        "item_limit": ITEM_WRITES_PER_SECOND,
        "recipients": RECIPIENTS,
        "seeds": SEEDS,
        "spread_target": SPREAD_TARGET,
        "busiest": busiest_by_shards,
        "spreads": spread_rows,
    }

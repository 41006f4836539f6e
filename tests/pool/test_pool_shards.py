"""The sharded round-robin counter: tickets spread over several items still share a pool evenly."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import boto3
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.core.settings import get_settings
from switchboard.pool.domain import SendingConfig, plan_numbers
from switchboard.pool.dynamo import SHARD_STRIDE, PoolRepository
from tests.support.aws import AwsResources
from tests.support.sending import number

REGION = "us-east-1"


class CounterTable:
    """The one DynamoDB call the counter makes, `ADD ticket 1` on an item, kept in memory."""

    def __init__(self) -> None:
        self.items: Counter[str] = Counter()
        self.meta = self

    def update_item(self, *, Key: dict[str, str], ExpressionAttributeValues: dict[str, Any], **_: Any) -> Any:
        self.items[Key["pk"]] += ExpressionAttributeValues[":one"]
        return {"Attributes": {"ticket": self.items[Key["pk"]]}}

    client = None
    name = "in-memory"


def pool_of(size: int) -> SendingConfig:
    numbers = tuple(number(f"55119{index:08d}") for index in range(size))
    return SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", default=None, pool=numbers)


def first_numbers(config: SendingConfig, tickets: PoolRepository, recipients: int) -> Counter[str]:
    chosen: Counter[str] = Counter()
    for _ in range(recipients):
        plan = plan_numbers(config, None, lambda: tickets.next_ticket("key_1"))
        chosen[plan.numbers[0].digits] += 1
    return chosen


def test_ten_thousand_recipients_over_ten_shards_share_a_fifty_number_pool_evenly() -> None:
    table = CounterTable()
    tickets = PoolRepository(table, shards=10, pick_shard=random.Random(20261201).randrange)
    config = pool_of(50)

    chosen = first_numbers(config, tickets, 10_000)

    assert len(table.items) == 10  # the writes went to ten items, not one
    assert set(chosen) == {n.digits for n in config.pool}
    share = 10_000 / 50
    worst = max(abs(count - share) / share for count in chosen.values())
    assert worst <= 0.025, f"a number is {worst:.1%} off its share"


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    pool_size=st.integers(min_value=1, max_value=64),
    shards=st.integers(min_value=1, max_value=16),
    recipients=st.integers(min_value=0, max_value=600),
)
def test_every_number_stays_within_one_send_per_shard_of_its_share(
    seed: int, pool_size: int, shards: int, recipients: int
) -> None:
    # Each shard walks the whole pool, so it gives every number its share to within one send,
    # whatever the pool's size and however unevenly the random pick spread the tickets.
    tickets = PoolRepository(CounterTable(), shards=shards, pick_shard=random.Random(seed).randrange)
    config = pool_of(pool_size)

    chosen = first_numbers(config, tickets, recipients)

    share = recipients / pool_size
    for candidate in config.pool:
        assert abs(chosen[candidate.digits] - share) < shards


def test_one_shard_counts_one_two_three_on_a_single_item() -> None:
    table = CounterTable()
    tickets = PoolRepository(table, shards=1)

    assert [tickets.next_ticket("key_1") for _ in range(3)] == [1, 2, 3]
    assert list(table.items) == ["POOLRR#key_1#0"]


def test_sharded_tickets_count_per_shard_item_in_dynamodb(aws: AwsResources) -> None:
    table = boto3.resource("dynamodb", region_name=REGION).Table(get_settings().table_name)
    picks = iter([2, 0, 2, 2, 1])
    tickets = PoolRepository(table, shards=3, pick_shard=lambda _: next(picks))

    issued = [tickets.next_ticket("key_1") for _ in range(5)]

    assert issued == [2 * SHARD_STRIDE + 1, 1, 2 * SHARD_STRIDE + 2, 2 * SHARD_STRIDE + 3, SHARD_STRIDE + 1]
    stored = {shard: table.get_item(Key={"pk": f"POOLRR#key_1#{shard}", "sk": "#META"})["Item"] for shard in range(3)}
    assert {shard: int(item["ticket"]) for shard, item in stored.items()} == {0: 1, 1: 1, 2: 3}
    assert all(int(item["expiresAt"]) > 0 for item in stored.values())

"""The sharded round-robin counter: tickets spread over several items still share a pool evenly."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import boto3
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard import bootstrap
from switchboard.core import store
from switchboard.core.settings import get_settings
from switchboard.pool.domain import SendingConfig, Ticket, plan_numbers
from switchboard.pool.dynamo import InTurn, PoolRepository
from tests.support.sending import number
from tools.support.aws import AwsResources

REGION = "us-east-1"


class CounterTable:
    """The one DynamoDB request the counter makes, an UpdateItem adding to `ticket`, kept in memory:
    bound as the item models' low-level client (it answers as botocore does)."""

    name = "in-memory"
    _request_signer = None  # what PynamoDB looks at before it would build a client of its own

    def __init__(self) -> None:
        self.items: Counter[str] = Counter()
        store.bind(self.name, self)

    def _make_api_call(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        assert operation == "UpdateItem", operation
        added = re.search(r"ADD (#\w+) (:\w+)", request["UpdateExpression"])
        assert added is not None and request["ExpressionAttributeNames"][added[1]] == "ticket"
        pk = request["Key"]["pk"]["S"]
        self.items[pk] += int(request["ExpressionAttributeValues"][added[2]]["N"])
        return {"Attributes": {"pk": request["Key"]["pk"], "ticket": {"N": str(self.items[pk])}}}


def pool_of(size: int) -> SendingConfig:
    numbers = tuple(number(f"55119{index:08d}") for index in range(size))
    return SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", default=None, pool=numbers)


def first_numbers(config: SendingConfig, take: Callable[[], Ticket], recipients: int) -> Counter[str]:
    chosen: Counter[str] = Counter()
    for _ in range(recipients):
        chosen[plan_numbers(config, None, take).numbers[0].digits] += 1
    return chosen


def containers(table: CounterTable, shards: int, count: int, seed: int) -> Callable[[], Ticket]:
    """`count` send-worker containers, each with its own counter client, taking tickets in a random order."""
    pick = random.Random(seed)
    clients = [PoolRepository(table, shards=shards, pick_shard=InTurn(pick.randrange(shards))) for _ in range(count)]
    return lambda: pick.choice(clients).next_ticket("key_1")


def worst_share(config: SendingConfig, chosen: Counter[str], recipients: int) -> float:
    share = recipients / len(config.pool)
    return max(abs(chosen[n.digits] - share) / share for n in config.pool)


def test_ten_thousand_recipients_over_ten_shards_share_a_fifty_number_pool_within_one_percent() -> None:
    table = CounterTable()
    config = pool_of(50)

    chosen = first_numbers(config, containers(table, shards=10, count=40, seed=20261201), 10_000)

    assert len(table.items) == 10  # the writes went to ten items, not one
    assert worst_share(config, chosen, 10_000) <= 0.01  # 200 each, +-2


@settings(max_examples=60, deadline=None)
@given(
    first=st.integers(min_value=0, max_value=200),
    pool_size=st.integers(min_value=1, max_value=64),
    shards=st.integers(min_value=1, max_value=16),
    recipients=st.integers(min_value=0, max_value=600),
)
def test_one_container_taking_the_shards_in_turn_keeps_every_number_within_two_sends_of_its_share(
    first: int, pool_size: int, shards: int, recipients: int
) -> None:
    tickets = PoolRepository(CounterTable(), shards=shards, pick_shard=InTurn(first))
    config = pool_of(pool_size)

    chosen = first_numbers(config, lambda: tickets.next_ticket("key_1"), recipients)

    share = recipients / pool_size
    assert all(abs(chosen[n.digits] - share) < 2 for n in config.pool)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    pool_size=st.integers(min_value=1, max_value=64),
    shards=st.integers(min_value=1, max_value=16),
    recipients=st.integers(min_value=0, max_value=600),
)
def test_however_the_shards_are_picked_every_number_stays_within_one_send_per_shard_of_its_share(
    seed: int, pool_size: int, shards: int, recipients: int
) -> None:
    # Each shard walks the whole pool on its own, so it gives every number its share to within
    # one send whatever the pool's size, even when the shards were taken very unevenly.
    tickets = PoolRepository(CounterTable(), shards=shards, pick_shard=random.Random(seed).randrange)
    config = pool_of(pool_size)

    chosen = first_numbers(config, lambda: tickets.next_ticket("key_1"), recipients)

    share = recipients / pool_size
    for candidate in config.pool:
        assert abs(chosen[candidate.digits] - share) < shards


def test_one_shard_counts_one_two_three_on_a_single_item() -> None:
    table = CounterTable()
    tickets = PoolRepository(table, shards=1)

    assert [tickets.next_ticket("key_1") for _ in range(3)] == [Ticket(1), Ticket(2), Ticket(3)]
    assert list(table.items) == ["POOLRR#key_1#0"]


def test_sharded_tickets_count_per_shard_item_in_dynamodb(aws: AwsResources) -> None:
    table = boto3.resource("dynamodb", region_name=REGION).Table(get_settings().table_name)
    picks = iter([2, 0, 2, 2, 1])
    tickets = PoolRepository(bootstrap.table(), shards=3, pick_shard=lambda _: next(picks))

    issued = [tickets.next_ticket("key_1") for _ in range(5)]

    assert issued == [Ticket(1, 2, 3), Ticket(1, 0, 3), Ticket(2, 2, 3), Ticket(3, 2, 3), Ticket(1, 1, 3)]
    stored = {shard: table.get_item(Key={"pk": f"POOLRR#key_1#{shard}", "sk": "#META"})["Item"] for shard in range(3)}
    assert {shard: int(item["ticket"]) for shard, item in stored.items()} == {0: 1, 1: 1, 2: 3}
    assert all(int(item["expiresAt"]) > 0 for item in stored.values())


def test_in_turn_a_container_visits_every_shard_once_per_round_from_its_first() -> None:
    turns = InTurn(first=7)

    assert [turns(4) for _ in range(6)] == [3, 0, 1, 2, 3, 0]

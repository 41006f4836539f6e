"""Items past their Time to Live leave the local stack's tables, as AWS deletes them; nothing
else does (no TTL attribute, a future expiry, a value that is not a Number, a table without TTL)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack.aws_endpoint import AwsEndpoint
from devstack.ttl import ExpiringItems
from tools.support.aws import fake_aws_environment

NOW = 1_900_000_000.0


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsEndpoint]:
    fake_aws_environment(monkeypatch)
    served = AwsEndpoint(port=0).start()
    yield served
    served.stop()


def _table(dynamodb: Any, name: str, *, ttl: bool, range_key: bool) -> None:
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attributes = [{"AttributeName": "pk", "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
        attributes.append({"AttributeName": "sk", "AttributeType": "S"})
    dynamodb.create_table(
        TableName=name, KeySchema=keys, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST"
    )
    if ttl:
        dynamodb.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"AttributeName": "expiresAt", "Enabled": True}
        )


def _keys(dynamodb: Any, name: str) -> set[str]:
    return {item["pk"]["S"] + item.get("sk", {"S": ""})["S"] for item in dynamodb.scan(TableName=name)["Items"]}


def test_given_expired_items_when_swept_then_only_they_are_gone(endpoint: AwsEndpoint) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint.url)
    _table(dynamodb, "ttl-ranged", ttl=True, range_key=True)
    _table(dynamodb, "ttl-hashed", ttl=True, range_key=False)
    _table(dynamodb, "no-ttl", ttl=False, range_key=False)
    past, future = {"N": str(int(NOW) - 1)}, {"N": str(int(NOW) + 60)}
    for sk, expiry in {"past": past, "future": future, "text": {"S": str(int(NOW) - 1)}, "none": None}.items():
        item = {"pk": {"S": "a"}, "sk": {"S": sk}} | ({"expiresAt": expiry} if expiry else {})
        dynamodb.put_item(TableName="ttl-ranged", Item=item)
    dynamodb.put_item(TableName="ttl-hashed", Item={"pk": {"S": "past"}, "expiresAt": past})
    dynamodb.put_item(TableName="ttl-hashed", Item={"pk": {"S": "decimal"}, "expiresAt": {"N": f"{NOW + 0.5}"}})
    dynamodb.put_item(TableName="no-ttl", Item={"pk": {"S": "past"}, "expiresAt": past})

    names = {"ttl-ranged", "ttl-hashed", "no-ttl"}
    sweeper = ExpiringItems(endpoint.exclusive, lambda: names, clock=lambda: NOW)
    assert sweeper.sweep() == 2

    assert _keys(dynamodb, "ttl-ranged") == {"afuture", "atext", "anone"}
    assert _keys(dynamodb, "ttl-hashed") == {"decimal"}
    assert _keys(dynamodb, "no-ttl") == {"past"}


def test_given_a_running_sweeper_then_an_expired_item_goes_within_its_interval(endpoint: AwsEndpoint) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint.url)
    _table(dynamodb, "ttl-live", ttl=True, range_key=False)
    dynamodb.put_item(TableName="ttl-live", Item={"pk": {"S": "lease"}, "expiresAt": {"N": str(int(time.time()) - 1)}})
    sweeper = ExpiringItems(endpoint.exclusive, lambda: {"ttl-live"}, interval=0.05).start()
    try:
        deadline = time.monotonic() + 5
        while _keys(dynamodb, "ttl-live") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sweeper.stop()
    assert _keys(dynamodb, "ttl-live") == set()
    assert sweeper.expired == 1

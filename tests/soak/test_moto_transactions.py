"""The soak's item-level transaction backup answers and leaves the tables exactly as moto's
whole-table backup does: the same transactions, committed or cancelled, on both."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from tests.support.aws import fake_aws_environment
from tools.soak import moto_transactions

MAIN, PLAIN = "main", "plain"
Scenario = Callable[[Any], None]


def put(table: str, pk: str, sk: str | None = None, condition: str | None = None, **extra: Any) -> dict[str, Any]:
    item = {"pk": {"S": pk}, **({"sk": {"S": sk}} if sk else {}), **extra}
    operation: dict[str, Any] = {"TableName": table, "Item": item}
    if condition:
        operation |= {"ConditionExpression": condition, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    return {"Put": operation}


def key(pk: str, sk: str | None = None) -> dict[str, Any]:
    return {"pk": {"S": pk}, **({"sk": {"S": sk}} if sk else {})}


def seed(client: Any) -> None:
    client.put_item(TableName=MAIN, Item={"pk": {"S": "LINE#1"}, "sk": {"S": "META"}, "n": {"N": "1"}})
    client.put_item(TableName=MAIN, Item={"pk": {"S": "CALL#1"}, "sk": {"S": "META"}, "state": {"S": "ringing"}})
    client.put_item(TableName=PLAIN, Item={"pk": {"S": "idem-1"}, "status": {"S": "INPROGRESS"}})


SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "committed": [
        put(MAIN, "MSG#1", "META", "attribute_not_exists(pk)", status={"S": "QUEUED"}),
        {
            "Update": {
                "TableName": MAIN,
                "Key": key("LINE#1", "META"),
                "UpdateExpression": "ADD n :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
        {"ConditionCheck": {"TableName": PLAIN, "Key": key("idem-1"), "ConditionExpression": "attribute_exists(pk)"}},
        {"Delete": {"TableName": MAIN, "Key": key("CALL#1", "META")}},
    ],
    "cancelled by a failed check": [
        put(MAIN, "MSG#2", "META", "attribute_not_exists(pk)"),
        {
            "Update": {
                "TableName": MAIN,
                "Key": key("LINE#1", "META"),
                "UpdateExpression": "SET n = :nine",
                "ExpressionAttributeValues": {":nine": {"N": "9"}},
            }
        },
        {"Delete": {"TableName": PLAIN, "Key": key("idem-1")}},
        {
            "ConditionCheck": {
                "TableName": MAIN,
                "Key": key("CALL#1", "META"),
                "ConditionExpression": "#s = :ended",
                "ExpressionAttributeNames": {"#s": "state"},
                "ExpressionAttributeValues": {":ended": {"S": "ended"}},
            }
        },
    ],
    "cancelled by an existing item, its old value returned": [
        {"Delete": {"TableName": MAIN, "Key": key("CALL#1", "META")}},
        put(MAIN, "LINE#1", "META", "attribute_not_exists(pk)"),
        put(PLAIN, "idem-2"),
    ],
    "refused: one item twice": [
        put(MAIN, "MSG#3", "META"),
        {"Delete": {"TableName": MAIN, "Key": key("MSG#3", "META")}},
    ],
    "cancelled by an update that cannot apply": [
        put(PLAIN, "idem-3"),
        {
            "Update": {
                "TableName": MAIN,
                "Key": key("LINE#1", "META"),
                "UpdateExpression": "ADD n :text",
                "ExpressionAttributeValues": {":text": {"S": "x"}},
            }
        },
    ],
}


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    fake_aws_environment(monkeypatch)
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=MAIN,
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            BillingMode="PAY_PER_REQUEST",
        )
        dynamodb.create_table(
            TableName=PLAIN,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield dynamodb


def outcome(client: Any, items: list[dict[str, Any]]) -> tuple[Any, dict[str, list[Any]]]:
    try:
        client.transact_write_items(TransactItems=items)
        answer: Any = "committed"
    except ClientError as error:
        answer = (error.response["Error"]["Code"], error.response.get("CancellationReasons"))
    tables = {
        name: sorted(
            client.scan(TableName=name)["Items"], key=lambda item: (item["pk"]["S"], item.get("sk", {}).get("S", ""))
        )
        for name in (MAIN, PLAIN)
    }
    return answer, tables


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_transaction_ends_as_with_motos_whole_table_backup(client: Any, scenario: str) -> None:
    items = SCENARIOS[scenario]
    seed(client)
    expected = outcome(client, items)
    for name in (MAIN, PLAIN):
        for item in client.scan(TableName=name)["Items"]:
            client.delete_item(TableName=name, Key={k: v for k, v in item.items() if k in ("pk", "sk")})
    seed(client)

    moto_transactions.install()
    try:
        got = outcome(client, items)
    finally:
        moto_transactions.uninstall()

    assert got == expected
    if scenario != "committed":
        assert expected[0] != "committed"  # the scenario does cancel: the rollback was exercised

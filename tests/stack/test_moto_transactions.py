"""The embedded endpoint's item-level transaction backup answers and leaves the tables exactly as
moto's whole-table backup does: the same transactions, committed or cancelled, on both."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table

from devstack import moto_transactions
from devstack.aws_endpoint import AwsEndpoint
from tools.support.aws import fake_aws_environment

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
    with moto_transactions.backed_up_by(moto_transactions.MOTO_METHOD):
        expected = outcome(client, items)
    for name in (MAIN, PLAIN):
        for item in client.scan(TableName=name)["Items"]:
            client.delete_item(TableName=name, Key={k: v for k, v in item.items() if k in ("pk", "sk")})
    seed(client)

    with moto_transactions.backed_up_by(moto_transactions.transact_write_items):
        got = outcome(client, items)

    assert got == expected
    if scenario != "committed":
        assert expected[0] != "committed"  # the scenario does cancel: the rollback was exercised


# --- the embedded endpoint ------------------------------------------------------------------


class CopyWatch:
    """Stands for the `copy` module inside moto's DynamoDB backend: records what it deep-copies."""

    def __init__(self) -> None:
        self.copied: list[type] = []

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        self.copied.append(type(value))
        return copy.deepcopy(value, memo)


@pytest.mark.parametrize("backup", ["endpoint", "moto"])
def test_a_transaction_through_the_embedded_endpoint_copies_no_table(
    monkeypatch: pytest.MonkeyPatch, backup: str
) -> None:
    fake_aws_environment(monkeypatch)
    watch = CopyWatch()
    monkeypatch.setattr(dynamodb_models, "copy", watch)
    endpoint = AwsEndpoint(port=0).start()  # what `make local`, the served tests and the soak run
    try:
        dynamodb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint.url)
        table = f"filled-{uuid.uuid4().hex[:8]}"  # endpoints in one process share moto's state
        dynamodb.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        for index in range(50):
            dynamodb.put_item(TableName=table, Item={"pk": {"S": f"OLD#{index}"}})
        method = moto_transactions.MOTO_METHOD if backup == "moto" else DynamoDBBackend.transact_write_items
        with moto_transactions.backed_up_by(method):
            dynamodb.transact_write_items(TransactItems=[put(table, "NEW#1"), put(table, "NEW#2")])
        assert len(dynamodb.scan(TableName=table)["Items"]) == 52
        dynamodb.close()
    finally:
        endpoint.stop()

    assert (Table in watch.copied) is (backup == "moto")  # the contrast shows the watch sees moto's copies

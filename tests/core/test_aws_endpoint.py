"""The embedded AWS endpoint applies requests one at a time, as DynamoDB's conditional writes do."""

from __future__ import annotations

import sys
import threading
from typing import Any

import boto3
from botocore.exceptions import ClientError

from tools.support.aws import AwsResources

THREADS = 40
LIMIT = 2
ROUNDS = 20


def replicas(table_name: str) -> list[Any]:
    """One table resource (own client, own connections) per thread, built once, as each Lambda
    container builds its own; the models are loaded once, which keeps the test fast."""
    session = boto3.session.Session()
    return [session.resource("dynamodb").Table(table_name) for _ in range(THREADS)]


def contend_for_slots(tables: list[Any], key: dict[str, str]) -> list[int]:
    """40 threads, each with its own client, try to take a slot at the same instant."""
    winners: list[int] = []
    barrier = threading.Barrier(THREADS)

    def contend(index: int) -> None:
        table = tables[index]
        barrier.wait()
        try:
            # A transaction: moto deep-copies the table for it, the race a lock must prevent.
            # (The resource's client takes Python values, as the table does.)
            table.meta.client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": table.name,
                            "Key": key,
                            "UpdateExpression": "SET occupants.#id = :now",
                            "ConditionExpression": "size(occupants) < :limit AND attribute_not_exists(occupants.#id)",
                            "ExpressionAttributeNames": {"#id": f"r{index}"},
                            "ExpressionAttributeValues": {":limit": LIMIT, ":now": index},
                        }
                    }
                ]
            )
            winners.append(index)
        except ClientError as error:
            assert error.response["Error"]["Code"] == "TransactionCanceledException"

    threads = [threading.Thread(target=contend, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return winners


def test_conditional_write_admits_exactly_the_limit_under_40_threads(served_aws: AwsResources) -> None:
    table = boto3.resource("dynamodb").Table(served_aws.tables["MainTable"])
    tables = replicas(table.name)
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the server runs in this process: switch threads often, as a loaded machine would
    try:
        rounds(table, tables)
    finally:
        sys.setswitchinterval(switch_interval)


def rounds(table: Any, tables: list[Any]) -> None:
    for round_number in range(ROUNDS):
        key = {"pk": f"LINE#{round_number}", "sk": "#META"}
        table.put_item(Item={**key, "occupants": {}})

        winners = contend_for_slots(tables, key)

        stored = table.get_item(Key=key, ConsistentRead=True)["Item"]
        assert len(winners) == LIMIT, f"round {round_number}: {len(winners)} admitted"
        assert sorted(stored["occupants"]) == sorted(f"r{index}" for index in winners)

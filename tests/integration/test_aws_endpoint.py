"""The embedded AWS endpoint applies requests one at a time, as DynamoDB's conditional writes do."""

from __future__ import annotations

import threading

import boto3
from botocore.exceptions import ClientError

from tests.conftest import AwsResources

THREADS = 40
LIMIT = 2
ROUNDS = 20


def contend_for_slots(table_name: str, key: dict[str, str]) -> list[int]:
    """40 threads, each with its own client, try to take a slot at the same instant."""
    winners: list[int] = []
    barrier = threading.Barrier(THREADS)

    def contend(index: int) -> None:
        table = boto3.session.Session().resource("dynamodb").Table(table_name)
        barrier.wait()
        try:
            table.update_item(
                Key=key,
                UpdateExpression="SET occupants.#id = :now",
                ConditionExpression="size(occupants) < :limit AND attribute_not_exists(occupants.#id)",
                ExpressionAttributeNames={"#id": f"r{index}"},
                ExpressionAttributeValues={":limit": LIMIT, ":now": index},
            )
            winners.append(index)
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ConditionalCheckFailedException"

    threads = [threading.Thread(target=contend, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return winners


def test_conditional_write_admits_exactly_the_limit_under_40_threads(served_aws: AwsResources) -> None:
    table = boto3.resource("dynamodb").Table(served_aws.tables["MainTable"])
    for round_number in range(ROUNDS):
        key = {"pk": f"LINE#{round_number}", "sk": "#META"}
        table.put_item(Item={**key, "occupants": {}})

        winners = contend_for_slots(table.name, key)

        stored = table.get_item(Key=key, ConsistentRead=True)["Item"]
        assert len(winners) == LIMIT, f"round {round_number}: {len(winners)} admitted"
        assert sorted(stored["occupants"]) == sorted(f"r{index}" for index in winners)

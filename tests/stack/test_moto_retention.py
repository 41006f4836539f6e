"""The embedded endpoint keeps no moto model object once nothing else holds it: an item replaced
or read, a message deleted, is gone from memory as from AWS (moto itself tracks every one)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto.dynamodb.models.dynamo_type import Item
from moto.sqs.models import Message

from devstack.aws_endpoint import AwsEndpoint
from tools.support.aws import fake_aws_environment


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsEndpoint]:
    fake_aws_environment(monkeypatch)
    served = AwsEndpoint(port=0).start()
    yield served
    served.stop()


def test_given_items_rewritten_and_messages_deleted_then_moto_keeps_no_copy_of_them(endpoint: AwsEndpoint) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint.url)
    sqs = boto3.client("sqs", endpoint_url=endpoint.url)
    dynamodb.create_table(
        TableName="retention",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    queue = sqs.create_queue(QueueName="retention")["QueueUrl"]

    for round_ in range(50):
        dynamodb.put_item(TableName="retention", Item={"pk": {"S": "one"}, "n": {"N": str(round_)}})
        dynamodb.get_item(TableName="retention", Key={"pk": {"S": "one"}})
        sqs.send_message(QueueUrl=queue, MessageBody=f"message {round_}")
        for received in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=received["ReceiptHandle"])

    assert Item.instances_tracked == []  # type: ignore[attr-defined]  # the list moto's metaclass gives each model class
    assert Message.instances_tracked == []  # type: ignore[attr-defined]  # the list moto's metaclass gives each model class
    assert dynamodb.get_item(TableName="retention", Key={"pk": {"S": "one"}})["Item"]["n"] == {"N": "49"}

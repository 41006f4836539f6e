"""Lambda's SQS event records, and a queue drained through a template function as Lambda would."""

from __future__ import annotations

from typing import Any

import boto3

from devstack.lambdas import Functions
from tools.support.aws import REGION, AwsResources


def sqs_record(
    body: str,
    *,
    message_id: str,
    queue_arn: str,
    receipt_handle: str = "h",
    attributes: dict[str, str] | None = None,
    md5: str = "",
) -> dict[str, Any]:
    """One record of Lambda's SQS event."""
    return {
        "messageId": message_id,
        "receiptHandle": receipt_handle,
        "body": body,
        "attributes": dict(attributes or {}),
        "messageAttributes": {},
        "md5OfBody": md5,
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


def received_record(
    message: dict[str, Any], queue_arn: str, attributes: dict[str, str] | None = None
) -> dict[str, Any]:
    """The record of one message of a ReceiveMessage result (its own attributes unless given)."""
    return sqs_record(
        message["Body"],
        message_id=message["MessageId"],
        queue_arn=queue_arn,
        receipt_handle=message["ReceiptHandle"],
        attributes=message.get("Attributes") if attributes is None else attributes,
        md5=message.get("MD5OfBody", ""),
    )


def drain_queue(aws: AwsResources, functions: Functions, queue: str, function: str) -> list[Any]:
    """Invoke `function` with every visible message of `queue` (batches of 10); delete what succeeded.

    Returns the function's responses.
    """
    sqs = boto3.client("sqs", region_name=REGION)
    url = aws.queues[queue]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    responses: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"]).get("Messages", [])
        if not batch:
            return responses
        response = functions.invoke(function, {"Records": [received_record(m, arn) for m in batch]})
        responses.append(response)
        kept = {failure["itemIdentifier"] for failure in (response or {}).get("batchItemFailures", [])}
        for message in batch:
            if message["MessageId"] not in kept:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        if kept:
            return responses

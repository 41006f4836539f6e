"""Lambda's SQS event source mapping, locally: one polling thread per queue -> function event.

It reads the `SQS` events of template.yaml and does what the managed poller does: receive up
to `BatchSize` messages (waiting up to `MaximumBatchingWindowInSeconds` to fill a batch),
invoke the function with the Lambda SQS event, then delete what succeeded. With
`FunctionResponseTypes: [ReportBatchItemFailures]` only the items named in
`batchItemFailures` stay; an exception, or a response naming an unknown item, fails the whole
batch. What is not deleted becomes visible again after the queue's visibility timeout, and the
queue's own RedrivePolicy moves it to the DLQ after `maxReceiveCount` receives (SQS does that,
not the poller: moto implements it as AWS does).
"""

from __future__ import annotations

import base64
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import boto3

from devstack.aws_endpoint import own_client_config
from devstack.background import Background
from devstack.lambdas import FunctionCrashed, Functions, FunctionsStopped
from devstack.template import Queue, ref_target

log = logging.getLogger("devstack.sqs")

MAX_RECEIVE = 10  # SQS's own limit per ReceiveMessage


@dataclass(frozen=True)
class EventSourceMapping:
    function: str
    queue: str  # logical id
    batch_size: int
    batching_window: float
    report_batch_item_failures: bool


def event_source_mappings(functions: Functions) -> list[EventSourceMapping]:
    """Every enabled `SQS` event of the template's functions."""
    mappings = []
    for function in functions.names():
        for event in (functions.definition(function).get("Events") or {}).values():
            properties = event.get("Properties") or {}
            if event.get("Type") != "SQS" or properties.get("Enabled") is False:
                continue
            mappings.append(
                EventSourceMapping(
                    function=function,
                    queue=ref_target(properties["Queue"]),
                    batch_size=int(properties.get("BatchSize", 10)),
                    batching_window=float(properties.get("MaximumBatchingWindowInSeconds", 0)),
                    report_batch_item_failures="ReportBatchItemFailures"
                    in (properties.get("FunctionResponseTypes") or []),
                )
            )
    return mappings


def lambda_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One record of the Lambda SQS event, from a ReceiveMessage result."""
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": {
            name: _message_attribute(value) for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if message.get("MD5OfMessageAttributes"):
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return record


def _message_attribute(value: dict[str, Any]) -> dict[str, Any]:
    converted: dict[str, Any] = {
        "stringListValues": list(value.get("StringListValues") or []),
        "binaryListValues": [base64.b64encode(item).decode() for item in value.get("BinaryListValues") or []],
        "dataType": value["DataType"],
    }
    if "StringValue" in value:
        converted["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        converted["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
    return converted


def failed_items(response: Any, message_ids: list[str]) -> set[str] | None:
    """The ids a partial batch response keeps, or None when the response fails the whole batch.

    As Lambda: null, an empty object or an empty list means every item succeeded; an item
    failure without a valid identifier of this batch fails the batch.
    """
    if response is None or response == {}:
        return set()
    if not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return None
    kept = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not identifier or identifier not in message_ids:
            return None
        kept.add(identifier)
    return kept


class SqsPoller:
    """Polls each mapped queue in its own thread and invokes the function, until `stop()`.

    `wait_seconds` is each ReceiveMessage's long-poll wait: a message is delivered as soon as
    it arrives either way; the wait only bounds how long `stop()` takes.
    """

    def __init__(
        self,
        functions: Functions,
        queues: dict[str, Queue],
        *,
        region: str = "us-east-1",
        endpoint_url: str | None = None,
        wait_seconds: int = 1,
    ) -> None:
        self._functions = functions
        self._queues = queues
        self._region = region
        self._endpoint_url = endpoint_url
        self._wait_seconds = wait_seconds
        self.mappings = event_source_mappings(functions)
        self._threads = Background()
        self._stopping = self._threads.stopping
        for mapping in self.mappings:
            self._threads.add(self._run, mapping, name=f"sqs-{mapping.function}")

    def start(self) -> SqsPoller:
        self._threads.start()
        return self

    def request_stop(self) -> None:
        """No new batch from now on (a received one is left to come back after its visibility timeout)."""
        self._threads.request_stop()

    def stop(self, timeout: float | None = None) -> None:
        """Stop polling; waits up to `timeout` (default: a receive's wait + 30 s) for a batch in flight."""
        self._threads.stop(self._wait_seconds + 30 if timeout is None else timeout)

    def _run(self, mapping: EventSourceMapping) -> None:
        sqs = boto3.session.Session().client(
            "sqs",
            region_name=self._region,
            endpoint_url=self._endpoint_url,
            config=own_client_config("event-source-mapping"),
        )
        queue = self._queues[mapping.queue]
        while not self._stopping.is_set():
            try:
                batch = self._receive(sqs, queue, mapping)
                if batch and not self._stopping.is_set():
                    self._deliver(sqs, queue, mapping, batch)
            except Exception:
                log.exception("sqs poller error", extra={"function": mapping.function, "queue": mapping.queue})
                self._stopping.wait(1)

    def _receive(self, sqs: Any, queue: Queue, mapping: EventSourceMapping) -> list[dict[str, Any]]:
        batch: list[dict[str, Any]] = []
        deadline = time.monotonic() + mapping.batching_window
        wait = self._wait_seconds
        while len(batch) < mapping.batch_size and not self._stopping.is_set():
            batch += sqs.receive_message(
                QueueUrl=queue.url,
                MaxNumberOfMessages=min(MAX_RECEIVE, mapping.batch_size - len(batch)),
                WaitTimeSeconds=wait,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            remaining = deadline - time.monotonic()
            if not batch or remaining <= 0:
                break
            wait = min(self._wait_seconds, math.ceil(remaining))
        return batch

    def _deliver(self, sqs: Any, queue: Queue, mapping: EventSourceMapping, batch: list[dict[str, Any]]) -> None:
        event = {"Records": [lambda_record(message, queue.arn, self._region) for message in batch]}
        ids = [message["MessageId"] for message in batch]
        try:
            response = self._functions.invoke(mapping.function, event)
        except FunctionsStopped:
            return  # the batch comes back after its visibility timeout
        except FunctionCrashed:
            log.warning(
                "container killed mid-batch: the batch comes back after its visibility timeout",
                extra={"function": mapping.function, "size": len(batch)},
            )
            return
        except Exception:
            log.exception("sqs batch failed", extra={"function": mapping.function, "size": len(batch)})
            return
        kept = failed_items(response, ids) if mapping.report_batch_item_failures else set()
        if kept is None:
            log.warning("invalid partial batch response: the whole batch fails", extra={"function": mapping.function})
            return
        done = [message for message in batch if message["MessageId"] not in kept]
        for start in range(0, len(done), MAX_RECEIVE):
            entries = [
                {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                for index, message in enumerate(done[start : start + MAX_RECEIVE])
            ]
            sqs.delete_message_batch(QueueUrl=queue.url, Entries=entries)

"""The SQS poller and the scheduler behave as Lambda's event source mapping and EventBridge do,
on a real (serialised) moto server, with a tiny template whose queues retry within seconds."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import boto3
import pytest

from devstack import template
from devstack.aws_endpoint import AwsEndpoint
from devstack.lambdas import Functions
from devstack.scheduler import Scheduler, rate_seconds, scheduled_event, schedules
from devstack.sqs_poller import SqsPoller, event_source_mappings, failed_items
from tools.support.aws import fake_aws_environment

TEMPLATE = Path(__file__).parent / "fixtures" / "template.yaml"
EVENTS = Path(__file__).resolve().parents[2] / "events"
REGION = "us-east-1"
T = TypeVar("T")


def eventually(probe: Callable[[], T | None], timeout: float = 15.0) -> T:
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        if time.monotonic() >= deadline:
            pytest.fail(f"not reached within {timeout} s: {value!r}")
        time.sleep(0.05)
    return value


class Workers:
    def __init__(self, endpoint: AwsEndpoint) -> None:
        self.endpoint_url = endpoint.url
        self.sqs = self.sqs_for_thread()
        # Queues of this test alone: moto's state outlives the endpoint, and a message an earlier
        # test left in flight would come back into this one's queues.
        names = template.LocalNames(prefix=f"workers-{uuid.uuid4().hex[:8]}")
        self.queues = template.create_queues(self.sqs, names, TEMPLATE)
        self.functions = Functions(TEMPLATE)
        self.poller = SqsPoller(self.functions, self.queues, endpoint_url=endpoint.url, region=REGION)

    def sqs_for_thread(self) -> Any:
        return boto3.session.Session().client("sqs", region_name=REGION, endpoint_url=self.endpoint_url)

    def events(self, function: str) -> list[dict[str, Any]]:
        recorded: list[tuple[str, Any]] = self.functions.handler(function).__globals__["EVENTS"]
        return [event for _kind, event in list(recorded)]

    def records(self, function: str, body: str) -> list[dict[str, Any]]:
        return [r for event in self.events(function) for r in event["Records"] if r["body"] == body]

    def send(self, queue: str, *bodies: str) -> None:
        entries = [{"Id": str(index), "MessageBody": body} for index, body in enumerate(bodies)]
        self.sqs.send_message_batch(QueueUrl=self.queues[queue].url, Entries=entries)

    def dead_letters(self, queue: str) -> list[str]:
        received = self.sqs.receive_message(QueueUrl=self.queues[queue].url, MaxNumberOfMessages=10)
        return sorted(message["Body"] for message in received.get("Messages", []))

    def visible(self, queue: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queues[queue].url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Workers]:
    fake_aws_environment(monkeypatch)
    endpoint = AwsEndpoint(port=0).start()
    running = Workers(endpoint)
    running.poller.start()
    yield running
    running.poller.stop()
    running.sqs.close()
    endpoint.stop()


def test_the_template_queues_are_created_with_their_own_visibility_and_redrive_policy(workers: Workers) -> None:
    work = workers.queues["WorkQueue"]
    attributes = workers.sqs.get_queue_attributes(QueueUrl=work.url, AttributeNames=["All"])["Attributes"]

    assert attributes["VisibilityTimeout"] == "2"
    assert json.loads(attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": workers.queues["WorkDLQ"].arn,
        "maxReceiveCount": 2,
    }


def test_given_a_partial_batch_failure_then_successes_are_deleted_and_failures_retry_until_the_dlq(
    workers: Workers,
) -> None:
    workers.send("WorkQueue", "ok-1", "fail-1", "ok-2")

    retried = eventually(lambda: workers.records("PartialFunction", "fail-1")[1:])
    dead = eventually(lambda: workers.dead_letters("WorkDLQ"))

    assert retried[0]["attributes"]["ApproximateReceiveCount"] == "2"
    assert dead == ["fail-1"]
    assert len(workers.records("PartialFunction", "ok-1")) == 1
    assert len(workers.records("PartialFunction", "ok-2")) == 1
    assert len(workers.records("PartialFunction", "fail-1")) == 2
    assert workers.visible("WorkQueue") == 0


def test_given_a_handler_exception_then_the_whole_batch_comes_back_and_ends_in_the_dlq(workers: Workers) -> None:
    workers.send("PlainQueue", "explode", "innocent")

    dead = eventually(lambda: len(workers.dead_letters("PlainDLQ")) == 2 or None)

    assert dead
    first = workers.events("PlainFunction")[0]
    assert sorted(record["body"] for record in first["Records"]) == ["explode", "innocent"]
    assert [r["attributes"]["ApproximateReceiveCount"] for r in workers.records("PlainFunction", "innocent")] == [
        "1",
        "2",
    ]


def send_fifo(workers: Workers, *messages: tuple[str, str, str]) -> None:
    """(body, group, deduplication id) each, in one batch."""
    entries = [
        {"Id": str(index), "MessageBody": body, "MessageGroupId": group, "MessageDeduplicationId": dedup}
        for index, (body, group, dedup) in enumerate(messages)
    ]
    workers.sqs.send_message_batch(QueueUrl=workers.queues["OrderQueue"].url, Entries=entries)


def test_a_fifo_group_is_handed_out_in_order_and_held_back_behind_its_failed_record(workers: Workers) -> None:
    processed = workers.functions.handler("OrderedFunction").__globals__["PROCESSED"]
    send_fifo(workers, ("a-1", "A", "1"), ("once-a-2", "A", "2"), ("a-3", "A", "3"), ("b-1", "B", "4"))

    eventually(lambda: "a-3" in processed and workers.visible("OrderQueue") == 0)

    assert [body for body in processed if body.endswith(("-1", "-2", "-3")) and "a-" in body] == [
        "a-1",
        "once-a-2",
        "once-a-2",  # its second receive: the group's next record waited for it
        "a-3",
    ]
    assert processed.count("b-1") == 1  # another group is not held back
    assert workers.dead_letters("OrderDLQ") == []


def test_a_fifo_queue_drops_a_deduplication_id_it_took_in_the_last_five_minutes_even_once_deleted(
    workers: Workers,
) -> None:
    processed = workers.functions.handler("OrderedFunction").__globals__["PROCESSED"]
    send_fifo(workers, ("first", "C", "same"))
    eventually(lambda: "first" in processed and workers.visible("OrderQueue") == 0)

    send_fifo(workers, ("again", "C", "same"), ("next", "C", "other"))
    eventually(lambda: "next" in processed)

    assert "again" not in processed  # it would have come before "next", its group's later message


def test_a_delivered_record_has_the_lambda_sqs_event_shape_of_the_sample(workers: Workers) -> None:
    sample = json.loads((EVENTS / "sqs_batch.json").read_text())["Records"][0]
    workers.sqs.send_message(
        QueueUrl=workers.queues["WorkQueue"].url,
        MessageBody="ok-shape",
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "message.send"}},
    )

    (record,) = eventually(lambda: workers.records("PartialFunction", "ok-shape"))

    assert set(record) == set(sample) | {"md5OfMessageAttributes"}
    assert set(record["attributes"]) >= {"ApproximateReceiveCount", "SentTimestamp", "SenderId"}
    assert record["messageAttributes"] == {
        "kind": {"stringValue": "message.send", "stringListValues": [], "binaryListValues": [], "dataType": "String"}
    }
    assert (record["eventSource"], record["awsRegion"]) == ("aws:sqs", REGION)
    assert record["eventSourceARN"] == workers.queues["WorkQueue"].arn


def test_event_source_mappings_are_read_from_the_template() -> None:
    mappings = {mapping.function: mapping for mapping in event_source_mappings(Functions(TEMPLATE))}

    assert mappings["PartialFunction"].batch_size == 5
    assert mappings["PartialFunction"].report_batch_item_failures
    assert not mappings["PlainFunction"].report_batch_item_failures
    assert set(mappings) == {"PartialFunction", "PlainFunction", "OrderedFunction"}


@pytest.mark.parametrize(
    ("response", "kept"),
    [
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "b"}]}, {"b"}),
        ({"batchItemFailures": [{"itemIdentifier": "zzz"}]}, None),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, None),
        ({"batchItemFailures": "b"}, None),
        ("not a dict", None),
    ],
)
def test_a_partial_batch_response_keeps_only_valid_failures_else_fails_the_batch(response: Any, kept: Any) -> None:
    assert failed_items(response, ["a", "b"]) == kept


def test_given_a_schedule_then_its_function_is_invoked_every_period_with_a_scheduled_event() -> None:
    functions = Functions(TEMPLATE)
    scheduler = Scheduler(functions, period_override=0.1).start()
    try:
        recorded = eventually(lambda: functions.handler("TickFunction").__globals__["EVENTS"][1:])
    finally:
        scheduler.stop()

    sample = json.loads((EVENTS / "scheduled.json").read_text())
    event = recorded[0][1]
    assert set(event) == set(sample)
    assert (event["detail-type"], event["source"], event["detail"]) == ("Scheduled Event", "aws.events", {})


def test_schedule_periods_come_from_the_template_rate_unless_overridden() -> None:
    functions = Functions(TEMPLATE)

    (tick,) = schedules(functions)
    (fast,) = schedules(functions, period_override=2.5)

    assert (tick.expression, tick.period, fast.period) == ("rate(5 minutes)", 300, 2.5)
    assert rate_seconds("rate(1 hour)") == 3600
    assert rate_seconds("rate(2 days)") == 172800
    with pytest.raises(ValueError, match="rate"):
        rate_seconds("cron(0 12 * * ? *)")
    assert scheduled_event(tick)["resources"][0].startswith("arn:aws:events:us-east-1:")


def test_a_long_poll_does_not_hold_the_endpoint_so_a_send_during_it_is_received(workers: Workers) -> None:
    """One lock serialises the endpoint; a long poll must not keep it while it waits."""
    queue = workers.queues["WorkDLQ"].url
    received: list[list[dict[str, Any]]] = []
    poll = threading.Thread(
        target=lambda: received.append(
            workers.sqs_for_thread().receive_message(QueueUrl=queue, WaitTimeSeconds=10).get("Messages", [])
        )
    )
    poll.start()
    time.sleep(0.3)
    workers.sqs.send_message(QueueUrl=queue, MessageBody="during the poll")
    poll.join()

    assert [message["Body"] for message in received[0]] == ["during the poll"]

"""The template's AWS resources (tables, queues, bus) for moto, and the environment the functions read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from devstack import template
from tools.support.bus import BusRules, bus_rules

REGION = "us-east-1"
PREFIX = "switchboard-test"


@dataclass
class AwsResources:
    tables: dict[str, str]
    queues: dict[str, str]  # logical id -> queue URL
    bus: str
    rules: BusRules | None = None  # the bus's rules with queue targets (tests/support/bus.py)

    def queue_messages(self, logical_id: str) -> list[dict[str, Any]]:
        """Receive (and leave in flight) every message currently visible on a queue."""
        sqs = boto3.client("sqs", region_name=REGION)
        received: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(QueueUrl=self.queues[logical_id], MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return received
            received.extend(batch)


def fake_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "SECRETS_PREFIX": "/switchboard/test",
        "LOCAL_MODE": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "Switchboard",
        "POWERTOOLS_SERVICE_NAME": "switchboard",
        "POWERTOOLS_DEV": "false",
        # What template.yaml sets from the live WebSocket API (the local stack sets its own).
        "LIVE_URL": "ws://127.0.0.1:9/live",
        "LIVE_MANAGEMENT_URL": "http://127.0.0.1:9/live",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def create_template_resources(monkeypatch: pytest.MonkeyPatch) -> AwsResources:
    """Tables, queues and the bus of template.yaml, with the env vars the functions read."""
    names = template.LocalNames(prefix=PREFIX)
    tables = template.create_tables(boto3.client("dynamodb", region_name=REGION), names)
    sqs = boto3.client("sqs", region_name=REGION)
    queues = {}
    for logical_id, properties in template.resources("AWS::SQS::Queue").items():
        # A FIFO queue as the template makes it (its groups and deduplication are the forward's order).
        fifo = {"FifoQueue": "true"} if properties.get("FifoQueue") else {}
        queues[logical_id] = sqs.create_queue(QueueName=names.queue(logical_id, properties), Attributes=fifo)[
            "QueueUrl"
        ]
    buckets = template.create_buckets(boto3.client("s3", region_name=REGION), names)
    bus = f"{PREFIX}-events"
    boto3.client("events", region_name=REGION).create_event_bus(Name=bus)
    rules = bus_rules("EventBus", bus, names, queues, REGION)
    rules.install(monkeypatch)
    # The people's user pool and the console's client, with the template's own properties.
    pools = template.create_user_pools(boto3.client("cognito-idp", region_name=REGION), names)
    environment = {
        "USER_POOL_ID": pools.get("UserPool", ""),
        "USER_POOL_CLIENT_ID": pools.get("ConsoleUserPoolClient", ""),
        "TABLE_NAME": tables["MainTable"],
        "IDEMPOTENCY_TABLE_NAME": tables["IdempotencyTable"],
        "EVENT_BUS_NAME": bus,
        "SEND_QUEUE_URL": queues.get("SendQueue", ""),
        "FORWARD_QUEUE_URL": queues.get("ForwardQueue", ""),
        "CLIENT_WEBHOOK_QUEUE_URL": queues.get("ClientWebhookQueue", ""),
        "RECONCILE_QUEUE_URL": queues.get("ReconcileQueue", ""),
        "MEDIA_BUCKET": buckets.get("MediaBucket", ""),
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return AwsResources(tables=tables, queues=queues, bus=bus, rules=rules)

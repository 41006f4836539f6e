"""The template's EventBridge rules with queue targets, on in-process moto.

The local stack runs the rules on its AWS endpoint (devstack/eventbridge.py); an in-process run
has no endpoint, so `BusRules.install` wraps boto3's request method instead: every PutEvents
any client makes is seen with its answer, and each entry the bus accepted that a rule matches
is sent to the rule's queue, with the event EventBridge delivers, before PutEvents returns (so
a test drains the queue right after the write that published). Rules whose targets are
functions are not run here: the tests of those functions invoke them themselves.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.client import BaseClient

from devstack import eventbridge
from devstack.template import LocalNames

Sent = Callable[[str, str], None]  # (queue logical id, body), after each send


class BusRules:
    def __init__(self, rules: list[eventbridge.Rule], queues: dict[str, str], region: str) -> None:
        self.rules = rules
        self._queues = queues
        self._region = region
        self.sqs = boto3.client("sqs", region_name=region)  # what sends to the queues, as EventBridge
        self.sent: list[Sent] = []  # told of each send (the benchmark counts them)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = BaseClient._make_api_call
        rules = self

        def call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            answer = original(client, operation, params)
            if operation == "PutEvents" and client.meta.service_model.service_name == "events":
                rules.observe(params, answer)
            return answer

        monkeypatch.setattr(BaseClient, "_make_api_call", call)

    def observe(self, request: dict[str, Any], answer: dict[str, Any]) -> None:
        for entry, result in zip(request.get("Entries") or [], answer.get("Entries") or [], strict=False):
            event_id = result.get("EventId")
            if not event_id:
                continue  # refused by the bus: EventBridge routes nothing
            event = eventbridge.event_envelope(entry, event_id, self._region)
            if event is None:
                continue
            bus = eventbridge.bus_name(entry.get("EventBusName"))
            for rule, delivered in eventbridge.routed(self.rules, bus, event):
                if rule.queue is None:
                    continue
                body = json.dumps(delivered)
                self.sqs.send_message(QueueUrl=self._queues[rule.queue], MessageBody=body)
                for told in self.sent:
                    told(rule.queue, body)


def bus_rules(bus_logical_id: str, bus: str, names: LocalNames, queues: dict[str, str], region: str) -> BusRules:
    return BusRules(eventbridge.queue_rules({bus_logical_id: bus}, names), queues, region)

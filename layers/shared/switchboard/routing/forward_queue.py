"""The forward queue (SQS FIFO): incoming messages waiting to be posted to their downstream.

One message group per conversation (the instance and the customer): the forwarder takes a
group's messages one after the other, in the order the ingest accepted them, so a text sent
after a photo waits until the photo is posted (or has become a placeholder). Groups do not wait
for each other. Each job's deduplication id is its event's: a job queued twice within SQS's
five minutes is queued once (and the forward is idempotent by event id beyond that).
"""

from __future__ import annotations

import hashlib
from typing import Any

from switchboard.routing.domain import IncomingMessage


def message_group(message: IncomingMessage) -> str:
    """The conversation a job belongs to, as a FIFO group id (at most 128 characters, no phone
    number or LID in the clear: SQS shows group ids in its console and metrics)."""
    customer = message.sender or message.sender_lid or ""
    return hashlib.sha256(f"{message.instance}#{customer}".encode()).hexdigest()


def deduplication_id(message: IncomingMessage) -> str:
    return hashlib.sha256(message.event_id.encode()).hexdigest()


class SqsForwardQueue:
    def __init__(self, sqs_client: Any, queue_url: str) -> None:
        self._sqs = sqs_client
        self._url = queue_url

    def send(self, message: IncomingMessage) -> None:
        self._sqs.send_message(
            QueueUrl=self._url,
            MessageBody=message.model_dump_json(),
            MessageGroupId=message_group(message),
            MessageDeduplicationId=deduplication_id(message),
        )

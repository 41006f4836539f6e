"""The forward queue (SQS): incoming messages waiting to be posted to their downstream."""

from __future__ import annotations

from typing import Any

from switchboard.routing.domain import IncomingMessage


class SqsForwardQueue:
    def __init__(self, sqs_client: Any, queue_url: str) -> None:
        self._sqs = sqs_client
        self._url = queue_url

    def send(self, message: IncomingMessage) -> None:
        self._sqs.send_message(QueueUrl=self._url, MessageBody=message.model_dump_json())

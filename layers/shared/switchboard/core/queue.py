"""An SQS queue of ours (send jobs, client webhook jobs): send a body, delay a retry."""

from __future__ import annotations

from typing import Any


class SqsQueue:
    def __init__(self, sqs_client: Any, queue_url: str | None) -> None:
        self._sqs = sqs_client
        self._url = queue_url

    def send(self, body: str) -> None:
        if not self._url:
            raise RuntimeError("the queue URL is not configured")
        self._sqs.send_message(QueueUrl=self._url, MessageBody=body)

    def send_later(self, body: str, delay_seconds: int) -> None:
        """A job consumers receive only after `delay_seconds` (SQS takes 0..900 per message on a
        standard queue). A new message starts its own receive count, unlike `delay`."""
        if not self._url:
            raise RuntimeError("the queue URL is not configured")
        self._sqs.send_message(QueueUrl=self._url, MessageBody=body, DelaySeconds=max(0, min(delay_seconds, 900)))

    def delay(self, receipt_handle: str, seconds: int) -> None:
        """Backoff: the received message becomes visible again in `seconds` (at most 12 h)."""
        if self._url:
            self._sqs.change_message_visibility(
                QueueUrl=self._url, ReceiptHandle=receipt_handle, VisibilityTimeout=max(0, min(seconds, 43200))
            )

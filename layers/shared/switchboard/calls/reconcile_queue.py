"""ReconcileQueue: one message per instance to reconcile, `{"instance": "<instance key>"}`."""

from __future__ import annotations

import json
from typing import Any

from switchboard.core.observability import logger

MAX_DELAY_SECONDS = 900  # SQS's maximum DelaySeconds


class ReconcileQueue:
    def __init__(self, sqs_client: Any, queue_url: str | None) -> None:
        self._sqs = sqs_client
        self._url = queue_url

    def request(self, instance: str, delay_seconds: int = 0) -> None:
        """Ask for a reconciliation soon. Best effort: the schedule reconciles every instance anyway."""
        if not self._url:
            logger.warning("no reconcile queue configured", extra={"instance": instance})
            return
        try:
            self._sqs.send_message(
                QueueUrl=self._url,
                MessageBody=json.dumps({"instance": instance}),
                DelaySeconds=max(0, min(delay_seconds, MAX_DELAY_SECONDS)),
            )
        except Exception:  # a failed trigger must not fail the request that asked for it
            logger.exception("reconcile request not sent", extra={"instance": instance})

    def send_batch(self, instance_keys: list[str], delays: list[int] | None = None) -> int:
        """Send up to 10 messages in one request, each after its delay in seconds (none: at once);
        entries SQS refused are sent once more, then reported."""
        if not self._url:
            raise RuntimeError("RECONCILE_QUEUE_URL is not set")
        entries: list[dict[str, Any]] = [
            {"Id": str(index), "MessageBody": json.dumps({"instance": key})} for index, key in enumerate(instance_keys)
        ]
        for entry, delay in zip(entries, delays or (), strict=False):
            entry["DelaySeconds"] = max(0, min(delay, MAX_DELAY_SECONDS))
        for attempt in (1, 2):
            answer = self._sqs.send_message_batch(QueueUrl=self._url, Entries=entries)
            failed_ids = {failure["Id"] for failure in answer.get("Failed", [])}
            if not failed_ids:
                return len(instance_keys)
            entries = [entry for entry in entries if entry["Id"] in failed_ids]
            if attempt == 2:
                logger.error("reconcile messages not sent", extra={"count": len(entries)})
        return len(instance_keys) - len(entries)

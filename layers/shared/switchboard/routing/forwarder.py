"""Incoming messages: queued by the webhook ingest, posted to the instance's downstream by the forwarder.

The ingest only enqueues (fast, durable before its 2xx); the forwarder (SQS, retries, DLQ)
resolves the downstream at delivery time, so a mapping change applies to the very next message.
The forward of one provider event is made idempotent by the forwarder function (Powertools
idempotency keyed by the event id).
"""

from __future__ import annotations

from typing import Protocol

from switchboard.core.observability import logger
from switchboard.routing.domain import DownstreamClient, DownstreamTarget, IncomingMessage
from switchboard.usage.service import count_metric
from switchboard.webhooks.events import ProviderEvent


class ForwardQueue(Protocol):
    def send(self, message: IncomingMessage) -> None: ...


class TargetResolver(Protocol):
    def target_for(self, owner_tag: str | None) -> DownstreamTarget | None: ...


class IncomingForwardHandler:
    """`message` effect: queue the message for its downstream (a re-run may queue it twice;
    the forwarder drops the second)."""

    def __init__(self, queue: ForwardQueue) -> None:
        self._queue = queue

    def __call__(self, event: ProviderEvent) -> None:
        data = event.data
        text, sender, message_id = data.get("text"), data.get("from"), data.get("id")
        if not (isinstance(text, str) and isinstance(sender, str) and isinstance(message_id, str)):
            logger.info("message event without text not forwarded", extra={"instance": event.instance.key})
            return
        self._queue.send(
            IncomingMessage(
                event_id=f"{event.provider_id}#{event.instance.provider_instance_id}#{event.event_id}",
                instance=event.instance.key,
                owner_tag=event.instance.owner_tag,
                inbox_id=event.instance.inbox_id,
                provider_message_id=message_id,
                sender=sender.lstrip("+"),
                text=text,
                sent_at=data.get("timestamp") if isinstance(data.get("timestamp"), str) else None,
            )
        )


class DownstreamForwarder:
    def __init__(self, resolver: TargetResolver, client: DownstreamClient) -> None:
        self._resolver = resolver
        self._client = client

    def forward(self, message: IncomingMessage) -> int | None:
        """Post one message; returns the conversation id, or None when no downstream is configured.

        Raises DownstreamError (the queue retries it, then parks it in the DLQ).
        """
        target = self._resolver.target_for(message.owner_tag)
        if target is None:
            logger.warning("no downstream configured; message dropped", extra={"instance": message.instance})
            count_metric("ForwardsDropped", message.instance)
            return None
        if message.inbox_id is not None:
            # The instance's own inbox, in the same downstream account (same URL and token).
            target = target.model_copy(update={"inbox_id": message.inbox_id})
        try:
            conversation = self._client.post_incoming(target, message)
        except Exception:
            count_metric("ForwardFailures", message.instance)
            raise
        logger.info(
            "message forwarded",
            extra={"instance": message.instance, "downstream": target.source, "conversation": conversation},
        )
        count_metric("MessagesForwarded", message.instance)
        return conversation

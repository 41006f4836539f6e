"""Incoming messages: queued by the webhook ingest, posted to the instance's downstream by the forwarder.

The ingest only enqueues (fast, durable before its 2xx); the forwarder (SQS, retries, DLQ)
resolves the downstream at delivery time, so a mapping change applies to the very next message.

Each provider message reaches the helpdesk once. Two copies of one forward running at once are
held apart by the forwarder function (Powertools idempotency keyed by the event id); what that
cannot see is a forward that died after its POST and before its completion was recorded (a
crash, a timeout, an answer lost): the redelivery would post the message again, and Chatwoot
takes a repeated `source_id` as a new message. So every forward records its start first (one
conditional write); a forward that finds an earlier start looks for the message, by its
`source_id`, in the contact's conversations before posting it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from switchboard.catalog.events import ProviderEvent
from switchboard.core.errors import SwitchboardError
from switchboard.core.observability import logger
from switchboard.providers.base import ContactDirectory
from switchboard.providers.content import content_from
from switchboard.routing.as_text import as_text
from switchboard.routing.domain import DownstreamClient, DownstreamTarget, IncomingMessage
from switchboard.usage.service import count_metric

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance
    from switchboard.catalog.ports import Targets
    from switchboard.messages.incoming_log import IncomingOutcomes


class ForwardQueue(Protocol):
    def send(self, message: IncomingMessage) -> None: ...


class TargetResolver(Protocol):
    def target_for(self, owner_tag: str | None) -> DownstreamTarget | None: ...


class ForwardAttempts(Protocol):
    def begin(self, message: IncomingMessage, at: datetime) -> datetime | None:
        """Record that a forward of this message starts at `at`, before anything is posted; when
        an earlier forward of it started, that start instead (it may have posted the message)."""
        ...


class PhoneLookup(Protocol):
    def phone_for_lid(self, instance: str, lid: str) -> str | None:
        """The phone number behind `lid` as the instance's provider knows it (None: unknown);
        never raises."""
        ...


class IncomingForwardHandler:
    """`message` effect: queue the message for its downstream (a re-run may queue it twice;
    the forwarder drops the second)."""

    def __init__(self, queue: ForwardQueue) -> None:
        self._queue = queue

    def __call__(self, event: ProviderEvent) -> None:
        data = event.data
        message_id = data.get("id")
        try:
            content = content_from(data)
        except ValueError:
            content = None
        # Every content reaches the agent as text (files are not attached yet: the agent is told
        # what arrived; the file stays in the media bucket or with its provider).
        text = as_text(content) if content is not None else None
        sender, lid, name = (_text(data.get(field)) for field in ("from", "lid", "name"))
        if not (isinstance(text, str) and isinstance(message_id, str) and (sender or lid)):
            logger.info("message event without text not forwarded", extra={"instance": event.instance.key})
            return
        self._queue.send(
            IncomingMessage(
                event_id=f"{event.provider_id}#{event.instance.provider_instance_id}#{event.event_id}",
                instance=event.instance.key,
                owner_tag=event.instance.owner_tag,
                inbox_id=event.instance.inbox_id,
                provider_message_id=message_id,
                sender=sender.lstrip("+") if sender else None,
                sender_lid=lid,
                sender_name=name,
                text=text,
                sent_at=_text(data.get("timestamp")),
            )
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class DownstreamForwarder:
    def __init__(
        self,
        resolver: TargetResolver,
        client: DownstreamClient,
        attempts: ForwardAttempts,
        phones: PhoneLookup | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        outcomes: IncomingOutcomes | None = None,
    ) -> None:
        self._outcomes = outcomes
        self._resolver = resolver
        self._client = client
        self._attempts = attempts
        self._phones = phones
        self._clock = clock

    def forward(self, message: IncomingMessage) -> int | None:
        """Post one message; returns the conversation id, or None when no downstream is configured.

        A sender known only by a LID is first looked up at the instance's provider; unresolved,
        the conversation is kept by the LID (the downstream contact says why it has no number).
        A forward that an earlier one of the same message preceded posts only if that one did not.
        Raises DownstreamError (the queue retries it, then parks it in the DLQ).
        """
        target = self._resolver.target_for(message.owner_tag)
        if target is None:
            logger.warning("no downstream configured; message dropped", extra={"instance": message.instance})
            count_metric("ForwardsDropped", message.instance)
            if self._outcomes is not None:
                self._outcomes.no_downstream(message.event_id)
            return None
        if message.sender is None and message.sender_lid is not None and self._phones is not None:
            phone = self._phones.phone_for_lid(message.instance, message.sender_lid)
            logger.info("sender known by a LID", extra={"instance": message.instance, "resolved": phone is not None})
            count_metric("LidSendersResolved" if phone else "LidSendersUnresolved", message.instance)
            if phone is not None:
                message = message.model_copy(update={"sender": phone})
        if message.inbox_id is not None:
            # The instance's own inbox, in the same downstream account (same URL and token).
            target = target.model_copy(update={"inbox_id": message.inbox_id})
        earlier = self._attempts.begin(message, self._clock())
        if earlier is not None:
            logger.info("forward retried: the helpdesk is searched first", extra={"instance": message.instance})
        try:
            conversation = self._client.post_incoming(target, message, earlier_attempt=earlier)
        except Exception as exc:
            count_metric("ForwardFailures", message.instance)
            if self._outcomes is not None:
                self._outcomes.failed(message.event_id, getattr(exc, "code", None) or type(exc).__name__)
            raise
        logger.info(
            "message forwarded",
            extra={"instance": message.instance, "downstream": target.source, "conversation": conversation},
        )
        count_metric("MessagesForwarded", message.instance)
        if self._outcomes is not None:
            self._outcomes.forwarded(message.event_id)
        return conversation


LOOKUP_CACHE_SECONDS = 3600.0
LOOKUP_CACHE_ENTRIES = 4096


class ProviderPhones:
    """`PhoneLookup` through the instance's own provider, where its kind keeps the map of LIDs to
    phone numbers (`ContactDirectory`); elsewhere, and when the provider cannot answer now, the
    number stays unknown: the message is not held back for it.

    A number found is kept by the container for an hour: a LID-only chat asks the provider once,
    not once per message. A LID not found is asked again with the next message (the provider may
    learn it meanwhile)."""

    def __init__(
        self, instances: InstanceFinder, targets: Targets, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._instances = instances
        self._targets = targets
        self._monotonic = monotonic
        self._known: dict[tuple[str, str], tuple[str, float]] = {}

    def phone_for_lid(self, instance: str, lid: str) -> str | None:
        known = self._known.get((instance, lid))
        if known is not None and self._monotonic() - known[1] < LOOKUP_CACHE_SECONDS:
            return known[0]
        phone = self._ask(instance, lid)
        if phone is not None:
            if len(self._known) >= LOOKUP_CACHE_ENTRIES:
                self._known.clear()
            self._known[(instance, lid)] = (phone, self._monotonic())
        return phone

    def _ask(self, instance: str, lid: str) -> str | None:
        found = self._instances.find_instance(instance)
        if found is None:
            return None
        try:
            client, target = self._targets.target_for(found)
            if not isinstance(client, ContactDirectory):
                return None
            return client.phone_for_lid(target, lid)
        except SwitchboardError as exc:
            logger.warning("LID not resolved", extra={"instance": instance, "error": exc.code})
            return None


class InstanceFinder(Protocol):
    def find_instance(self, key: str) -> Instance | None: ...

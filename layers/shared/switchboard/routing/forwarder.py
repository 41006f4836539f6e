"""Incoming messages: queued by the webhook ingest, posted to the instance's downstream by the forwarder.

The ingest only enqueues (fast, durable before its 2xx); the forwarder (SQS, retries, DLQ)
resolves the downstream at delivery time, so a mapping change applies to the very next message.

Each provider message reaches the helpdesk once. Two copies of one forward running at once are
held apart by the forwarder function (Powertools idempotency keyed by the event id); what that
cannot see is a forward that died after its POST and before its completion was recorded (a
crash, a timeout, an answer lost): the redelivery would post the message again, and Chatwoot
takes a repeated `source_id` as a new message. So every forward records its start first (one
conditional write); a forward that finds an earlier start looks for the message, by its
`source_id`, in the contact's conversations before posting it. A file is posted in the same
request as its message (multipart), so this holds for files too; the file is fetched into the
media bucket before the forward starts (`media.service`: found there again after a crash, never
fetched twice).

Whatever the content, the agent hears of it: a file that cannot be had (the provider no longer
has it, refused by type or size, over the helpdesk's limit) is posted as a placeholder saying
why, with its caption. A failure a later try may cure (the provider answered 5xx or timed out)
is retried by the queue up to `MEDIA_ATTEMPTS` receives; the last one posts the placeholder.

A file is fetched by a deadline: what is left of the invocation (`deadline`, from the Lambda
context) less `reserve_seconds`, the time its post to the helpdesk still needs. A provider too
slow to hand it over by then is `too_slow`, retried like a provider error and, on the last
receive, a placeholder saying so, posted before the invocation ends: a file that outlives every
invocation never leaves its conversation waiting in silence until the dead-letter queue. A
message whose fetch has no time left at all (the invocation's earlier messages used it) is put
back untried.
The forward queue is FIFO, grouped by conversation (`forward_queue`): a retried file holds back
the customer's later messages, so a text sent after a photo is never shown before it.

Once posted, the WhatsApp id is linked to the helpdesk's message id (`MessageLinks`): a later
quote, reaction, edit or deletion of it is threaded to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from switchboard.catalog.events import ProviderEvent
from switchboard.core.clock import Deadline
from switchboard.core.errors import NotFound, SwitchboardError
from switchboard.core.observability import logger
from switchboard.media import limits
from switchboard.media.ports import MediaReader, MediaResolver, MediaUnavailable
from switchboard.providers.base import ContactDirectory
from switchboard.providers.content import (
    Content,
    Edit,
    MediaMessage,
    Reaction,
    Revoke,
    Text,
    content_data,
    content_from,
)
from switchboard.routing.as_text import as_text
from switchboard.routing.domain import (
    DownstreamClient,
    DownstreamPost,
    DownstreamTarget,
    FileToPost,
    IncomingMessage,
    MessageLink,
    MessageLinks,
    PostedIncoming,
)
from switchboard.routing.incoming_post import HELPDESK_MAX_BYTES, downstream_post, file_name_for
from switchboard.usage.service import count_metric

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance
    from switchboard.catalog.ports import Targets
    from switchboard.messages.incoming_log import IncomingOutcomes


# The receive on which a file a later try may still get is given up for a placeholder: one
# visibility timeout (6 minutes) of retries, while the conversation's later messages wait behind it.
MEDIA_ATTEMPTS = 2
# What a forward keeps of its invocation after a file's fetch, besides a last read that stalled
# just before the deadline (the provider's read timeout): the post to the helpdesk (the contact,
# its conversation, the message with its file) at the helpdesk's usual pace.
POST_SECONDS = 10.0


class ForwardQueue(Protocol):
    def send(self, message: IncomingMessage) -> None: ...


class ForwardMedia(MediaResolver, MediaReader, Protocol):
    """A message's file fetched into the media bucket, and read back from it."""


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
            content: Content | None = content_from(data)
        except ValueError:
            content = None
        sender, lid, name = (_text(data.get(field)) for field in ("from", "lid", "name"))
        if not (content is not None and isinstance(message_id, str) and (sender or lid)):
            logger.info("message event without content not forwarded", extra={"instance": event.instance.key})
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
                text=as_text(content),
                sent_at=_text(data.get("timestamp")),
                content=content_data(content),
                reply_to=_text(data.get("replyTo")),
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
        media: ForwardMedia | None = None,
        links: MessageLinks | None = None,
        reserve_seconds: float = POST_SECONDS,
    ) -> None:
        """`reserve_seconds`: what a fetch leaves of the invocation (`POST_SECONDS` and the
        provider's read timeout)."""
        self._reserve = reserve_seconds
        self._outcomes = outcomes
        self._resolver = resolver
        self._client = client
        self._attempts = attempts
        self._phones = phones
        self._clock = clock
        self._media = media
        self._links = links

    def forward(
        self, message: IncomingMessage, *, receive_count: int = 1, deadline: Deadline | None = None
    ) -> int | None:
        """Post one message; returns the conversation id, or None when no downstream is configured.

        A sender known only by a LID is first looked up at the instance's provider; unresolved,
        the conversation is kept by the LID (the downstream contact says why it has no number).
        A forward that an earlier one of the same message preceded posts only if that one did not.
        `receive_count` is how many times the queue has handed this message out (this one
        included): from `MEDIA_ATTEMPTS` on, a file still out of reach becomes a placeholder.
        `deadline`: when the invocation ends (None: no end, outside Lambda).
        Raises DownstreamError (the queue retries it, then parks it in the DLQ), or
        MediaUnavailable for a file a later receive may get (nothing was posted).
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
        post, placeholder = self._post_of(message, receive_count, deadline)
        earlier = self._attempts.begin(message, self._clock())
        if earlier is not None:
            logger.info("forward retried: the helpdesk is searched first", extra={"instance": message.instance})
        try:
            posted = self._client.post_incoming(target, message, post, earlier_attempt=earlier)
            self._link(message, posted)
        except Exception as exc:
            count_metric("ForwardFailures", message.instance)
            if self._outcomes is not None:
                self._outcomes.failed(message.event_id, getattr(exc, "code", None) or type(exc).__name__)
            raise
        logger.info(
            "message forwarded",
            extra={
                "instance": message.instance,
                "downstream": target.source,
                "conversation": posted.conversation_id,
                "files": len(post.files),
                "threaded": posted.threaded,
                "note": posted.note,
            },
        )
        self._report(message, placeholder)
        return posted.conversation_id

    def _link(self, message: IncomingMessage, posted: PostedIncoming) -> None:
        """The WhatsApp id and the helpdesk's message id, linked (a failure fails the forward: its
        retry finds the message posted and links it then)."""
        if self._links is None:
            return
        self._links.link(
            MessageLink(
                instance=message.instance,
                provider_message_id=message.provider_message_id,
                conversation_id=posted.conversation_id,
                downstream_message_id=posted.message_id,
                direction="in",
            )
        )

    def _report(self, message: IncomingMessage, placeholder: str | None) -> None:
        count_metric("MessagesForwarded", message.instance)
        if placeholder is not None:
            count_metric("MediaPlaceholders", message.instance)
        if self._outcomes is None:
            return
        if placeholder is None:
            self._outcomes.forwarded(message.event_id)
        else:
            self._outcomes.forwarded_with_placeholder(message.event_id, placeholder)

    def _post_of(
        self, message: IncomingMessage, receive_count: int, deadline: Deadline | None
    ) -> tuple[DownstreamPost, str | None]:
        """The message as the helpdesk takes it, and why its file is a placeholder (None: it is not)."""
        content = content_from({"content": message.content}) if message.content else Text(body=message.text)
        refers = content.target_id if isinstance(content, Reaction | Edit | Revoke) else message.reply_to
        refers_to = self._links.by_provider_id(message.instance, refers) if refers and self._links else None
        if not isinstance(content, MediaMessage):
            return downstream_post(content, refers_to=refers_to), None
        file, reason = self._file(message, content, receive_count, deadline)
        return downstream_post(content, file=file, unavailable=reason, refers_to=refers_to), reason

    def _file(
        self, message: IncomingMessage, content: MediaMessage, receive_count: int, deadline: Deadline | None
    ) -> tuple[FileToPost | None, str | None]:
        """The message's file as bytes to post, or why it cannot be (a placeholder's reason).

        Raises MediaUnavailable when a later receive may still get it."""
        media = content.media
        if media.unavailable:
            return None, media.unavailable  # refused at the ingest, and counted there
        if media.stored is None and media.size is not None:
            # Not fetched: over WhatsApp's limit for its kind (the claim is refused as the bytes
            # would be), or over what the helpdesk takes.
            if media.size > limits.max_bytes(media.kind, animated=media.animated):
                return None, "too_large"
            if media.size > HELPDESK_MAX_BYTES:
                return None, "helpdesk_limit"
        if self._media is None:
            return None, "no_source"
        fetch_by = deadline.sooner(self._reserve) if deadline is not None else None
        if fetch_by is not None and fetch_by.passed() and media.stored is None:
            # Not this file's fault: the invocation's earlier messages used its time.
            raise MediaUnavailable("too_slow", "no time left in this invocation to fetch it", retryable=True)
        final = receive_count >= MEDIA_ATTEMPTS
        try:
            ref = self._media.resolve(
                message.owner_tag, message.instance, message.provider_message_id, media, deadline=fetch_by
            )
            if ref.size > HELPDESK_MAX_BYTES:
                return None, "helpdesk_limit"
            data = self._media.read(ref)
        except MediaUnavailable as refused:
            if refused.retryable and not final:
                raise
            return None, refused.reason
        except NotFound:
            return None, "no_source"  # the instance left the catalog: nothing can fetch it now
        except Exception:
            if not final:
                raise
            # The bucket or the provider failed on every try: the agent is still told.
            logger.exception("media not had on the last try", extra={"instance": message.instance})
            return None, "provider_error"
        return FileToPost(file_name=file_name_for(media, ref), mime_type=ref.mime_type, data=data), None


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

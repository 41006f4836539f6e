"""Replies from the downstream, sent through a named instance; an outbox while it is disconnected.

Every reply goes through the instance's outbox (one code path keeps the order): it is stored,
then, if the instance is connected, the outbox is drained at once. `drain` sends entries in order
and stops at the first one the provider cannot take now; a reply leaves in parts, in order, each
recorded once accepted: its text, cut when longer than one message of the instance's kind
(`text_limit`, `routing.parts`), and its attachments, the first carrying the text as its caption
when it can (`reply_parts`). It runs again when a `connection` event says connected and on the
reconciliation schedule. An entry older than the validity ends FAILED with a reason, and a
private note tells the downstream conversation.

Attachments are fetched from the helpdesk while its webhook is handled (its file URLs expire in
minutes) into the media bucket (`AttachmentStore`); the entry keeps their references and until
when the bucket keeps the files (`media_valid_until`): a part whose file is gone when its turn
comes ends the reply FAILED, told to the agent. An attachment that cannot be fetched or has no
WhatsApp form is told to the agent at once, and the rest of the reply still leaves.

A reply quoting a message (`in_reply_to`) quotes it on WhatsApp: its WhatsApp id comes from the
message map (`MessageLinks`), or, for a customer's message, from the id the helpdesk kept as its
`source_id`. Every part sent is linked to the reply's downstream message, so a customer quoting
it is threaded and its receipts find it (`ReplyStatuses`). An agent's deletion of a reply
revokes what left of it where the kind can (`revoke`), and says so where it cannot.

A send whose outcome is unknown (no answer in time, or a drain that died between starting a send
and recording it: the part `in_flight`) is sent again only through a kind that is `retry_safe`
(the resend carries the same id, so WhatsApp shows one message). Through any other kind a resend
would reach the customer as a second copy, so the reply ends FAILED `ambiguous_outcome` and the
note tells the agent it may or may not have arrived: the agent, who can see the conversation,
decides whether to write again.

The outgoing webhook is authenticated by a per-instance secret (256 random bits, shown once,
stored as its SHA-256), presented in the `X-Switchboard-Secret` header and compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as random_secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import Field

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import Instance, instance_key, secret_hint
from switchboard.catalog.ports import Instances
from switchboard.core.errors import (
    ProviderError,
    ProviderRejected,
    ProviderTimeout,
    SwitchboardError,
    Unauthenticated,
    UnsupportedByProvider,
)
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.messages.window import OUTSIDE_SERVICE_WINDOW
from switchboard.providers import voice
from switchboard.providers.base import MessageRevoker, OutgoingFile, Quote, SentMessage
from switchboard.providers.content import Content, MediaMessage, Text
from switchboard.providers.kinds import spec_for
from switchboard.routing.domain import DownstreamClient, DownstreamTarget
from switchboard.routing.parts import split_text, utf16_length
from switchboard.routing.records import FinalStatus, OutboxEntry, Outcome
from switchboard.usage.service import UsageRecorder, count_metric

if TYPE_CHECKING:
    from switchboard.catalog.domain import Number
    from switchboard.catalog.ports import Targets
    from switchboard.providers.base import ProviderClient, ProviderTarget, UploadedMedia
    from switchboard.providers.content import MediaRef
    from switchboard.routing.domain import MessageLinks
    from switchboard.routing.reply_window import ReplyWindow

LEASE_SECONDS = 60
DRAIN_BATCH = 50
DEFAULT_VALIDITY = timedelta(hours=4)
REQUEST_BUDGET_SECONDS = 3.0  # drains run inside HTTP requests (webhooks, replies): bounded
AMBIGUOUS_OUTCOME = "ambiguous_outcome"  # the same reason code as a send through the API
# How long an attachment's file is kept for a reply: the media bucket's lifecycle removes objects
# 15 days after they were written (template.yaml, MediaBucket), less a day of margin.
MEDIA_VALIDITY = timedelta(days=14)
# WhatsApp's (and the Cloud API's) limit on a media caption, in UTF-16 code units.
CAPTION_LIMIT = 1024
CAPTIONED_KINDS = frozenset({"image", "video", "document"})
# What became of one claimed entry: all of it sent, failed (and told), paused (the provider cannot
# take it now: the drain stops, keeping the order), or gone (finished or taken by another drain).
Step = Literal["sent", "failed", "paused", "gone"]


def part_id(message_id: str, index: int, parts: int) -> str:
    """A part's stable id: the reply's own for a reply of one part, else the reply's and its position."""
    return message_id if parts == 1 else f"{message_id}-p{index + 1}"


class OutboxStore(Protocol):
    def enqueue(self, entry: OutboxEntry) -> bool: ...
    def waiting(self, instance: str, limit: int) -> list[OutboxEntry]: ...
    def instances_waiting(self) -> list[str]: ...
    def claim(self, entry: OutboxEntry, now: datetime, lease_seconds: int) -> OutboxEntry | None:
        """The entry as stored once taken for sending (PENDING, or its sender's lease ran out);
        None when it is finished or another drain holds it."""
        ...

    def begin_part(self, entry: OutboxEntry) -> bool:
        """Record the part `entry.parts_sent` as in flight, before it is sent; False when the
        entry is no longer being sent from that part."""
        ...

    def advance(
        self,
        entry: OutboxEntry,
        parts_sent: int,
        part_chars: int,
        now: datetime,
        lease_seconds: int,
        *,
        provider_message_id: str | None = None,
    ) -> bool:
        """Record the first `parts_sent` parts as sent, the last as `provider_message_id`."""
        ...

    def release(self, entry: OutboxEntry) -> None: ...
    def finish(
        self, entry: OutboxEntry, status: FinalStatus, reason: str | None, provider_message_id: str | None
    ) -> bool:
        """Remove the entry and record its outcome (with every part's id: `entry.sent_ids` and
        `provider_message_id`); False when it was finished already."""
        ...

    def outcome(self, instance: str, message_id: str) -> Outcome | None: ...
    def mark_revoked(self, instance: str, message_id: str, at: datetime) -> bool:
        """Record the reply's revocation once; False when it was recorded already."""
        ...

    def set_webhook_digest(self, tenant: str, instance: str, digest: str, hint: str, at: datetime) -> None: ...
    def webhook_digest(self, tenant: str, instance: str) -> str | None: ...


class Downstreams(Protocol):
    def target_for(self, owner_tag: str | None) -> DownstreamTarget | None: ...


class Attachment(Model):
    """One file or location an agent attached to a reply (Chatwoot's `attachments[]`)."""

    file_type: str  # image, audio, video, file, location, ...
    data_url: str | None = Field(default=None, repr=False)  # the helpdesk's URL of the file
    file_name: str | None = None
    latitude: float | None = None
    longitude: float | None = None
    title: str | None = None  # a location's name


class AttachmentUnavailable(SwitchboardError):
    """An attachment that cannot leave: its message says why, in words for the agent."""


class AttachmentStore(Protocol):
    def content_of(self, tenant: str, downstream: DownstreamTarget, attachment: Attachment) -> Content:
        """The content that sends `attachment`: a location, or a media message whose file was
        fetched from `downstream` into the media bucket. Raises `AttachmentUnavailable`."""
        ...


class MediaFiles(Protocol):
    """The media bucket, read when a part's turn comes (`media.uploads.MediaUploads.read`)."""

    def read(self, ref: MediaRef) -> bytes: ...


class Numbers(Protocol):
    def get_number(self, tenant: str, number_id: str) -> Number: ...


@runtime_checkable
class ReplyStatusClient(Protocol):
    """The downstream's own status of a message it sent through us (`ChatwootClient`)."""

    def update_status(
        self,
        target: DownstreamTarget,
        conversation_id: int,
        message_id: int,
        status: str,
        external_error: str | None = None,
    ) -> None: ...


class Reply(Model):
    """One outgoing message from the downstream: its text, its attachments, and the message it
    quotes (`in_reply_to`: the downstream's id; `in_reply_to_external_id`: that message's
    `source_id`, the WhatsApp id a customer's message was posted with)."""

    message_id: str
    phone: str
    text: str
    conversation_id: int | None = None
    attachments: list[Attachment] = Field(default_factory=list)
    in_reply_to: int | None = None
    in_reply_to_external_id: str | None = None


class Revocation(Model):
    """An agent deleted one of their replies (Chatwoot's `message_updated` with `deleted`)."""

    message_id: str
    phone: str
    conversation_id: int | None = None


class Revoked(Model):
    status: Literal["REVOKED", "FAILED", "IGNORED"]
    reason: str | None = None


def reply_parts(text: str, items: list[Content], limit: int) -> list[Content]:
    """What a reply leaves as, in order: its text cut to `limit` (`split_text`) and then its
    attachments; the first attachment carries the text as its caption instead when it takes one
    (an image, a video or a document) and the text fits a caption. Deterministic: a later drain
    finds the same parts."""
    texts: list[Content] = [Text(body=part) for part in split_text(text, limit)]
    if not items:
        return texts
    first = items[0]
    caption = text.strip()
    if not caption:
        return list(items)
    if (
        isinstance(first, MediaMessage)
        and first.media.kind in CAPTIONED_KINDS
        and utf16_length(caption) <= CAPTION_LIMIT
    ):
        return [MediaMessage(media=first.media.model_copy(update={"caption": caption})), *items[1:]]
    return [*texts, *items]


class DrainResult(Model):
    sent: int = 0
    failed: int = 0
    waiting: bool = False  # entries are left (instance disconnected or provider unavailable)
    left: int = 0  # replies of the batch read still waiting (a batch at most: the outbox may hold more)


class WebhookSecret(Model):
    secret: str
    hint: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class OutboxService:
    def __init__(
        self,
        store: OutboxStore,
        instances: Instances,
        targets: Targets,
        *,
        usage: UsageRecorder,
        downstreams: Downstreams,
        downstream_client: DownstreamClient,
        audit: Audit,
        validity: timedelta = DEFAULT_VALIDITY,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        attachments: AttachmentStore | None = None,
        files: MediaFiles | None = None,
        uploaded: UploadedMedia | None = None,
        links: MessageLinks | None = None,
        numbers: Numbers | None = None,
        statuses: ReplyStatusClient | None = None,
        window: ReplyWindow | None = None,
    ) -> None:
        """`attachments`, `files`: the media bucket (None: a reply with attachments has them
        refused, told to the agent); `uploaded`: the media ids a cloud API gave each number;
        `links`: the message map (quotes, and every part sent linked to its downstream message);
        `numbers`: the instance's number (the author of a quoted reply of ours); `statuses`: the
        downstream's message status (a reply that failed is marked so there too); `window`: a
        Cloud API instance's reply outside the contact's customer-service window
        (`routing/reply_window.py`; None: every reply is sent as it is)."""
        self._window = window
        self._attachments = attachments
        self._files = files
        self._uploaded = uploaded
        self._links = links
        self._numbers = numbers
        self._statuses = statuses
        self._store = store
        self._instances = instances
        self._targets = targets
        self._usage = usage
        self._downstreams = downstreams
        self._downstream_client = downstream_client
        self._audit = audit
        self._validity = validity
        self._clock = clock
        self._monotonic = monotonic

    # --- the outgoing webhook secret -------------------------------------------------------

    def new_webhook_secret(self, principal: Principal, name: str) -> WebhookSecret:
        """Generate (or rotate) the instance's outgoing webhook secret; the plaintext is returned once."""
        instance = self._instances.get_instance(principal.tenant, name)
        secret = f"sbwh_{random_secrets.token_urlsafe(32)}"
        hint = secret_hint(secret)
        self._store.set_webhook_digest(instance.tenant, instance.key, _digest(secret), hint, self._clock())
        self._audit.record(
            principal, "instance.webhook_secret_rotated", name, after={"tenant": instance.tenant, "hint": hint}
        )
        return WebhookSecret(secret=secret, hint=hint)

    def authenticate(self, tenant: str, name: str, presented: str | None) -> Instance:
        """The instance if `presented` is its secret; one Unauthenticated for every failure."""
        instance = self._instances.find_instance(instance_key(tenant, name))
        expected = self._store.webhook_digest(instance.tenant, instance.key) if instance else None
        candidate = _digest(presented or "")
        if instance is None or expected is None or not presented or not hmac.compare_digest(candidate, expected):
            raise Unauthenticated("invalid instance webhook secret", code="invalid_webhook_secret")
        return instance

    # --- replies ---------------------------------------------------------------------------

    def submit(self, instance: Instance, reply: Reply) -> Outcome:
        """Store the reply in the instance's outbox (once per message id), then drain if connected.

        Its attachments are fetched first (once: a redelivered webhook finds the reply stored);
        each one that cannot leave is told to the agent, and the rest of the reply goes on."""
        known = self._store.outcome(instance.key, reply.message_id) if reply.attachments else None
        if known is None:
            self._enqueue(instance, reply)
        if instance.connected:
            self.drain(instance.key, budget_seconds=REQUEST_BUDGET_SECONDS)
        return self._store.outcome(instance.key, reply.message_id) or Outcome(status="PENDING")

    def _enqueue(self, instance: Instance, reply: Reply) -> None:
        now = self._clock()
        items = self._items(instance, reply)
        media = any(isinstance(item, MediaMessage) for item in items)
        entry = OutboxEntry(
            instance=instance.key,
            message_id=reply.message_id,
            phone=reply.phone,
            text=reply.text,
            conversation_id=reply.conversation_id,
            owner_tag=instance.owner_tag,
            enqueued_at=now,
            items=items,
            quote=self._quote(instance, reply),
            media_valid_until=now + MEDIA_VALIDITY if media else None,
        )
        if not self._store.enqueue(entry):
            return
        logger.info("reply queued", extra={"instance": instance.key, "message_id": reply.message_id})
        if reply.attachments and not items and not reply.text.strip():
            # Each attachment was told already; the reply itself ends here.
            self._fail(instance, entry, "none of its attachments could be sent", told=True)

    def _items(self, instance: Instance, reply: Reply) -> list[Content]:
        """The reply's attachments as the contents that send them, in order; each one that cannot
        leave is told to the agent."""
        items: list[Content] = []
        downstream = self._downstream(instance) if reply.attachments else None
        for index, attachment in enumerate(reply.attachments):
            try:
                items.append(self._content_of(instance, downstream, attachment))
            except AttachmentUnavailable as exc:
                name = f" ({attachment.file_name})" if attachment.file_name else ""
                count = len(reply.attachments)
                which = f"Attachment {index + 1} of {count}" if count > 1 else "The attachment"
                count_metric("AttachmentsRefused", instance.key)
                logger.info(
                    "attachment not sent",
                    extra={"instance": instance.key, "message_id": reply.message_id, "file_type": attachment.file_type},
                )
                self._note(
                    instance,
                    reply.conversation_id,
                    f"{which}{name} of message {reply.message_id} was not sent through {instance.name}: {exc.message}.",
                )
        return items

    def _content_of(self, instance: Instance, downstream: DownstreamTarget | None, attachment: Attachment) -> Content:
        if self._attachments is None or downstream is None:
            raise AttachmentUnavailable("this deployment does not fetch attachments")
        return self._attachments.content_of(instance.tenant, downstream, attachment)

    def _quote(self, instance: Instance, reply: Reply) -> Quote | None:
        """The message the reply quotes, as the provider knows it; None (told to the agent) when
        its WhatsApp id is unknown: the reply then leaves unquoted."""
        if reply.in_reply_to is None and not reply.in_reply_to_external_id:
            return None
        link = None
        if self._links is not None and reply.in_reply_to is not None:
            try:
                link = self._links.by_downstream_id(instance.key, reply.in_reply_to)
            except Exception:
                logger.exception("message map unreadable", extra={"instance": instance.key})
        if link is not None and link.direction == "out":
            return Quote(id=link.provider_message_id, from_me=True, author=self._own_number(instance))
        if link is not None:
            return Quote(id=link.provider_message_id, from_me=False, author=reply.phone)
        if reply.in_reply_to_external_id:
            # A customer's message: the helpdesk keeps the WhatsApp id it was posted with.
            return Quote(id=reply.in_reply_to_external_id, from_me=False, author=reply.phone)
        self._note(
            instance,
            reply.conversation_id,
            f"Message {reply.message_id} leaves without quoting message {reply.in_reply_to}: "
            "its WhatsApp id is not known here.",
        )
        return None

    def _own_number(self, instance: Instance) -> str | None:
        if self._numbers is None:
            return None
        try:
            return self._numbers.get_number(instance.tenant, instance.number_id).number
        except Exception:
            logger.exception("instance's number unreadable", extra={"instance": instance.key})
            return None

    def drain(self, key: str, budget_seconds: float | None = None) -> DrainResult:
        """Send the instance's waiting replies in order; expire the too old. Safe to run concurrently.

        With `budget_seconds` (a webhook that must answer in time) no new send starts once it is
        spent; what is left waits for the next drain (the schedule at the latest).
        """
        instance = self._instances.find_instance(key)
        result = DrainResult()
        if instance is None:
            return result
        deadline = None if budget_seconds is None else self._monotonic() + budget_seconds
        entries = self._store.waiting(key, DRAIN_BATCH)
        sender: tuple[ProviderClient, ProviderTarget] | None = None
        for entry in entries:
            if deadline is not None and self._monotonic() >= deadline:
                result.waiting = True
                break
            now = self._clock()
            if now - entry.enqueued_at > self._validity:
                left = f" ({entry.parts_sent} of its parts had left)" if entry.parts_sent else ""
                result.failed += self._fail(instance, entry, f"expired: not sent within its validity{left}")
                continue
            if not instance.connected:
                result.waiting = True
                break
            claimed = self._store.claim(entry, now, LEASE_SECONDS)
            if claimed is None:
                result.waiting = True  # another drain holds it; it keeps the order
                break
            sender = sender or self._targets.target_for(instance)
            step = self._send(instance, claimed, *sender, deadline)
            if step == "sent":
                result.sent += 1
            elif step == "failed":
                result.failed += 1
            elif step == "paused":
                result.waiting = True
                break
        if len(entries) == DRAIN_BATCH and not result.waiting:
            result.waiting = True
        result.left = max(0, len(entries) - result.sent - result.failed)
        if result.sent or result.failed:
            logger.info("outbox drained", extra={"instance": key, **result.model_dump()})
        return result

    def _send(
        self,
        instance: Instance,
        entry: OutboxEntry,
        client: ProviderClient,
        target: ProviderTarget,
        deadline: float | None,
    ) -> Step:
        """A claimed entry to a contact outside the customer-service window of a Cloud API
        instance goes the window's way (`_outside_window`); any other is sent (`_send_parts`)."""
        if (
            entry.parts_sent == 0
            and self._window is not None
            and self._window.closed(instance, entry.phone, target.kind)
        ):
            return self._outside_window(instance, entry, client, target)
        return self._send_parts(instance, entry, client, target, deadline)

    def _send_parts(
        self,
        instance: Instance,
        entry: OutboxEntry,
        client: ProviderClient,
        target: ProviderTarget,
        deadline: float | None,
    ) -> Step:
        """Send the parts of a claimed entry still to go, in order: a part leaves only once the
        one before it was accepted, and each accepted part is recorded before the next is sent,
        so no drain sends a part twice. Each part has its own stable id (the reply's, plus its
        position), the idempotency key of its send. Where a resend could make a copy, the part
        is first recorded in flight, and a send whose outcome is unknown is never repeated."""
        spec = spec_for(target.kind)
        limit = entry.part_chars or spec.text_limit
        parts = reply_parts(entry.text, entry.items, limit)
        if not parts:  # blank: no WhatsApp server takes an empty text
            self._store.release(entry)
            return "failed" if self._fail(instance, entry, "nothing to send: the reply is blank") else "gone"
        key = instance.key
        first = entry.parts_sent
        if entry.in_flight is not None and not spec.retry_safe:
            # The drain that sent this part died before recording what became of it.
            return self._fail_in_doubt(instance, entry, target.kind, entry.in_flight, len(parts))
        for index in range(first, len(parts)):
            if index > first and deadline is not None and self._monotonic() >= deadline:
                self._store.release(entry)  # the parts sent so far stay recorded
                return "paused"
            if not spec.retry_safe and not self._store.begin_part(entry):
                return "gone"  # no longer ours: the drain holding it goes on from what was recorded
            part = part_id(entry.message_id, index, len(parts))
            try:
                sent = self._send_part(
                    client=client,
                    target=target,
                    entry=entry,
                    part=parts[index],
                    index=index,
                    idempotency_key=f"outbox-{key}-{part}",
                )
            except (ProviderRejected, UnsupportedByProvider, AttachmentUnavailable) as exc:
                return self._refused(instance, entry, exc, part=(index, len(parts)), sender=(client, target))
            except ProviderTimeout:
                if not spec.retry_safe:
                    return self._fail_in_doubt(instance, entry, target.kind, index, len(parts))
                self._store.release(entry)  # resent with the same id: WhatsApp shows one message
                count_metric("SendFailures", key)
                logger.info("outbox paused", extra={"instance": key, "error": "provider_timeout"})
                return "paused"
            except ProviderError as exc:
                self._store.release(entry)
                count_metric("SendFailures", key)
                logger.info("outbox paused", extra={"instance": key, "error": exc.code})
                return "paused"
            now = self._clock()
            self._usage.record_outgoing(instance, now, f"outbox#{key}#{part}")
            self._link(instance, entry, sent.provider_message_id)
            if index + 1 == len(parts):
                return "sent" if self._store.finish(entry, "SENT", None, sent.provider_message_id) else "gone"
            if not self._store.advance(
                entry, index + 1, limit, now, LEASE_SECONDS, provider_message_id=sent.provider_message_id
            ):
                return "gone"  # no longer ours: the drain holding it goes on from what was recorded
            entry = entry.model_copy(
                update={
                    "parts_sent": index + 1,
                    "part_chars": limit,
                    "sent_ids": [*entry.sent_ids, sent.provider_message_id],
                }
            )
        self._store.release(entry)
        return "gone"

    def _refused(
        self,
        instance: Instance,
        entry: OutboxEntry,
        error: ProviderRejected | UnsupportedByProvider | AttachmentUnavailable,
        *,
        part: tuple[int, int],
        sender: tuple[ProviderClient, ProviderTarget],
    ) -> Step:
        """Part `part[0]` of `part[1]` refused: the reply fails and the agent is told; a first
        part Meta refused for the customer-service window (131047) goes the window's way."""
        index, parts = part
        if index == 0 and self._window is not None and error.code == OUTSIDE_SERVICE_WINDOW:
            return self._outside_window(instance, entry, *sender)
        self._store.release(entry)
        reason = _refusal(error, sender[1].kind)
        if index:
            reason = f"part {index + 1} of {parts} {reason}; the {index} before it were sent"
        return "failed" if self._fail(instance, entry, reason) else "gone"

    def _outside_window(
        self, instance: Instance, entry: OutboxEntry, client: ProviderClient, target: ProviderTarget
    ) -> Step:
        """Outside the contact's window: the instance's re-engagement template instead, or
        nothing; the agent's note says which (`ReplyWindow.reengage`)."""
        assert self._window is not None
        reason, sent_id = self._window.reengage(instance, entry, client, target)
        if not self._store.finish(entry, "SENT" if sent_id else "FAILED", reason, sent_id):
            return "gone"
        logger.info("reply outside the service window", extra={"instance": instance.key, "reason": reason})
        return "sent" if sent_id else "failed"

    def _send_part(
        self,
        *,
        client: ProviderClient,
        target: ProviderTarget,
        entry: OutboxEntry,
        part: Content,
        index: int,
        idempotency_key: str,
    ) -> SentMessage:
        """One part: a text as a text, the rest as what it is; the first part carries the quote."""
        quoted = entry.quote if index == 0 else None
        if isinstance(part, Text) and quoted is None:
            return client.send_text(target, entry.phone, part.body, idempotency_key)
        file = None
        if isinstance(part, MediaMessage):
            file = self._file(entry, part)
            sent_as = voice.as_sent(part, file.mime_type, target.kind)
            if sent_as is not part:
                logger.info("voice note sent as audio", extra={"instance": entry.instance, "mime_type": file.mime_type})
            part = sent_as
        return client.send_content(
            target, entry.phone, part, idempotency_key, quoted=quoted, file=file, uploaded=self._uploaded
        )

    def _file(self, entry: OutboxEntry, part: MediaMessage) -> OutgoingFile:
        """The part's file from the media bucket; `AttachmentUnavailable` once the bucket's
        retention removed it (or would have: past `media_valid_until`)."""
        ref = part.media.stored
        if ref is None or self._files is None:
            raise AttachmentUnavailable("its attachment's file is not in the media bucket")
        if entry.media_valid_until is not None and self._clock() > entry.media_valid_until:
            raise AttachmentUnavailable("its attachment's file expired before the instance could send it")
        try:
            data = self._files.read(ref)
        except SwitchboardError as exc:
            raise AttachmentUnavailable(f"its attachment's file could not be read ({exc.code})") from exc
        return OutgoingFile(data=data, mime_type=ref.mime_type, sha256=ref.sha256, file_name=part.media.file_name)

    def _link(self, instance: Instance, entry: OutboxEntry, provider_message_id: str) -> None:
        """The part in the message map, linked to the reply's downstream message (best effort: a
        quote of it is then posted unthreaded, and its receipts are not shown)."""
        if self._links is None or entry.conversation_id is None or not entry.message_id.isdigit():
            return
        from switchboard.routing.domain import MessageLink  # noqa: PLC0415 - built only where a map is given

        try:
            self._links.link(
                MessageLink(
                    instance=instance.key,
                    provider_message_id=provider_message_id,
                    conversation_id=entry.conversation_id,
                    downstream_message_id=int(entry.message_id),
                    direction="out",
                )
            )
        except Exception:
            logger.exception("reply not linked", extra={"instance": instance.key, "message_id": entry.message_id})

    def drain_all(self) -> dict[str, DrainResult]:
        """The scheduled pass: every instance with waiting replies (sends the connected, expires the old)."""
        return {key: self.drain(key) for key in self._store.instances_waiting()}

    def _fail_in_doubt(self, instance: Instance, entry: OutboxEntry, kind: str, index: int, parts: int) -> Step:
        what = "it" if parts == 1 else f"part {index + 1} of {parts}"
        reason = (
            f"{AMBIGUOUS_OUTCOME}: the provider's answer was lost, so {what} may or may not have reached"
            f" the customer; not sent again, as a resend through {kind} would arrive as a second copy"
        )
        if index:
            reason += f" (the {index} parts before it were sent)"
        return "failed" if self._fail(instance, entry, reason, in_doubt=True) else "gone"

    def _fail(
        self, instance: Instance, entry: OutboxEntry, reason: str, *, in_doubt: bool = False, told: bool = False
    ) -> int:
        """End the entry FAILED; the agent is told (unless `told` already) and the downstream's
        message is marked failed with the reason."""
        if not self._store.finish(entry, "FAILED", reason, None):
            return 0
        count_metric("SendFailures", instance.key)
        logger.info("reply failed", extra={"instance": instance.key, "message_id": entry.message_id, "reason": reason})
        if not told:
            self._report(instance, entry, reason, in_doubt=in_doubt)
        self._mark_failed(instance, entry, reason)
        return 1

    def _report(self, instance: Instance, entry: OutboxEntry, reason: str, *, in_doubt: bool) -> None:
        outcome = "may not have been delivered" if in_doubt else "was not delivered"
        self._note(
            instance, entry.conversation_id, f"Message {entry.message_id} {outcome} through {instance.name}: {reason}."
        )

    def _downstream(self, instance: Instance) -> DownstreamTarget | None:
        try:
            return self._downstreams.target_for(instance.owner_tag)
        except Exception as exc:
            logger.warning("downstream unresolved", extra={"instance": instance.key, "error": type(exc).__name__})
            return None

    def _note(self, instance: Instance, conversation_id: int | None, text: str) -> None:
        """A private note in the downstream conversation; a failure to post it is logged, never raised."""
        if conversation_id is None:
            return
        try:
            target = self._downstreams.target_for(instance.owner_tag)
            if target is None:
                return
            self._downstream_client.post_note(target, conversation_id, text)
        except Exception as exc:
            logger.warning(
                "failure not reported to the downstream",
                extra={"instance": instance.key, "conversation": conversation_id, "error": type(exc).__name__},
            )

    def _mark_failed(self, instance: Instance, entry: OutboxEntry, reason: str) -> None:
        """The downstream's message marked failed, its reason shown beside it (best effort)."""
        if self._statuses is None or entry.conversation_id is None or not entry.message_id.isdigit():
            return
        try:
            target = self._downstreams.target_for(instance.owner_tag)
            if target is not None:
                self._statuses.update_status(
                    target, entry.conversation_id, int(entry.message_id), "failed", external_error=reason
                )
        except Exception as exc:
            logger.warning(
                "failure not marked in the downstream",
                extra={"instance": instance.key, "message_id": entry.message_id, "error": type(exc).__name__},
            )

    # --- deletions -------------------------------------------------------------------------

    def revoke(self, instance: Instance, revocation: Revocation) -> Revoked:
        """An agent deleted a reply: what left of it is deleted for everyone where the instance's
        kind can (once: a redelivered deletion revokes nothing twice), what has not left yet
        never leaves; where it cannot, the agent is told the customer still sees it."""
        key, message_id = instance.key, revocation.message_id
        outcome = self._store.outcome(key, message_id)
        if outcome is None:
            return Revoked(status="IGNORED", reason="not a reply sent through this instance")
        if outcome.status in ("PENDING", "SENDING"):
            self._withdraw(instance, message_id)
            outcome = self._store.outcome(key, message_id) or outcome
        sent = outcome.provider_message_ids or ([outcome.provider_message_id] if outcome.provider_message_id else [])
        if not sent:
            return Revoked(status="REVOKED", reason="it had not left")
        if not self._store.mark_revoked(key, message_id, self._clock()):
            return Revoked(status="REVOKED")
        client, target = self._targets.target_for(instance)
        if not isinstance(client, MessageRevoker):
            reason = f"{target.kind} cannot delete a message it sent"
            self._note(
                instance,
                revocation.conversation_id,
                f"Message {message_id} was deleted here but stays on the customer's WhatsApp: {reason}.",
            )
            return Revoked(status="FAILED", reason=reason)
        failed = 0
        for provider_message_id in sent:
            try:
                client.revoke(target, revocation.phone, provider_message_id)
            except ProviderError as exc:
                failed += 1
                logger.info("revoke failed", extra={"instance": key, "message_id": message_id, "error": exc.code})
        if failed:
            what = "it" if len(sent) == 1 else f"{failed} of its {len(sent)} parts"
            reason = f"{instance.name} could not delete {what} for everyone"
            self._note(
                instance,
                revocation.conversation_id,
                f"Message {message_id} was deleted here but the customer may still see it: {reason}.",
            )
            return Revoked(status="FAILED", reason=reason)
        count_metric("RepliesRevoked", key)
        return Revoked(status="REVOKED")

    def _withdraw(self, instance: Instance, message_id: str) -> None:
        """A deleted reply still in the outbox leaves no further: it ends FAILED, untold (the agent
        deleted it)."""
        for entry in self._store.waiting(instance.key, DRAIN_BATCH):
            if entry.message_id == message_id:
                self._store.finish(entry, "FAILED", "deleted by the agent before it was sent", None)
                return


def _refusal(exc: SwitchboardError, kind: str) -> str:
    """Why a part was refused, in words for the agent."""
    if isinstance(exc, ProviderRejected):
        return f"refused by the provider ({exc.code})"
    if isinstance(exc, UnsupportedByProvider):
        return f"not sent: {kind} cannot send it ({exc.message})"
    return f"not sent: {exc.message}"

"""Send API use cases: accept a message (store, then queue, then 202) and read it back.

Idempotency-Key: Powertools idempotency keyed by (tenant, API key, Idempotency-Key), with the
body hash as payload validation, kept 24 h: same key and body -> the same answer; other body
-> `IdempotencyKeyReused` (422); still in flight -> `IdempotencyKeyInFlight` (409). Its
exceptions become our domain errors here and nowhere else.

Durability: the message is stored before it is queued. With an Idempotency-Key its id is
derived from (API key, Idempotency-Key), so when queuing fails the client's retry (5xx
`queue_unavailable`) finds the stored message and queues it again; a redelivered job is harmless
(the worker sends only QUEUED messages). Without a key the stored message is marked FAILED
`not_queued` and the client gets the 5xx: nothing stays silently stuck.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer

from switchboard.catalog.domain import Number
from switchboard.core.clock import new_id, utcnow
from switchboard.core.errors import (
    AlreadyExists,
    IdempotencyKeyInFlight,
    IdempotencyKeyReused,
    InvalidInput,
    QueueUnavailable,
    UnsupportedByProvider,
)
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.core.ports import JobQueue
from switchboard.messages.domain import (
    LogFilter,
    LogPage,
    Message,
    MessageStatus,
    SendJob,
    TraceEvent,
    body_hash,
    content_signature,
    keyed_message_id,
)
from switchboard.messages.ports import DailyQuota, MessageLog, Messages, StatusNotifier, TemplateChecks
from switchboard.messages.window import ServiceWindow, window_of
from switchboard.providers.content import (
    Content,
    Interactive,
    Media,
    MediaKind,
    MediaMessage,
    MediaRef,
    Template,
    Text,
    header_file,
    kind_of,
    with_header_file,
)

IDEMPOTENCY_SECONDS = 24 * 3600


class Submission(Model):
    """What the idempotency record is keyed and validated on (no text: only its hash)."""

    tenant: str
    api_key_id: str
    idempotency_key: str | None
    to: str
    body_hash: str  # of the text and the validity: another `validFor` is another body


class MediaSource(Model):
    """Where a media message's file is, as the client said: an upload's id, or a URL."""

    media_id: str | None = None
    url: str | None = None


class MediaStore(Protocol):
    """The media bucket, for the send API: an uploaded file checked on first use, a URL fetched once."""

    def claim(self, tenant: str, media_id: str, kind: MediaKind) -> MediaRef: ...

    def fetch_url(self, tenant: str, url: str, kind: MediaKind, file_name: str | None = None) -> MediaRef: ...


class Outgoing(Model):
    """What a submission sends (handed to the idempotent step; no bytes, only references)."""

    text: str
    content: Content | None = None
    reply_to: str | None = None
    media: MediaSource | None = None
    fallback_template: Template | None = None
    fallback_media: MediaSource | None = None


def _accepted_data(
    content: Content | None, reply_to: str | None, valid_for: int, fallback: Template | None = None
) -> dict[str, Any]:
    data: dict[str, Any] = {"validFor": valid_for} if valid_for else {}
    if content is not None and not isinstance(content, Text):
        data["type"] = kind_of(content)
    if isinstance(content, Template):
        data["template"] = {"name": content.name, "language": content.language}
    if reply_to is not None:
        data["replyTo"] = reply_to
    if fallback is not None:
        data["fallbackTemplate"] = {"name": fallback.name, "language": fallback.language}
    return data


class NumberDirectory(Protocol):
    def list_numbers(self, tenant: str) -> list[Number]: ...


class NumberWindow(Model):
    """One number's customer-service window with a contact."""

    number: Number
    window: ServiceWindow
    service_window: bool  # whether the number sends free-form only within it (a Cloud API number)


class Accepted(Model):
    id: str
    status: MessageStatus


def submission_idempotency_config() -> IdempotencyConfig:
    return IdempotencyConfig(
        event_key_jmespath="[tenant, api_key_id, idempotency_key]",
        payload_validation_jmespath="body_hash",
        expires_after_seconds=IDEMPOTENCY_SECONDS,
        raise_on_no_idempotency_key=True,
    )


class MessageService:
    def __init__(
        self,
        messages: Messages,
        queue: JobQueue,
        persistence: BasePersistenceLayer,
        config: IdempotencyConfig,
        *,
        daily_quota: DailyQuota | None = None,
        status: StatusNotifier | None = None,
        media: MediaStore | None = None,
        log: MessageLog | None = None,
        templates: TemplateChecks | None = None,
        numbers: NumberDirectory | None = None,
    ) -> None:
        """`templates`: how a template is checked before it is queued (None: this deployment
        sends no templates, and a message with one is refused)."""
        self._templates = templates
        self._numbers = numbers
        self._messages = messages
        self._media = media
        self._log = log
        self._status = status
        self._queue = queue
        self._daily_quota = daily_quota
        self._idempotency = config
        self._accept_once: Any = idempotent_function(
            self._accept,
            data_keyword_argument="submission",
            persistence_store=persistence,
            config=config,
            output_serializer=PydanticSerializer(Accepted),
            key_prefix="messages.submit",
        )

    def bind_invocation(self, lambda_context: Any) -> None:
        """Lets an in-flight record expire with the invocation (a crashed request does not block 24 h)."""
        self._idempotency.register_lambda_context(lambda_context)

    def submit(
        self,
        principal: Principal,
        to: str,
        text: str | None,
        idempotency_key: str | None,
        *,
        valid_for: int = 0,
        content: Content | None = None,
        reply_to: str | None = None,
        media: MediaSource | None = None,
        fallback_template: Template | None = None,
        fallback_media: MediaSource | None = None,
    ) -> Accepted:
        """Accept `text`, or `content` (a media message's file, or a template's or an interactive
        message's header's, given by `media`), quoting `reply_to`; `fallback_template` is sent
        instead when no number may send the free-form content (its header's file given by
        `fallback_media`)."""
        if content is None or isinstance(content, Text):
            body = text if text is not None else content.body if isinstance(content, Text) else ""
            content = None if reply_to is None else Text(body=body)
        else:
            body = ""
        signed = body if content is None else content_signature(content, reply_to)
        if isinstance(content, MediaMessage | Template | Interactive) and media is not None:
            signed = f"{signed}\n{media.model_dump_json()}"
        if fallback_template is not None:
            # Another fallback is another body for the Idempotency-Key.
            signed = f"{signed}\n{content_signature(fallback_template, None)}"
            if fallback_media is not None:
                signed = f"{signed}\n{fallback_media.model_dump_json()}"
        submission = Submission(
            tenant=principal.tenant,
            api_key_id=principal.key_id,
            idempotency_key=idempotency_key,
            to=to,
            body_hash=body_hash(to, signed, valid_for),
        )
        outgoing = Outgoing(
            text=body if content is None else content_signature(content, reply_to),
            content=content,
            reply_to=reply_to,
            media=media,
            fallback_template=fallback_template,
            fallback_media=fallback_media,
        )
        if idempotency_key is None:
            return self._accept(submission=submission, outgoing=outgoing, valid_for=valid_for)
        try:
            accepted: Accepted = self._accept_once(submission=submission, outgoing=outgoing, valid_for=valid_for)
        except IdempotencyAlreadyInProgressError as exc:
            raise IdempotencyKeyInFlight("a request with this Idempotency-Key is still in progress") from exc
        except IdempotencyValidationError as exc:
            raise IdempotencyKeyReused("this Idempotency-Key was used with a different body") from exc
        return accepted

    def _stored_media(self, tenant: str, content: Content | None, media: MediaSource | None) -> Content | None:
        """`content` with its file (a media message's, a template's or an interactive message's
        header's) checked and referenced in the bucket (a URL fetched once)."""
        if media is None:
            return content
        if isinstance(content, MediaMessage):
            return MediaMessage(media=self._stored_file(tenant, content.media, media))
        if isinstance(content, Template | Interactive) and (header := header_file(content)) is not None:
            return with_header_file(content, self._stored_file(tenant, header, media))
        return content

    def _stored_file(self, tenant: str, media: Media, source: MediaSource) -> Media:
        if self._media is None:
            raise InvalidInput("this deployment sends no media", code="media_unsupported")
        kind = media.kind
        if source.media_id is not None:
            ref = self._media.claim(tenant, source.media_id, kind)
        elif source.url is not None:
            ref = self._media.fetch_url(tenant, source.url, kind, media.file_name)
        else:
            raise InvalidInput("media takes exactly one of mediaId and url")
        return media.model_copy(
            update={
                "stored": ref,
                "mime_type": ref.mime_type,
                "size": ref.size,
                "sha256": ref.sha256,
                "file_name": media.file_name or ref.file_name,
            }
        )

    def _checked(self, submission: Submission, outgoing: Outgoing) -> None:
        """Each template of the message against its definition, before anything is stored."""
        for template in (outgoing.content, outgoing.fallback_template):
            if not isinstance(template, Template):
                continue
            if self._templates is None:
                raise UnsupportedByProvider("this deployment sends no templates", code="templates_unsupported")
            self._templates.check(submission.tenant, submission.api_key_id, template)

    def get(self, principal: Principal, message_id: str) -> Message:
        return self._messages.get(principal.tenant, message_id)

    def windows(self, principal: Principal, contact: str) -> list[NumberWindow]:
        """The customer-service window of each of the tenant's numbers with `contact` (one read
        of the contact's heard marks, one of the numbers)."""
        if self._numbers is None:
            raise RuntimeError("the number directory is not provided")
        affinity = self._messages.affinity(principal.tenant, contact)
        return [
            NumberWindow(
                number=number, window=window_of(affinity, number.id), service_window=number.meta_phone_id is not None
            )
            for number in sorted(self._numbers.list_numbers(principal.tenant), key=lambda n: n.number)
        ]

    def log(self, principal: Principal, query: LogFilter) -> LogPage:
        """One page of the caller's tenant's message log, newest first (a contact's: in order)."""
        if self._log is None:
            raise RuntimeError("the message log is not provided")
        return self._log.page(principal.tenant, query)

    def _accept(self, *, submission: Submission, outgoing: Outgoing, valid_for: int = 0) -> Accepted:
        key = submission.idempotency_key
        now = utcnow()
        self._checked(submission, outgoing)
        content = self._stored_media(submission.tenant, outgoing.content, outgoing.media)
        fallback = self._stored_media(submission.tenant, outgoing.fallback_template, outgoing.fallback_media)
        message = Message(
            tenant=submission.tenant,
            id=keyed_message_id(submission.api_key_id, key) if key else new_id("msg"),
            api_key_id=submission.api_key_id,
            to=submission.to,
            text=outgoing.text,
            content=content,
            reply_to=outgoing.reply_to,
            fallback_template=fallback if isinstance(fallback, Template) else None,
            body_hash=submission.body_hash,
            idempotency_key=key,
            created_at=now,
            valid_for=valid_for,
            # The validity counts from acceptance: time spent in the queue is time waited.
            expires_at=now + timedelta(seconds=valid_for) if valid_for else None,
            trace=[
                TraceEvent(
                    stage="message.accepted",
                    at=now,
                    data=_accepted_data(content, outgoing.reply_to, valid_for, outgoing.fallback_template),
                )
            ],
        )
        # Counted by the write that stores the message, so a message is charged once: a replay of an
        # Idempotency-Key is answered before this runs (by the idempotency layer, or below by the
        # stored message), and a refusal stores nothing.
        quota = self._daily_quota
        charged = None if quota is None else (lambda uow: quota.charge_in(uow, submission.tenant))
        try:
            # Accepted is not told to the bus: the sender has the answer, no client event is
            # QUEUED, and the console hears of a message at its next status.
            self._messages.create(message, joined=charged)
        except AlreadyExists:
            # A retry after a failed enqueue, or the same key after the idempotency window.
            message = self._messages.get(submission.tenant, message.id)
            if message.body_hash != submission.body_hash:
                raise IdempotencyKeyReused("this Idempotency-Key was used with a different body") from None
            if message.status is not MessageStatus.QUEUED:
                return Accepted(id=message.id, status=message.status)
        job = SendJob(
            message_id=message.id,
            tenant=message.tenant,
            api_key_id=message.api_key_id,
            to=message.to,
            template=True if isinstance(message.content, Template) else None,
        )
        try:
            self._queue.send(job.model_dump_json(exclude_none=True))
        except Exception as exc:
            logger.exception("message stored but not queued", extra={"message_id": message.id})
            if key is None:
                self._give_up(message)
            raise QueueUnavailable("the message could not be queued; retry later") from exc
        logger.info("message queued", extra={"message_id": message.id, "api_key_id": message.api_key_id})
        return Accepted(id=message.id, status=MessageStatus.QUEUED)

    def _give_up(self, message: Message) -> None:
        try:
            failed = self._messages.record_failed(message, "not_queued", [TraceEvent(stage="message.not_queued")])
        except Exception:
            logger.exception("could not mark the unqueued message", extra={"message_id": message.id})
            return
        self._changed(failed)

    def _changed(self, message: Message) -> None:
        """A status this service committed: FAILED when it could not queue the message."""
        if self._status is None:
            return
        try:
            self._status.message_changed(message, None)
        except Exception:  # telling it never fails the request that made the change
            logger.exception("status change not told", extra={"message_id": message.id})

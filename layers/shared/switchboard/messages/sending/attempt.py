"""One attempt: a route of a number tries to send the message, and what came of it.

The route is recorded as the message's `in_flight` before the provider is called (conditional on
the lease: a worker whose lease was taken over sends nothing), so a redelivery after a crash knows
where the send may have gone. The provider's answer is sorted into what the pipeline does next:

- `Sent`: the provider took it;
- `Lost`: this worker's lease ran out and another worker claimed the message (that one sends);
- `Refused`: `ProviderDisconnected`, `ProviderRejected` or a misconfigured route: the next
  instance, then the next number, may send it (a Cloud API number's refusal for the
  customer-service window, Meta's 131047, is `outside_service_window`: never retried);
- `Throttled`: WhatsApp refused the number (463, Meta 130429 / 131056), not the message;
- `Transient`: `ProviderTimeout` or `ProviderUnavailable`: the job is retried (or the message
  ends, see `outcome.Outcomes.transient`).

The ban watch hears each refusal and throttle; every attempt but a lost one is traced. A voice note
leaves as the route's kind can send one (`providers.voice`): one that is not OGG/Opus goes as an
audio through a kind that does not convert it, and the trace says so (`send.voice_as_audio`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from switchboard.core.errors import (
    AlreadyFinal,
    InvalidInput,
    NotFound,
    ProviderDisconnected,
    ProviderError,
    ProviderRejected,
    ProviderThrottled,
    ProviderUnavailable,
    UnsupportedByProvider,
)
from switchboard.core.observability import logger
from switchboard.core.secrets import instance_token_name, provider_secret_name
from switchboard.messages.domain import is_plain_text, media_of, quoted_id
from switchboard.messages.ports import ContentSender
from switchboard.messages.sending.trace import at, pending_route, provider_words, skip
from switchboard.providers import voice
from switchboard.providers.base import OutgoingFile, ProviderTarget, Quote
from switchboard.providers.content import Content, MediaMessage, Reaction, Template, header_file

if TYPE_CHECKING:
    from switchboard.core.ports import Secrets
    from switchboard.messages.domain import Message, TraceEvent
    from switchboard.messages.ports import MediaFiles, Messages, TextSender, Watch
    from switchboard.pool.domain import NumberRoutes, Route
    from switchboard.providers.base import UploadedMedia


@dataclass(frozen=True)
class Tried:
    """`message` as recorded after the attempt (its `in_flight` set)."""

    message: Message


@dataclass(frozen=True)
class Sent(Tried):
    provider_message_id: str
    instead: Template | None = None  # the fallback template that left in the message's place


@dataclass(frozen=True)
class Lost(Tried):
    pass


@dataclass(frozen=True)
class Refused(Tried):
    """`code` is the refusal the message may end with; None for a disconnected instance (the
    instance, not the message, was the problem)."""

    code: str | None


@dataclass(frozen=True)
class Throttled(Tried):
    error: ProviderThrottled


@dataclass(frozen=True)
class Transient(Tried):
    error: ProviderError


class Attempts:
    def __init__(
        self,
        messages: Messages,
        *,
        secrets: Secrets,
        client_for: Callable[[str], TextSender],
        health: Watch | None = None,
        media: MediaFiles | None = None,
        uploaded: UploadedMedia | None = None,
    ) -> None:
        """`media`: the bucket a media message's file is read from; `uploaded`: the media ids a
        cloud API gave each number, reused while valid."""
        self._messages = messages
        self._media = media
        self._uploaded = uploaded
        self._secrets = secrets
        self._client_for = client_for
        self._health = health

    def make(
        self,
        message: Message,
        number: NumberRoutes,
        route: Route,
        events: list[TraceEvent],
        *,
        instead: Template | None = None,
    ) -> Tried:
        """Send `message` through `route` (`instead`: its fallback template in its place)."""
        try:
            message = self._mark_in_flight(message, number, route)
        except AlreadyFinal:
            return Lost(message)
        try:
            provider_message_id = self._send(number, route, message, instead, events)
        except ProviderThrottled as exc:
            # WhatsApp refused the number, not the message (nothing was sent): the ban watch
            # hears it, and the next number may send it now.
            code = exc.details.get("provider_code")
            events.append(
                skip("pool.instance.skipped", number, route, exc.code, **provider_words(exc, code_always=True))
            )
            self._observe_refusal(route, code)
            return Throttled(message, exc)
        except (ProviderDisconnected, ProviderRejected, InvalidInput, UnsupportedByProvider) as exc:
            words = provider_words(exc) if isinstance(exc, ProviderError) else {}
            events.append(skip("pool.instance.skipped", number, route, exc.code, **words))
            if isinstance(exc, ProviderRejected):
                self._observe_refusal(route, exc.details.get("provider_code"))
            return Refused(message, None if isinstance(exc, ProviderDisconnected) else exc.code)
        except ProviderError as exc:  # timeout or unavailable: transient
            events.append(skip("send.attempt.failed", number, route, exc.code, **provider_words(exc)))
            return Transient(message, exc)
        events.append(at("message.sent", number, route, providerMessageId=provider_message_id))
        return Sent(message, provider_message_id, instead)

    def _mark_in_flight(self, message: Message, number: NumberRoutes, route: Route) -> Message:
        """Record the route before calling it. Raises AlreadyFinal when the lease was lost."""
        marked = pending_route(number, route)
        if message.in_flight == marked:
            return message
        return self._messages.record_in_flight(message, marked)

    def _send(
        self, number: NumberRoutes, route: Route, message: Message, instead: Template | None, events: list[TraceEvent]
    ) -> str:
        name = (
            instance_token_name(self._secrets, message.tenant, route.instance)
            if route.instance is not None
            else provider_secret_name(self._secrets, route.provider_id, "admin-token")
        )
        try:
            token = self._secrets.get(name)
        except Exception as exc:  # the secret store is down or the token is missing: retried, then FAILED
            raise ProviderUnavailable(f"credentials of {route.instance or route.provider_id} unavailable") from exc
        target = ProviderTarget(
            kind=route.kind,
            base_url=route.base_url,
            provider_instance_id=route.provider_instance_id,
            instance_token=token,
            meta_phone_id=route.meta_phone_id,
        )
        client = self._client_for(route.kind)
        if instead is None and is_plain_text(message):
            return client.send_text(target, message.to, message.text, idempotency_key=message.id).provider_message_id
        if not isinstance(client, ContentSender) or (instead is None and message.content is None):
            raise UnsupportedByProvider(f"a {route.kind} route sends text only")
        content = instead or self._resolved(message)
        if isinstance(content, MediaMessage) and content.media.stored is not None:
            mime_type = content.media.stored.mime_type
            sent_as = voice.as_sent(content, mime_type, route.kind)
            if sent_as is not content:
                events.append(at("send.voice_as_audio", number, route, mimeType=mime_type))
                content = sent_as
        sent = client.send_content(
            target,
            message.to,
            content,
            message.id,
            quoted=self._quote(message),
            file=self._file(message, instead),
            uploaded=self._uploaded,
        )
        return sent.provider_message_id

    def _resolved(self, message: Message) -> Content:
        """The content as it leaves: a reaction to one of our messages names its provider id."""
        content = message.content
        assert content is not None
        if isinstance(content, Reaction):
            quote = self._quote(message)
            if quote is not None and quote.id != content.target_id:
                return content.model_copy(update={"target_id": quote.id})
        return content

    def _quote(self, message: Message) -> Quote | None:
        """The message quoted or reacted to, as the provider knows it: one of ours sent to this
        recipient (its provider id, from our number), else the provider id the client gave."""
        about = quoted_id(message)
        if about is None:
            return None
        try:
            ours = self._messages.get(message.tenant, about)
        except NotFound:
            ours = None
        if ours is not None and ours.to == message.to and ours.provider_message_id:
            return Quote(id=ours.provider_message_id, from_me=True, author=ours.source_number)
        return Quote(id=about, from_me=False, author=message.to)

    def _file(self, message: Message, instead: Template | None = None) -> OutgoingFile | None:
        """The file leaving with the message: a media message's, or its template's or interactive
        message's header's."""
        if instead is not None:
            media = instead.header_media()
        else:
            found = media_of(message)
            media = found.media if found is not None else header_file(message.content)
        if media is None:
            return None
        ref = media.stored
        if ref is None or self._media is None:
            raise InvalidInput("the message's file is not in the media bucket")
        try:
            data = self._media.read(ref)
        except Exception as exc:  # the bucket is unreachable: retried, then FAILED
            raise ProviderUnavailable("the message's file could not be read") from exc
        return OutgoingFile(data=data, mime_type=ref.mime_type, sha256=ref.sha256, file_name=media.file_name)

    def _observe_refusal(self, route: Route, provider_code: object) -> None:
        if self._health is None or route.source is None:
            return
        try:
            self._health.refused(route.source, provider_code if isinstance(provider_code, str) else None)
        except Exception:
            logger.exception("refusal not recorded by the ban watch", extra={"instance": route.instance})

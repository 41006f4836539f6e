"""What the domain needs from a WhatsApp provider server, independent of its wire format.

Adapters in `switchboard.providers.registry` implement `ProviderClient` for each kind
(wuzapi-style, Evolution API, Meta Cloud API). Every method raises the `ProviderError`
subclasses of `switchboard.core.errors`:

- `ProviderTimeout`: no answer in time; the outcome is unknown;
- `ProviderUnavailable`: 5xx or no connection; not applied, retryable;
- `ProviderRejected`: 4xx; permanent;
- `ProviderDisconnected`: the instance has no WhatsApp session;
- `ProviderLineBusy`: a dial refused with 409 line_busy;
- `UnsupportedByProvider`: the kind has no such feature (e.g. calls on Meta Cloud).
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import ConfigDict, Field

from switchboard.core.clock import Deadline
from switchboard.core.errors import Forbidden, SwitchboardError
from switchboard.core.model import Model
from switchboard.providers.content import MediaSource
from switchboard.providers.kinds import ProviderKind, WebhookScheme

if TYPE_CHECKING:
    import httpx

    from switchboard.providers.content import Content

CallState = Literal["ringing", "connecting", "active", "ended"]
# Why an event is ignored, as one of a few codes (its `ignored` text says it in full): a metric
# counts ignored events by it, so it never takes a value from a payload. `from_us`: our own message
# or receipt echoed back; `group`: a group, broadcast, newsletter or other non-direct chat;
# `unsupported`: an event, message type or status switchboard does not apply; `no_sender`: no
# phone number or LID to answer to; `malformed`: not in the provider's format; `no_effect`: mapped,
# but nothing in this deployment applies it.
IgnoredKind = Literal["from_us", "group", "unsupported", "no_sender", "malformed", "no_effect"]


class ProviderTarget(Model):
    """Everything needed to reach one instance on one provider server. Holds secrets: never log it."""

    model_config = ConfigDict(frozen=True)

    kind: ProviderKind
    base_url: str
    provider_instance_id: str
    instance_token: str | None = Field(default=None, repr=False)
    admin_token: str | None = Field(default=None, repr=False)
    meta_phone_id: str | None = None
    webhook_scheme: WebhookScheme | None = None  # how its provider signs webhooks (None: not stored yet)


class SentMessage(Model):
    provider_message_id: str


class Capabilities(Model):
    calls: bool = False
    calls_per_instance_limit: bool = False
    calls_settings_webhook: bool = False
    calls_video: bool = False
    calls_max_concurrent: int | None = None  # the server's default, not an instance's limit
    calls_min: int = 1
    calls_max: int = 8


class NumberStanding(Model):
    """What a cloud API says of the number itself, as its own words (Meta's phone number node:
    `status` CONNECTED, FLAGGED, RESTRICTED, ...; `quality_rating` GREEN, YELLOW, RED, NA; the
    messaging limit tier, the throughput level, the two-step verification status). None: not said."""

    model_config = ConfigDict(frozen=True)

    status: str | None = None
    quality_rating: str | None = None
    messaging_limit: str | None = None
    throughput: str | None = None
    code_verification_status: str | None = None


class InstanceStatus(Model):
    """An instance's state as its provider reports it: a status read (`GET /instance/status`,
    `/session/status`, `/instance/connectionState/{instance}`, the Graph API's phone number) or
    the answer of a call-settings POST.

    `calls_config_version` is None when the server did not send it: absent is not 0. `number` is
    the number's own standing where the kind reports one (a cloud API), else None.
    """

    connected: bool
    kind: str | None = None
    calls_max_concurrent: int | None = None
    calls_config_version: int | None = None
    updated: str | None = None
    number: NumberStanding | None = None


class WebhookSubscription(Model):
    """The provider's subscription for one instance. The secret is never read back."""

    url: str | None = None
    events: list[str] = Field(default_factory=list)
    filters: dict[str, object] = Field(default_factory=dict)
    enabled: bool = False
    inherited: bool = False  # True when it is the server's global subscription
    exists: bool = False


class ProviderCall(Model):
    call_id: str
    state: CallState
    direction: Literal["incoming", "outgoing"] | None = None
    peer: str | None = None
    from_number: str | None = None
    to_number: str | None = None
    video: bool = False
    end_reason: str | None = None
    ended_by: str | None = None


class DialResult(Model):
    call_id: str


class MediaAttachment(Model):
    """A call's media session at the provider. `media_url` carries a one-time ticket: never log it.

    `detached_for_seconds`: how long a resumed session had been without its socket (None while
    one is on it, or when none ever connected).
    """

    media_url: str = Field(repr=False)
    expires_at: str
    session_id: str
    resumed: bool = False
    detached_for_seconds: float | None = None


class Quote(Model):
    """The message a send quotes or reacts to, as its provider knows it: its WhatsApp id, whether
    this number sent it (`from_me`) and the digits of who wrote it (the recipient, or our number)."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1, max_length=256)
    from_me: bool = False
    author: str | None = None


class UploadedMedia(Protocol):
    """The media ids a cloud API gave one number for a file (Meta's `POST /{phone-id}/media`):
    an id belongs to the number that uploaded it, and stays valid for a while (30 days)."""

    def media_id(self, number: str, sha256: str) -> str | None: ...

    def remember(self, number: str, sha256: str, media_id: str) -> None: ...


class OutgoingFile(Model):
    """A file leaving with a message: its bytes (read from the media bucket) and what they are."""

    model_config = ConfigDict(frozen=True)

    data: bytes = Field(repr=False)
    mime_type: str
    sha256: str
    file_name: str | None = None


class ProviderClient(Protocol):
    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage: ...

    def send_content(
        self,
        target: ProviderTarget,
        phone: str,
        content: Content,
        idempotency_key: str,
        *,
        quoted: Quote | None = None,
        file: OutgoingFile | None = None,
        uploaded: UploadedMedia | None = None,
    ) -> SentMessage:
        """Send a media message, a location, contacts or a reaction (or a text, as `send_text`),
        quoting `quoted` when given (for a reaction: the message reacted to). `file`: the bytes
        of a media message. Raises `UnsupportedByProvider` for a content the kind cannot send."""
        ...

    def capabilities(self, target: ProviderTarget) -> Capabilities: ...

    def instance_status(self, target: ProviderTarget) -> InstanceStatus: ...

    def set_call_settings(self, target: ProviderTarget, calls_max_concurrent: int) -> InstanceStatus: ...

    def get_webhook(self, target: ProviderTarget) -> WebhookSubscription: ...

    def update_webhook_events(self, target: ProviderTarget, events: list[str]) -> WebhookSubscription:
        """Save `events` on the instance's own subscription keeping URL, secret, filters, enabled."""
        ...

    def dial(self, target: ProviderTarget, phone: str, video: bool, idempotency_key: str) -> DialResult: ...

    def active_calls(self, target: ProviderTarget) -> list[ProviderCall]: ...

    def get_call(self, target: ProviderTarget, call_id: str) -> ProviderCall | None: ...

    def call_history(self, target: ProviderTarget) -> list[ProviderCall]: ...

    def hangup(self, target: ProviderTarget, call_id: str) -> None: ...

    def stop_video(self, target: ProviderTarget, call_id: str) -> None: ...

    def attach_media(self, target: ProviderTarget, call_id: str, *, resume: bool = True) -> MediaAttachment:
        """A short-lived media URL for one live call; `resume=False` starts a new media session."""
        ...


@runtime_checkable
class MessageRevoker(Protocol):
    """A client whose server deletes a sent message for everyone (WhatsApp's revoke); the Cloud
    API has no such call, so its client is not one."""

    def revoke(self, target: ProviderTarget, phone: str, provider_message_id: str) -> None:
        """Delete for everyone the message `provider_message_id` this instance sent to `phone`.
        Raises the `ProviderError`s of a request."""
        ...


PairingState = Literal["paired", "code", "starting", "not_started"]


class Pairing(Model):
    """Where linking a phone to an instance's session stands, as its provider says.

    - `paired`: the session is logged in (nothing to scan);
    - `code`: a code to scan now: `qr_code` (a `data:image/png;base64,...` image as the provider
      drew it) and, where the provider made one, `pairing_code` (typed on the phone instead);
      the provider replaces it after a while, so read it again until `paired`;
    - `starting`: the session is connecting and has no code yet (read again shortly);
    - `not_started`: no session is running: start one (`start_session`) to get a code.

    A code links whoever scans it to the provider's session: it is shown to the admin who asked
    and never logged.
    """

    model_config = ConfigDict(frozen=True)

    state: PairingState
    qr_code: str | None = Field(default=None, repr=False)
    pairing_code: str | None = Field(default=None, repr=False)
    # How many codes the provider has drawn in this attempt, where it counts them (Evolution).
    count: int | None = None


@runtime_checkable
class PairingSessions(Protocol):
    """A client whose server pairs a number by a code the phone scans (wuzapi, Evolution), and
    starts, shows and ends that session on request."""

    def start_session(self, target: ProviderTarget) -> Pairing:
        """Start the instance's session (a no-op when one runs); its pairing as it then stands.
        Raises the `ProviderError`s of a request, `UnsupportedByProvider` where the server has
        no such route."""
        ...

    def pairing(self, target: ProviderTarget) -> Pairing:
        """The session's pairing now (the current code, while one is shown)."""
        ...

    def log_out(self, target: ProviderTarget) -> None:
        """Unlink the phone: the session ends and the next one needs a new code. Raises
        `ProviderDisconnected` when no session is logged in."""
        ...


class DownloadedMedia(Model):
    """A message's file as its provider handed it over: not yet typed or checked."""

    model_config = ConfigDict(frozen=True)

    data: bytes = Field(repr=False)
    mime_type: str | None = None  # as the provider said
    file_name: str | None = None


class MediaNotFetched(SwitchboardError):
    """A file its provider will not hand over, for a reason the media capability names
    (`media.ports.UnavailableReason`: `expired`, `not_found`, `too_large`, `forbidden_url`,
    `mismatch`, `no_source`); a request that failed raises the `ProviderError`s instead."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason, code=reason)
        self.reason = reason


@runtime_checkable
class MediaDownloads(Protocol):
    """A client whose provider keeps the files of the messages it delivered (`media/`)."""

    def download_media(
        self, target: ProviderTarget, source: MediaSource, *, max_bytes: int, deadline: Deadline | None = None
    ) -> DownloadedMedia:
        """The bytes `source` names, from the instance's provider, by `deadline` when one is given.
        Raises `MediaNotFetched` (`too_large` past `max_bytes`, `forbidden_url`, `expired`, ...)
        and the `ProviderError`s of a request (`DeadlinePassed` once the deadline passed)."""
        ...


# --- incoming webhooks ----------------------------------------------------------------------

EventName = Literal["message", "receipt", "connection", "call", "call_settings"]


class WebhookRequest(Model):
    """One delivery to `/webhooks/{provider_id}`, as received (headers lower-cased)."""

    model_config = ConfigDict(frozen=True)

    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    body: bytes = b""


MAX_NAME_CHARS = 255
# WhatsApp's own limit on one text message (its apps refuse a longer one); a kind whose API is
# stricter says so in its `text_limit`.
WHATSAPP_TEXT_CHARS = 65_536
_NOT_IN_NAMES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def display_name(value: object) -> str | None:
    """A WhatsApp profile name fit for a helpdesk contact: trimmed, no control characters, bounded."""
    if not isinstance(value, str):
        return None
    # Control characters, line separators and lone surrogates go; format characters stay (an
    # emoji sequence is joined by U+200D).
    kept = "".join(" " if unicodedata.category(ch) in _NOT_IN_NAMES else ch for ch in value)
    cleaned = " ".join(kept.split())
    return cleaned[:MAX_NAME_CHARS] or None


class InboundEvent(Model):
    """One provider event, mapped to our domain: what the ingest deduplicates, stores and applies.

    `data` has one shape per `name`, whatever the provider:
    - message: `{"id", "from" (digits), "content" (`providers.content`, as `content_data`),
      "replyTo"? (the provider id of the quoted message), "timestamp" (ISO 8601), "name" (the
      sender's WhatsApp profile name), "lid" (the sender's LID JID, `<digits>@lid`)}`: `from`
      and `lid` as the provider knows them (at least one), `timestamp` and `name` when it sent
      them (events stored before `content` existed hold `"text"` instead);
    - receipt: `{"id" (the provider's message id), "status": delivered|read|failed, "errors"?: [...],
      "reason"?: our failure reason when the kind knows it (`outside_service_window`)}`;
    - connection: `{"connected": bool, "reason"?: str}`;
    - template_status: `{"wabaId", "name", "language", "status", "id"?, "category"?, "reason"?}`
      (a cloud API's template approved, rejected, paused, ...);
    - call, call_settings: the calls-capable server's own `data`.
    An event that cannot be mapped (groups, unknown message types, unknown events) has `ignored`
    set to the reason and `ignored_kind` to its code: it is acknowledged and recorded, never applied.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, max_length=64)
    binding: str = Field(min_length=1, max_length=128)  # the instance on the provider's side
    # What `binding` names: the instance on the provider, a Cloud API phone number id, or a
    # WhatsApp Business Account (an account's events, bound to an instance on one of its numbers).
    binding_field: Literal["provider_instance_id", "meta_phone_id", "waba_id"] = "provider_instance_id"
    event_id: str = Field(min_length=1, max_length=256)  # deduplicates redeliveries on this instance
    seq: int | None = Field(default=None, ge=0, lt=2**63)  # order of the provider's events, when it has one
    data: dict[str, Any] = Field(default_factory=dict)
    instance: dict[str, Any] | None = None  # the calls-capable server's top-level `instance` summary
    ignored: str | None = None
    ignored_kind: IgnoredKind | None = None  # None with `ignored` set: `unsupported`
    # A message's file when its provider sent the bytes inline (base64 decoded): the ingest puts
    # them in the media bucket and keeps only the reference (`Media.stored`); never stored here.
    media_bytes: bytes | None = Field(default=None, exclude=True, repr=False)


class DeliveryToken(Model):
    """A bearer token that authenticated a delivery without covering its body (Evolution's JWT).

    Anyone who saw the token could send it with another body until it expires, so the ingest
    remembers the bodies each token authenticated, in the transaction that stores the delivery's
    events: for `new_bodies_for_seconds` after it first sees the token the token may bring bodies
    it has not brought before (the provider sends several events under one token), after that only
    those (the provider's retries), until `expires_at` (unix seconds).
    """

    model_config = ConfigDict(frozen=True)

    digest: str = Field(pattern=r"^[0-9a-f]{64}$")  # SHA-256 of the token: the token is never stored
    expires_at: int = Field(ge=0)
    new_bodies_for_seconds: int = Field(ge=0)


class Credentials(Protocol):
    """The secrets a kind may check a delivery against, read only when asked for.

    `fresh` re-reads them from the secret store (after a rotation); the ingest asks for it at
    most once per provider every few seconds.
    """

    def webhook_secret(self) -> str | None: ...

    def verify_token(self) -> str | None: ...

    def instance_token(self, binding: str) -> str | None: ...


@runtime_checkable
class TemplateDirectory(Protocol):
    """A client whose API lists a business account's message templates (a cloud API)."""

    def list_templates(self, target: ProviderTarget, account_id: str) -> list[dict[str, Any]]:
        """Every template of the business account `account_id`, as the API describes each
        (`name`, `language`, `status`, `category`, `components`, ...). Raises the
        `ProviderError`s of a request."""
        ...


@runtime_checkable
class ContactDirectory(Protocol):
    """A client whose server can tell the phone number behind a LID (those that keep that map)."""

    def phone_for_lid(self, target: ProviderTarget, lid: str) -> str | None:
        """The digits of the phone number behind `lid` (`<digits>@lid`), or None when the server
        does not know it. Raises the `ProviderError`s of a request."""
        ...


class ProviderKindSpec(Protocol):
    """Everything switchboard knows about one provider kind (`switchboard.providers.kinds`)."""

    name: ProviderKind
    # A number served by this kind is reachable without a connected instance of ours (a cloud API).
    always_connected: bool
    # A send whose answer was lost can be sent again without a second message reaching the
    # recipient (the kind takes our message id as the WhatsApp message id).
    retry_safe: bool
    # The longest text one message of this kind may carry, in UTF-16 code units (what the
    # WhatsApp clients and the Cloud API count); a longer reply leaves in parts.
    text_limit: int
    # A number of this kind sends free-form content (anything but an approved template) only
    # within the customer-service window: 24 h after the customer's last message (a cloud API).
    # Such a kind sends templates, which other kinds cannot.
    service_window: bool
    # The interactive messages (`buttons`, `list`) the kind's WhatsApp server delivers as such;
    # any other is sent as a numbered text menu, the customer answering with the option's number.
    interactive_native: frozenset[str]
    # The kind's server makes a voice note of any audio itself (it converts it to OGG/Opus); the
    # others send a voice note only as the OGG/Opus WhatsApp plays as one.
    converts_voice_notes: bool
    # The kind's signature schemes, pairwise impossible to confuse: no delivery authentic under
    # one verifies under another, whatever their secrets. The first is what a provider saved
    # without choosing gets, and the order in which a provider saved before schemes were stored
    # tries them on its first delivery.
    schemes: tuple[WebhookScheme, ...]

    def client(
        self,
        *,
        local_mode: bool,
        read_timeout: float,
        transport: httpx.BaseTransport | None = None,
        api_version: str | None = None,
    ) -> ProviderClient:
        """The kind's client. `api_version`: the version of the provider's API, for a kind whose
        API is versioned in its paths (the Graph API's `v25.0`); None: the kind's default. Kinds
        with unversioned APIs ignore it."""
        ...

    def authenticate(
        self, request: WebhookRequest, credentials: Credentials, now: float, scheme: WebhookScheme
    ) -> DeliveryToken | None:
        """Raise `Unauthenticated` (always the same one) unless the delivery is authentic under
        `scheme` (one of `schemes`; any other is refused). Returns the token that authenticated it
        when that token covers no part of the body, else None."""
        ...

    def events(self, request: WebhookRequest, scheme: WebhookScheme) -> list[InboundEvent]:
        """The delivery's events in the format of `scheme`; raises `InvalidInput` when the body is
        not in it."""
        ...

    def verify_subscription(self, query: dict[str, str], credentials: Credentials) -> str:
        """The answer to a subscription check (`GET /webhooks/{id}`); raises `Forbidden` otherwise."""
        ...

    def configure_webhooks(self, client: ProviderClient, target: ProviderTarget, url: str, secret: str) -> bool:
        """Point the instance's webhooks at `url`, signed with `secret` under the target's
        `webhook_scheme`, where the kind's server lets us (True); False where the operator
        configures them on the provider's side."""
        ...


class KindDefaults:
    """What a kind answers where it has nothing of its own: no subscription check, webhooks that
    the operator configures on the provider's side, voice notes sent only as OGG/Opus, no
    customer-service window (nor templates), and every interactive message as a numbered text menu."""

    converts_voice_notes = False
    service_window = False
    interactive_native: frozenset[str] = frozenset()

    def verify_subscription(self, query: dict[str, str], credentials: Credentials) -> str:
        raise Forbidden("this provider kind has no subscription check", code="not_supported")

    def configure_webhooks(self, client: ProviderClient, target: ProviderTarget, url: str, secret: str) -> bool:
        return False

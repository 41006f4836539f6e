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

from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import ConfigDict, Field

from switchboard.core.errors import Forbidden
from switchboard.core.model import Model
from switchboard.providers.kinds import ProviderKind

if TYPE_CHECKING:
    import httpx

CallState = Literal["ringing", "connecting", "active", "ended"]


class ProviderTarget(Model):
    """Everything needed to reach one instance on one provider server. Holds secrets: never log it."""

    model_config = ConfigDict(frozen=True)

    kind: ProviderKind
    base_url: str
    provider_instance_id: str
    instance_token: str | None = Field(default=None, repr=False)
    admin_token: str | None = Field(default=None, repr=False)
    meta_phone_id: str | None = None


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


class ProviderClient(Protocol):
    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage: ...

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


# --- incoming webhooks ----------------------------------------------------------------------

EventName = Literal["message", "receipt", "connection", "call", "call_settings"]


class WebhookRequest(Model):
    """One delivery to `/webhooks/{provider_id}`, as received (headers lower-cased)."""

    model_config = ConfigDict(frozen=True)

    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    body: bytes = b""


class InboundEvent(Model):
    """One provider event, mapped to our domain: what the ingest deduplicates, stores and applies.

    `data` has one shape per `name`, whatever the provider:
    - message: `{"id", "from" (digits), "text", "timestamp" (ISO 8601, optional)}`;
    - receipt: `{"id" (the provider's message id), "status": delivered|read|failed, "errors"?: [...]}`;
    - connection: `{"connected": bool, "reason"?: str}`;
    - call, call_settings: the calls-capable server's own `data`.
    An event that cannot be mapped (media, reactions, groups, unknown events) has `ignored` set to
    the reason: it is acknowledged and recorded, never applied.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, max_length=64)
    binding: str = Field(min_length=1, max_length=128)  # the instance on the provider's side
    binding_field: Literal["provider_instance_id", "meta_phone_id"] = "provider_instance_id"
    event_id: str = Field(min_length=1, max_length=256)  # deduplicates redeliveries on this instance
    seq: int | None = Field(default=None, ge=0, lt=2**63)  # order of the provider's events, when it has one
    data: dict[str, Any] = Field(default_factory=dict)
    instance: dict[str, Any] | None = None  # the calls-capable server's top-level `instance` summary
    ignored: str | None = None


class Credentials(Protocol):
    """The secrets a kind may check a delivery against, read only when asked for.

    `fresh` re-reads them from the secret store (after a rotation); the ingest asks for it at
    most once per provider every few seconds.
    """

    def webhook_secret(self) -> str | None: ...

    def verify_token(self) -> str | None: ...

    def instance_token(self, binding: str) -> str | None: ...


class ProviderKindSpec(Protocol):
    """Everything switchboard knows about one provider kind (`switchboard.providers.kinds`)."""

    name: ProviderKind
    # A number served by this kind is reachable without a connected instance of ours (a cloud API).
    always_connected: bool
    # A send whose answer was lost can be sent again without a second message reaching the
    # recipient (the kind takes our message id as the WhatsApp message id).
    retry_safe: bool

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

    def authenticate(self, request: WebhookRequest, credentials: Credentials, now: float) -> None:
        """Raise `Unauthenticated` (always the same one) unless the delivery is authentic."""
        ...

    def events(self, request: WebhookRequest) -> list[InboundEvent]:
        """The delivery's events; raises `InvalidInput` when the body is not this kind's format."""
        ...

    def verify_subscription(self, query: dict[str, str], credentials: Credentials) -> str:
        """The answer to a subscription check (`GET /webhooks/{id}`); raises `Forbidden` otherwise."""
        ...

    def configure_webhooks(self, client: ProviderClient, target: ProviderTarget, url: str, secret: str) -> bool:
        """Point the instance's webhooks at `url`, signed with `secret`, where the kind's server lets
        us (True); False where the operator configures them on the provider's side."""
        ...


class KindDefaults:
    """What a kind answers where it has nothing of its own: no subscription check, and webhooks
    that the operator configures on the provider's side."""

    def verify_subscription(self, query: dict[str, str], credentials: Credentials) -> str:
        raise Forbidden("this provider kind has no subscription check", code="not_supported")

    def configure_webhooks(self, client: ProviderClient, target: ProviderTarget, url: str, secret: str) -> bool:
        return False

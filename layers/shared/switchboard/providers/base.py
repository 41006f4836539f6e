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

from typing import Literal, Protocol

from pydantic import ConfigDict, Field

from switchboard.core.model import Model

CallState = Literal["ringing", "connecting", "active", "ended"]


class ProviderTarget(Model):
    """Everything needed to reach one instance on one provider server. Holds secrets: never log it."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["wuzapi", "evolution", "meta"]
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


class InstanceStatus(Model):
    """A snapshot from `GET /instance/status` or the answer of a call-settings POST.

    `calls_config_version` is None when the server did not send it: absent is not 0.
    """

    connected: bool
    kind: str | None = None
    calls_max_concurrent: int | None = None
    calls_config_version: int | None = None
    updated: str | None = None


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

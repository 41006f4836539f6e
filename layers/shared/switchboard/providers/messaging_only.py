"""What a provider without calls or managed webhook subscriptions answers (Evolution, Meta Cloud)."""

from __future__ import annotations

from typing import ClassVar

from switchboard.core.errors import UnsupportedByProvider
from switchboard.providers.base import (
    Capabilities,
    DialResult,
    InstanceStatus,
    MediaAttachment,
    ProviderCall,
    ProviderTarget,
    WebhookSubscription,
)


class MessagingOnly:
    """Announces no capability without a request; every call or subscription method refuses."""

    provider_label: ClassVar[str]
    subscriptions_note: ClassVar[str]

    def capabilities(self, target: ProviderTarget) -> Capabilities:
        return Capabilities()

    def set_call_settings(self, target: ProviderTarget, calls_max_concurrent: int) -> InstanceStatus:
        raise self._no_calls()

    def get_webhook(self, target: ProviderTarget) -> WebhookSubscription:
        raise UnsupportedByProvider(self.subscriptions_note)

    def update_webhook_events(self, target: ProviderTarget, events: list[str]) -> WebhookSubscription:
        raise UnsupportedByProvider(self.subscriptions_note)

    def dial(self, target: ProviderTarget, phone: str, video: bool, idempotency_key: str) -> DialResult:
        raise self._no_calls()

    def active_calls(self, target: ProviderTarget) -> list[ProviderCall]:
        raise self._no_calls()

    def get_call(self, target: ProviderTarget, call_id: str) -> ProviderCall | None:
        raise self._no_calls()

    def call_history(self, target: ProviderTarget) -> list[ProviderCall]:
        raise self._no_calls()

    def hangup(self, target: ProviderTarget, call_id: str) -> None:
        raise self._no_calls()

    def stop_video(self, target: ProviderTarget, call_id: str) -> None:
        raise self._no_calls()

    def attach_media(self, target: ProviderTarget, call_id: str, *, resume: bool = True) -> MediaAttachment:
        raise UnsupportedByProvider(f"{self.provider_label} has no call media", code="not_supported")

    def _no_calls(self) -> UnsupportedByProvider:
        return UnsupportedByProvider(f"{self.provider_label} has no calls")

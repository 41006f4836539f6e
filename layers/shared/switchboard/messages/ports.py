"""What the send API, the send worker and receipts need from elsewhere: the message records, the
send queue, the key's configuration and tickets, provider clients, usage, the ban watch, pacing."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from switchboard.messages.domain import Claim, LogFilter, LogPage, Message, PendingRoute, SentAs, TraceEvent
from switchboard.messages.spam_guard import KeptTexts
from switchboard.pool.domain import Affinity

if TYPE_CHECKING:
    from switchboard.catalog.domain import Instance
    from switchboard.core.store import UnitOfWork
    from switchboard.pool.domain import NumberRoutes, SendingConfig, Ticket
    from switchboard.providers.base import OutgoingFile, ProviderTarget, Quote, SentMessage, UploadedMedia
    from switchboard.providers.content import Content, MediaRef, Template


class TemplateChecks(Protocol):
    """The templates of the WhatsApp Business Accounts of a key's Cloud API numbers."""

    def check(self, tenant: str, api_key_id: str, template: Template) -> None:
        """Raise `InvalidTemplate` (422) when no Cloud API number of the key has `template`
        approved, or its parameters do not fit the template's definition (what is wrong, in
        words). Raises `ProviderError` when the template list could not be read."""
        ...


class MessageLog(Protocol):
    def page(self, tenant: str, query: LogFilter) -> LogPage:
        """One page of the tenant's message log; InvalidInput for a cursor it did not give."""
        ...


class Messages(Protocol):
    def create(self, message: Message, *, joined: Callable[[UnitOfWork], None] | None = None) -> None:
        """Store a new message (AlreadyExists if its id is taken), with what `joined` adds to the
        same write: both or neither."""
        ...

    def get(self, tenant: str, message_id: str) -> Message: ...

    def claim(
        self, message_id: str, tenant: str, token: str, lease_seconds: int, wake: str | None = None
    ) -> Message | None: ...

    def claim_in_flight(
        self,
        message_id: str,
        tenant: str,
        token: str,
        lease_seconds: int,
        *,
        route: PendingRoute,
        wake: str | None = None,
    ) -> Claim | None: ...

    def affinity(self, tenant: str, recipient: str) -> Affinity | None: ...

    def record_sent(
        self,
        message: Message,
        *,
        number_id: str,
        source_number: str,
        instance: str | None,
        provider_id: str,
        provider_message_id: str,
        events: list[TraceEvent],
        remember_affinity: bool,
        spam_history: KeptTexts | None = None,
        counted_on: Instance | None = None,
        sent_as: SentAs | None = None,
    ) -> Message: ...

    def record_failed(self, message: Message, reason: str, events: list[TraceEvent]) -> Message: ...

    def record_retry(
        self, message: Message, error_code: str, events: list[TraceEvent], pending: PendingRoute | None
    ) -> None: ...

    def record_in_flight(self, message: Message, route: PendingRoute) -> Message: ...

    def record_waiting(self, message: Message, next_check_at: datetime, events: list[TraceEvent]) -> Message: ...


class DelayedJobs(Protocol):
    """The send queue, for a job that must not be delivered before `delay_seconds` (0..900)."""

    def send_later(self, body: str, delay_seconds: int) -> None: ...


class DailyQuota(Protocol):
    """The tenant's messages per UTC day, counted as each message is accepted."""

    def charge_in(self, uow: UnitOfWork, tenant: str) -> None:
        """Join the count of one message to `uow`; raises DailyQuotaExceeded (at once, or from the
        commit) when the tenant's day is spent."""
        ...


class StatusNotifier(Protocol):
    """Told once per committed status change of a message (see `messages.status_events`)."""

    def message_changed(self, message: Message, webhook_url: str | None) -> None: ...


class ConfigSource(Protocol):
    """An API key's sending configuration (`switchboard.pool.service.SendingConfigSource`)."""

    def get(self, tenant: str, api_key_id: str) -> SendingConfig: ...


class PinnedConfigs(Protocol):
    """The configuration of a message pinned to one instance (`SendingConfigSource.pinned`)."""

    def pinned(self, tenant: str, api_key_id: str, instance_name: str) -> SendingConfig:
        """Its number with that instance as its one route. Raises NotFound when the instance is gone."""
        ...


class Tickets(Protocol):
    """The round-robin tickets of a key's pool (`switchboard.pool.dynamo.PoolRepository`)."""

    def next_ticket(self, api_key_id: str) -> Ticket: ...


class TextSender(Protocol):
    """What a send needs of a provider client (`switchboard.providers.base.ProviderClient`)."""

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage: ...


@runtime_checkable
class ContentSender(TextSender, Protocol):
    """A provider client that sends more than text (`ProviderClient.send_content`)."""

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
    ) -> SentMessage: ...


class MediaFiles(Protocol):
    """The media bucket, read by the send worker (`media.ports.MediaReader`)."""

    def read(self, ref: MediaRef) -> bytes: ...


class Usage(Protocol):
    """Messages out per instance (`switchboard.usage.service.OutgoingUsage`): counted by a write
    joining the transaction that records the message SENT, its metric once that committed."""

    def record(self, uow: UnitOfWork, instance: Instance, when: datetime) -> None: ...

    def sent(self, instance: Instance) -> None: ...


class HealthReason(Protocol):
    @property
    def code(self) -> str: ...


class InstanceHealth(Protocol):
    def blocks(self, now: datetime, *, new_contact: bool) -> str | None: ...
    def active_reasons(self, now: datetime) -> Sequence[HealthReason]: ...


class Watch(Protocol):
    """The ban watch (`switchboard.health.service.BanWatch`)."""

    @property
    def now(self) -> datetime: ...
    def health_of(self, instance_keys: Collection[str]) -> Mapping[str, InstanceHealth]: ...
    def sent(self, instance: Instance, recipient: str | None = None, text: str | None = None) -> None: ...
    def refused(self, instance: Instance, provider_code: str | None) -> None: ...


class Hold(Protocol):
    """Why pacing holds a number back, and for how long."""

    @property
    def reason(self) -> str: ...
    @property
    def wait_seconds(self) -> int: ...


class Pacing(Protocol):
    """Per-number pacing (`switchboard.health.pacing.Pacer`)."""

    def admit(self, number: NumberRoutes, *, new_contact: bool) -> Hold | None: ...

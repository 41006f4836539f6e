"""In-memory fakes for the send worker's ports (issue 4), shared by the pool and send unit tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from switchboard.catalog.domain import utcnow
from switchboard.core.errors import AlreadyFinal, ProviderError
from switchboard.messages.domain import (
    Message,
    MessageStatus,
    PendingRoute,
    SendJob,
    SendOutcome,
    TraceEvent,
    body_hash,
)
from switchboard.messages.sending import SendingService
from switchboard.pool.domain import Affinity, NumberRoutes, Route, SendingConfig
from switchboard.providers.base import ProviderTarget, SentMessage


def number(
    digits: str,
    *,
    instances: tuple[str, ...] | None = None,
    connected: bool = True,
    added_ago: timedelta = timedelta(days=1),
) -> NumberRoutes:
    """A pool number whose connected instances are `instances` (default: one named after it)."""
    names = instances if instances is not None else (f"inst-{digits[-4:]}",)
    routes = tuple(
        Route(provider_id="prv_1", kind="wuzapi", base_url="http://127.0.0.1:9", provider_instance_id=n, instance=n)
        for n in names
    )
    return NumberRoutes(
        number_id=f"num_{digits}", digits=digits, added_at=utcnow() - added_ago, routes=routes if connected else ()
    )


class FakeMessages:
    def __init__(self) -> None:
        self.items: dict[str, Message] = {}
        self.affinities: dict[tuple[str, str], Affinity] = {}

    def claim(self, message_id: str, tenant: str, token: str, lease_seconds: int) -> Message | None:
        stored = self.items.get(message_id)
        if stored is None or stored.status is not MessageStatus.QUEUED:
            return None  # final, or SENDING under a live lease (fakes never let a lease expire)
        claimed = stored.model_copy(update={"status": MessageStatus.SENDING, "lease_token": token})
        self.items[message_id] = claimed
        return claimed

    def affinity(self, tenant: str, recipient: str) -> Affinity | None:
        return self.affinities.get((tenant, recipient))

    def _queued(self, message: Message) -> Message:
        stored = self.items[message.id]
        if stored.status is not MessageStatus.SENDING or stored.lease_token != message.lease_token:
            raise AlreadyFinal("not held")
        return stored

    def record_sent(self, message: Message, **fields: Any) -> Message:
        stored = self._queued(message)
        events: list[TraceEvent] = fields.pop("events")
        remember = fields.pop("remember_affinity")
        sent = stored.model_copy(
            update={
                **fields,
                "status": MessageStatus.SENT,
                "lease_token": None,
                "sent_at": utcnow(),
                "attempts": stored.attempts + 1,
                "pending": None,
                "trace": [*stored.trace, *events],
            }
        )
        self.items[message.id] = sent
        if remember:
            self.affinities[(message.tenant, message.to)] = Affinity(
                number_id=fields["number_id"], number=fields["source_number"], sent_at=utcnow()
            )
        return sent

    def record_failed(self, message: Message, reason: str, events: list[TraceEvent]) -> Message:
        stored = self._queued(message)
        failed = stored.model_copy(
            update={
                "status": MessageStatus.FAILED,
                "lease_token": None,
                "failure_reason": reason,
                "attempts": stored.attempts + 1,
                "trace": [*stored.trace, *events],
            }
        )
        self.items[message.id] = failed
        return failed

    def record_retry(
        self, message: Message, error_code: str, events: list[TraceEvent], pending: PendingRoute | None
    ) -> None:
        stored = self._queued(message)
        self.items[message.id] = stored.model_copy(
            update={
                "status": MessageStatus.QUEUED,
                "lease_token": None,
                "attempts": stored.attempts + 1,
                "last_error": error_code,
                "pending": pending or stored.pending,
                "trace": [*stored.trace, *events],
            }
        )


class FakeProvider:
    """Records sends; `failures[instance]` is a list of errors raised by the next sends through it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []  # (instance, phone, idempotency key)
        self.failures: dict[str, list[ProviderError]] = {}

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        assert target.instance_token == f"token-of-{target.provider_instance_id}"
        pending = self.failures.get(target.provider_instance_id)
        if pending:
            raise pending.pop(0)
        self.sent.append((target.provider_instance_id, phone, idempotency_key))
        return SentMessage(provider_message_id=f"wamid-{len(self.sent)}")


class FakeSecrets:
    def name(self, *parts: str) -> str:
        return "/".join(parts)

    def put(self, name: str, value: str) -> None:
        raise AssertionError("the worker never writes secrets")

    def get(self, name: str, *, fresh: bool = False) -> str:
        return f"token-of-{name.split('/')[1]}"

    def delete(self, name: str) -> None:
        raise AssertionError("the worker never deletes secrets")


class FakeNotifier:
    def __init__(self) -> None:
        self.changes: list[tuple[str, MessageStatus, str | None]] = []

    def message_changed(self, message: Message, webhook_url: str | None) -> None:
        self.changes.append((message.id, message.status, webhook_url))


class World:
    """A send worker over fakes, for one API key's `SendingConfig`."""

    def __init__(self, config: SendingConfig, *, max_attempts: int = 5, usage: Any = None, secrets: Any = None) -> None:
        self.config = config
        self.messages = FakeMessages()
        self.provider = FakeProvider()
        self.notifier = FakeNotifier()
        self.ticket = 0
        self.service = SendingService(
            self.messages,
            configs=self,
            tickets=self,
            secrets=secrets or FakeSecrets(),
            client_for=lambda kind: self.provider,
            notifier=self.notifier,
            max_attempts=max_attempts,
            usage=usage,
        )

    def get(self, tenant: str, api_key_id: str) -> SendingConfig:
        return self.config

    def next_ticket(self, api_key_id: str) -> int:
        self.ticket += 1
        return self.ticket

    def queue_message(self, to: str, text: str = "hello") -> Message:
        message = Message(
            tenant=self.config.tenant,
            id=f"msg_{len(self.messages.items) + 1}",
            api_key_id=self.config.api_key_id,
            to=to,
            text=text,
            body_hash=body_hash(to, text),
        )
        self.messages.items[message.id] = message
        return message

    def process(self, message: Message, attempt: int = 1) -> SendOutcome:
        job = SendJob(message_id=message.id, tenant=message.tenant, api_key_id=message.api_key_id, to=message.to)
        return self.service.process(job, attempt)

    def stored(self, message: Message) -> Message:
        return self.messages.items[message.id]

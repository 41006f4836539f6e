"""The send worker over in-memory fakes, for one API key's `SendingConfig`, and pool numbers for it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from switchboard.core.clock import utcnow
from switchboard.core.ports import Secrets
from switchboard.messages.domain import Message, SendJob, SendOutcome, body_hash
from switchboard.messages.ports import (
    ConfigSource,
    DelayedJobs,
    Messages,
    Pacing,
    StatusNotifier,
    TextSender,
    Tickets,
    Usage,
    Watch,
)
from switchboard.messages.sending import SendingService
from switchboard.messages.sending.attempt import Attempts
from switchboard.messages.sending.gates import Gates
from switchboard.messages.sending.outcome import Outcomes
from switchboard.messages.sending.plan import Planner
from switchboard.messages.spam_guard import SpamGuard
from switchboard.pool.domain import NumberRoutes, Route, SendingConfig
from tools.support.fakes import FakeMessages, FakeNotifier, FakeProvider, FakeSecrets, FakeTickets


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


def sending_service(
    messages: Messages,
    *,
    configs: ConfigSource,
    tickets: Tickets,
    secrets: Secrets,
    client_for: Callable[[str], TextSender],
    notifier: StatusNotifier,
    max_attempts: int,
    usage: Usage | None = None,
    jobs: DelayedJobs | None = None,
    spam_guard: SpamGuard | None = None,
    health: Watch | None = None,
    pacer: Pacing | None = None,
    clock: Callable[[], datetime] = utcnow,
) -> SendingService:
    """The send pipeline over the given ports, its steps composed as `bootstrap.messages` does."""
    return SendingService(
        messages,
        planner=Planner(messages, configs=configs, tickets=tickets, clock=clock),
        gates=Gates(spam_guard=spam_guard, health=health, pacer=pacer, clock=clock),
        attempts=Attempts(messages, secrets=secrets, client_for=client_for, health=health),
        outcomes=Outcomes(
            messages,
            notifier=notifier,
            max_attempts=max_attempts,
            usage=usage,
            jobs=jobs,
            health=health,
            clock=clock,
        ),
    )


def claimed(messages: FakeMessages, to: str = "5511988880001", text: str = "hello", **fields: Any) -> Message:
    """A message of key_1 of acme stored in `messages` and claimed (SENDING under a lease), as the
    send worker hands it to its steps; `fields` set more of it (an expiry, a pending route)."""
    message = Message(
        tenant="acme",
        id=f"msg_{len(messages.items) + 1}",
        api_key_id="key_1",
        to=to,
        text=text,
        body_hash=body_hash(to, text),
        **fields,
    )
    messages.items[message.id] = message
    held = messages.claim(message.id, message.tenant, "lease_1", 60)
    assert held is not None
    return held


def instance_tokens() -> FakeSecrets:
    """Each instance's token is `token-of-<instance>`; the worker only reads them."""
    return FakeSecrets(default=lambda name: f"token-of-{name.split('/')[-2]}", read_only=True)


class SendWorld:
    """A send worker over fakes; the world is also the worker's config source (`get`)."""

    def __init__(
        self,
        config: SendingConfig,
        *,
        max_attempts: int = 5,
        usage: Any = None,
        secrets: Any = None,
        spam_guard: Any = None,
        health: Any = None,
    ) -> None:
        self.config = config
        self.messages = FakeMessages()
        self.provider = FakeProvider(expected_token=lambda target: f"token-of-{target.provider_instance_id}")
        self.notifier = FakeNotifier()
        self.tickets = FakeTickets()
        self.service = sending_service(
            self.messages,
            configs=self,
            tickets=self.tickets,
            secrets=secrets or instance_tokens(),
            client_for=lambda kind: self.provider,
            notifier=self.notifier,
            max_attempts=max_attempts,
            usage=usage,
            spam_guard=spam_guard,
            health=health,
        )

    def get(self, tenant: str, api_key_id: str) -> SendingConfig:
        return self.config

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

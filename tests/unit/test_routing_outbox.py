"""Outbox drain rules with in-memory fakes: order, pause on an unavailable provider, permanent refusals,
expiry, and the time budget of drains that run inside a request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from switchboard.catalog.domain import Instance
from switchboard.core.errors import ProviderRejected, ProviderUnavailable
from switchboard.providers.base import ProviderTarget, SentMessage
from switchboard.routing.domain import DownstreamTarget
from switchboard.routing.outbox import OutboxService, Reply
from switchboard.routing.records import FinalStatus, OutboxEntry, Outcome
from switchboard.usage.service import UsageRecorder

NOW = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


class Store:
    def __init__(self) -> None:
        self.entries: list[OutboxEntry] = []
        self.outcomes: dict[str, Outcome] = {}

    def enqueue(self, entry: OutboxEntry) -> bool:
        if entry.message_id in self.outcomes:
            return False
        self.entries.append(entry)
        self.outcomes[entry.message_id] = Outcome(status="PENDING")
        return True

    def waiting(self, instance: str, limit: int) -> list[OutboxEntry]:
        return [entry for entry in self.entries if entry.instance == instance][:limit]

    def instances_waiting(self) -> list[str]:
        return sorted({entry.instance for entry in self.entries})

    def claim(self, entry: OutboxEntry, now: datetime, lease_seconds: int) -> bool:
        return entry in self.entries

    def release(self, entry: OutboxEntry) -> None:
        return None

    def finish(
        self, entry: OutboxEntry, status: FinalStatus, reason: str | None, provider_message_id: str | None
    ) -> bool:
        self.entries.remove(entry)
        self.outcomes[entry.message_id] = Outcome(status=status, reason=reason, provider_message_id=provider_message_id)
        return True

    def outcome(self, instance: str, message_id: str) -> Outcome | None:
        return self.outcomes.get(message_id)

    def set_webhook_digest(self, tenant: str, instance: str, digest: str, hint: str, at: datetime) -> None:
        return None

    def webhook_digest(self, tenant: str, instance: str) -> str | None:
        return None


class Provider:
    def __init__(self, failures: dict[str, Exception]) -> None:
        self.failures = failures
        self.sent: list[str] = []

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        if body in self.failures:
            raise self.failures.pop(body)
        self.sent.append(body)
        return SentMessage(provider_message_id=f"p-{len(self.sent)}")


class Usage:
    def __init__(self) -> None:
        self.counted: list[str | None] = []

    def add(self, instance: Instance, day: Any, direction: str, count_id: str | None, now: datetime) -> bool:
        self.counted.append(count_id)
        return True

    def month(self, owner_tag: str | None, month: str) -> list[Any]:
        return []


class Notes:
    def __init__(self) -> None:
        self.notes: list[tuple[int, str]] = []

    def post_incoming(self, target: DownstreamTarget, message: Any) -> int:
        raise AssertionError("not used")

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        self.notes.append((conversation_id, text))


INSTANCE = Instance(
    tenant="acme",
    name="acme-main",
    provider_id="prv",
    provider_instance_id="i-1",
    number_id="num",
    token_hint="…",
    owner_tag="acme",
    state="CONNECTED",
)
TARGET = DownstreamTarget(base_url="https://acme.example", account_id=1, inbox_id=2, api_token="t", source="tenant")


def service(provider: Provider, *, clock: datetime = NOW, connected: bool = True) -> tuple[OutboxService, Store, Notes]:
    store, notes = Store(), Notes()
    instance = INSTANCE.model_copy(update={"state": "CONNECTED" if connected else "DISCONNECTED"})

    class Instances:
        def find_instance(self, name: str) -> Instance | None:
            return instance

        def get_instance(self, tenant: str, name: str) -> Instance:
            return instance

    class Targets:
        def target_for(self, _: Instance) -> tuple[Any, ProviderTarget]:
            return provider, ProviderTarget(kind="wuzapi", base_url="https://p.example", provider_instance_id="i-1")

    class Downstreams:
        def target_for(self, owner_tag: str | None) -> DownstreamTarget | None:
            return TARGET

    class Audit:
        def record(self, *args: Any, **kwargs: Any) -> None:
            return None

    outbox = OutboxService(
        store,
        Instances(),
        Targets(),
        usage=UsageRecorder(Usage()),
        downstreams=Downstreams(),
        downstream_client=notes,
        audit=Audit(),
        clock=lambda: clock,
    )
    return outbox, store, notes


def queue(store: Store, *texts: str, at: datetime = NOW) -> None:
    for index, text in enumerate(texts):
        store.enqueue(
            OutboxEntry(
                instance="acme-main",
                message_id=f"m{index}",
                phone="5511988887777",
                text=text,
                conversation_id=55,
                enqueued_at=at + timedelta(seconds=index),
            )
        )


def test_given_waiting_replies_when_drained_then_sent_in_order() -> None:
    provider = Provider({})
    outbox, store, _ = service(provider)
    queue(store, "a", "b", "c")

    result = outbox.drain("acme-main")

    assert (result.sent, result.waiting, provider.sent) == (3, False, ["a", "b", "c"])


def test_given_the_provider_is_unavailable_when_drained_then_it_stops_and_keeps_the_order() -> None:
    provider = Provider({"b": ProviderUnavailable("down")})
    outbox, store, _ = service(provider)
    queue(store, "a", "b", "c")

    first = outbox.drain("acme-main")
    second = outbox.drain("acme-main")

    assert (first.sent, first.waiting) == (1, True)
    assert (second.sent, provider.sent) == (2, ["a", "b", "c"])


def test_given_a_permanent_refusal_when_drained_then_that_reply_fails_reported_and_the_rest_go_on() -> None:
    provider = Provider({"b": ProviderRejected("bad phone")})
    outbox, store, notes = service(provider)
    queue(store, "a", "b", "c")

    result = outbox.drain("acme-main")

    assert (result.sent, result.failed, provider.sent) == (2, 1, ["a", "c"])
    assert store.outcomes["m1"].status == "FAILED" and "provider_rejected" in (store.outcomes["m1"].reason or "")
    assert notes.notes and notes.notes[0][0] == 55


def test_given_a_disconnected_instance_when_drained_then_only_expired_replies_move() -> None:
    provider = Provider({})
    outbox, store, notes = service(provider, clock=NOW + timedelta(hours=4, seconds=1), connected=False)
    queue(store, "old")
    fresh = OutboxEntry(
        instance="acme-main",
        message_id="fresh",
        phone="5511988887777",
        text="fresh",
        enqueued_at=NOW + timedelta(hours=4),
    )
    store.enqueue(fresh)

    result = outbox.drain("acme-main")

    assert (result.failed, result.sent, result.waiting) == (1, 0, True)
    assert [entry.text for entry in store.entries] == ["fresh"]
    assert provider.sent == []
    assert [conversation for conversation, _ in notes.notes] == [55]


def test_given_no_time_budget_left_when_drained_inside_a_request_then_nothing_starts() -> None:
    provider = Provider({})
    outbox, store, _ = service(provider)
    queue(store, "a")

    result = outbox.drain("acme-main", budget_seconds=0)

    assert (result.sent, result.waiting, provider.sent) == (0, True, [])


def test_given_a_duplicate_reply_when_submitted_then_it_is_queued_once() -> None:
    provider = Provider({})
    outbox, store, _ = service(provider, connected=False)
    reply = Reply(message_id="m1", phone="5511988887777", text="hi")

    outcomes = [outbox.submit(INSTANCE.model_copy(update={"state": "DISCONNECTED"}), reply) for _ in range(2)]

    assert [outcome.status for outcome in outcomes] == ["PENDING", "PENDING"]
    assert len(store.entries) == 1

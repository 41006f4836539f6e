"""Outbox drain rules with in-memory fakes: order, pause on an unavailable provider, permanent refusals,
expiry, and the time budget of drains that run inside a request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from switchboard.core.errors import ProviderRejected, ProviderUnavailable
from switchboard.routing.domain import DownstreamTarget
from switchboard.routing.outbox import OutboxService, Reply
from switchboard.routing.records import OutboxEntry
from switchboard.usage.service import UsageRecorder
from tests.support.builders import instance
from tests.support.fakes import (
    FakeAudit,
    FakeCatalog,
    FakeDownstreamClient,
    FakeDownstreams,
    FakeOutboxStore,
    FakeProvider,
    FakeTargets,
    FakeUsageStore,
)

NOW = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
INSTANCE = instance("acme-main", owner_tag="acme", state="CONNECTED")
TARGET = DownstreamTarget(base_url="https://acme.example", account_id=1, inbox_id=2, api_token="t", source="tenant")


def service(
    provider: FakeProvider, *, clock: datetime = NOW, connected: bool = True
) -> tuple[OutboxService, FakeOutboxStore, FakeDownstreamClient]:
    store, notes = FakeOutboxStore(), FakeDownstreamClient()
    state = INSTANCE.model_copy(update={"state": "CONNECTED" if connected else "DISCONNECTED"})
    outbox = OutboxService(
        store,
        FakeCatalog([state]),
        FakeTargets(provider),
        usage=UsageRecorder(FakeUsageStore()),
        downstreams=FakeDownstreams(TARGET),
        downstream_client=notes,
        audit=FakeAudit(),
        clock=lambda: clock,
    )
    return outbox, store, notes


def queue(store: FakeOutboxStore, *texts: str, at: datetime = NOW) -> None:
    for index, text in enumerate(texts):
        store.enqueue(
            OutboxEntry(
                instance=INSTANCE.key,
                message_id=f"m{index}",
                phone="5511988887777",
                text=text,
                conversation_id=55,
                enqueued_at=at + timedelta(seconds=index),
            )
        )


def test_given_waiting_replies_when_drained_then_sent_in_order() -> None:
    provider = FakeProvider()
    outbox, store, _ = service(provider)
    queue(store, "a", "b", "c")

    result = outbox.drain("acme:acme-main")

    assert (result.sent, result.waiting, provider.bodies) == (3, False, ["a", "b", "c"])


def test_given_the_provider_is_unavailable_when_drained_then_it_stops_and_keeps_the_order() -> None:
    provider = FakeProvider()
    provider.failures["b"] = [ProviderUnavailable("down")]
    outbox, store, _ = service(provider)
    queue(store, "a", "b", "c")

    first = outbox.drain("acme:acme-main")
    second = outbox.drain("acme:acme-main")

    assert (first.sent, first.waiting) == (1, True)
    assert (second.sent, provider.bodies) == (2, ["a", "b", "c"])


def test_given_a_permanent_refusal_when_drained_then_that_reply_fails_reported_and_the_rest_go_on() -> None:
    provider = FakeProvider()
    provider.failures["b"] = [ProviderRejected("bad phone")]
    outbox, store, notes = service(provider)
    queue(store, "a", "b", "c")

    result = outbox.drain("acme:acme-main")

    assert (result.sent, result.failed, provider.bodies) == (2, 1, ["a", "c"])
    assert store.outcomes["m1"].status == "FAILED" and "provider_rejected" in (store.outcomes["m1"].reason or "")
    assert notes.notes and notes.notes[0][0] == 55


def test_given_a_disconnected_instance_when_drained_then_only_expired_replies_move() -> None:
    provider = FakeProvider()
    outbox, store, notes = service(provider, clock=NOW + timedelta(hours=4, seconds=1), connected=False)
    queue(store, "old")
    fresh = OutboxEntry(
        instance=INSTANCE.key,
        message_id="fresh",
        phone="5511988887777",
        text="fresh",
        enqueued_at=NOW + timedelta(hours=4),
    )
    store.enqueue(fresh)

    result = outbox.drain("acme:acme-main")

    assert (result.failed, result.sent, result.waiting) == (1, 0, True)
    assert [entry.text for entry in store.entries] == ["fresh"]
    assert provider.bodies == []
    assert [conversation for conversation, _ in notes.notes] == [55]


def test_given_no_time_budget_left_when_drained_inside_a_request_then_nothing_starts() -> None:
    provider = FakeProvider()
    outbox, store, _ = service(provider)
    queue(store, "a")

    result = outbox.drain("acme:acme-main", budget_seconds=0)

    assert (result.sent, result.waiting, provider.bodies) == (0, True, [])


def test_given_a_duplicate_reply_when_submitted_then_it_is_queued_once() -> None:
    provider = FakeProvider()
    outbox, store, _ = service(provider, connected=False)
    reply = Reply(message_id="m1", phone="5511988887777", text="hi")

    outcomes = [outbox.submit(INSTANCE.model_copy(update={"state": "DISCONNECTED"}), reply) for _ in range(2)]

    assert [outcome.status for outcome in outcomes] == ["PENDING", "PENDING"]
    assert len(store.entries) == 1

"""Outbox drain rules with in-memory fakes: order, pause on an unavailable provider, permanent refusals,
expiry, and the time budget of drains that run inside a request."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from switchboard.core.errors import ProviderRejected, ProviderTimeout, ProviderUnavailable
from switchboard.providers.kinds import ProviderKind
from switchboard.routing.domain import DownstreamTarget
from switchboard.routing.outbox import OutboxService, Reply
from switchboard.routing.parts import split_text
from switchboard.routing.records import OutboxEntry
from switchboard.usage.service import UsageRecorder
from tools.support.builders import instance
from tools.support.fakes import (
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
    provider: FakeProvider,
    *,
    clock: datetime = NOW,
    connected: bool = True,
    kind: ProviderKind = "wuzapi",
    usage: FakeUsageStore | None = None,
    store: FakeOutboxStore | None = None,
    notes: FakeDownstreamClient | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> tuple[OutboxService, FakeOutboxStore, FakeDownstreamClient]:
    store, notes = store or FakeOutboxStore(), notes or FakeDownstreamClient()
    state = INSTANCE.model_copy(update={"state": "CONNECTED" if connected else "DISCONNECTED"})
    outbox = OutboxService(
        store,
        FakeCatalog([state]),
        FakeTargets(provider, kind=kind),
        usage=UsageRecorder(usage or FakeUsageStore()),
        downstreams=FakeDownstreams(TARGET),
        downstream_client=notes,
        audit=FakeAudit(),
        clock=lambda: clock,
        monotonic=monotonic,
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


# --- replies longer than one message ---------------------------------------------------------

PARAGRAPH = ("Obrigado pelo contato. Seguem os detalhes do seu pedido. " * 20).strip()  # 1,159 characters
LONG = "\n\n".join(f"{n}. {PARAGRAPH}" for n in range(8))  # 9,300 characters: three Cloud API messages


def test_given_a_reply_over_the_cloud_api_limit_then_it_leaves_in_order_in_parts_each_with_its_own_key() -> None:
    provider, usage = FakeProvider(), FakeUsageStore()
    outbox, store, _ = service(provider, kind="meta", usage=usage)
    queue(store, LONG, "after")

    result = outbox.drain("acme:acme-main")

    assert (result.sent, result.failed, result.waiting) == (2, 0, False)
    *parts, after = provider.sent
    assert [len(part.body) <= 4096 for part in parts] == [True] * 3
    assert "\n\n".join(part.body for part in parts) == LONG and after.body == "after"
    assert [part.key for part in provider.sent] == [
        "outbox-acme:acme-main-m0-p1",
        "outbox-acme:acme-main-m0-p2",
        "outbox-acme:acme-main-m0-p3",
        "outbox-acme:acme-main-m1",
    ]
    assert store.outcomes["m0"].status == "SENT" and store.entries == []
    assert usage.counted == [  # every part is a message out, counted once by its own id
        "outbox#acme:acme-main#m0-p1",
        "outbox#acme:acme-main#m0-p2",
        "outbox#acme:acme-main#m0-p3",
        "outbox#acme:acme-main#m1",
    ]


def test_given_the_same_reply_through_a_kind_with_whatsapps_own_limit_then_it_is_one_message() -> None:
    provider = FakeProvider()
    outbox, store, _ = service(provider, kind="evolution")
    queue(store, LONG)

    outbox.drain("acme:acme-main")

    assert [(sent.body, sent.key) for sent in provider.sent] == [(LONG, "outbox-acme:acme-main-m0")]


def test_given_the_provider_is_unavailable_at_the_second_part_then_the_next_drain_resends_only_from_that_part() -> None:
    provider = FakeProvider()
    outbox, store, _ = service(provider, kind="meta")
    queue(store, LONG)
    second = split_text(LONG, 4096)[1]
    provider.failures[second] = [ProviderUnavailable("down")]

    first = outbox.drain("acme:acme-main")
    again = outbox.drain("acme:acme-main")

    assert (first.sent, first.waiting, again.sent) == (0, True, 1)
    assert [part.key[-2:] for part in provider.sent] == ["p1", "p2", "p3"]
    assert "\n\n".join(provider.bodies) == LONG


@pytest.mark.parametrize("kind", ["evolution", "meta"])
def test_given_a_lost_answer_through_a_kind_that_cannot_resend_safely_then_not_resent_and_the_agent_told_it_is_in_doubt(
    kind: ProviderKind,
) -> None:
    provider = FakeProvider()
    outbox, store, notes = service(provider, kind=kind)
    queue(store, "hello", "next")
    provider.failures["hello"] = [ProviderTimeout("no answer")]

    first = outbox.drain("acme:acme-main")
    again = outbox.drain("acme:acme-main")

    assert (first.sent, first.failed, again.sent, again.failed) == (1, 1, 0, 0)
    assert provider.bodies == ["next"]  # "hello" was never tried again; the next reply still left
    outcome = store.outcomes["m0"]
    assert outcome.status == "FAILED" and (outcome.reason or "").startswith("ambiguous_outcome")
    [(conversation, note)] = notes.notes
    assert conversation == 55 and "m0" in note and "may not have been delivered" in note and kind in note


def test_given_a_lost_answer_through_a_kind_that_resends_under_the_same_id_then_resent_with_that_id() -> None:
    provider = FakeProvider()
    outbox, store, notes = service(provider, kind="wuzapi")
    queue(store, "hello")
    provider.failures["hello"] = [ProviderTimeout("no answer")]

    first = outbox.drain("acme:acme-main")
    again = outbox.drain("acme:acme-main")

    assert (first.sent, first.waiting, again.sent) == (0, True, 1)
    assert [sent.key for sent in provider.sent] == ["outbox-acme:acme-main-m0"]
    assert store.outcomes["m0"].status == "SENT" and notes.notes == []


def test_given_a_lost_answer_at_the_second_part_then_the_reply_ends_in_doubt_saying_how_far_it_got() -> None:
    provider = FakeProvider()
    outbox, store, notes = service(provider, kind="meta")
    queue(store, LONG)
    provider.failures[split_text(LONG, 4096)[1]] = [ProviderTimeout("no answer")]

    result = outbox.drain("acme:acme-main")

    assert (result.sent, result.failed, len(provider.sent)) == (0, 1, 1)
    reason = store.outcomes["m0"].reason or ""
    assert reason.startswith("ambiguous_outcome") and "part 2 of 3" in reason and "the 1 parts before it" in reason
    assert len(notes.notes) == 1


@pytest.mark.parametrize(("kind", "resent"), [("evolution", False), ("wuzapi", True)])
def test_given_a_drain_that_died_mid_send_then_the_next_one_resends_only_where_it_is_safe(
    kind: ProviderKind, resent: bool
) -> None:
    provider = FakeProvider()
    outbox, store, notes = service(provider, kind=kind)
    queue(store, "hello")
    store.entries[0] = store.entries[0].model_copy(update={"in_flight": 0})  # its send started, never recorded

    result = outbox.drain("acme:acme-main")

    assert (result.sent, result.failed) == ((1, 0) if resent else (0, 1))
    assert provider.bodies == (["hello"] if resent else [])
    assert store.outcomes["m0"].status == ("SENT" if resent else "FAILED")
    assert len(notes.notes) == (0 if resent else 1)


def test_given_a_part_refused_for_good_then_the_reply_fails_once_with_one_note_saying_how_far_it_got() -> None:
    provider = FakeProvider()
    outbox, store, notes = service(provider, kind="meta")
    queue(store, LONG, "next")
    provider.failures[split_text(LONG, 4096)[1]] = [ProviderRejected("bad")]

    result = outbox.drain("acme:acme-main")

    assert (result.sent, result.failed) == (1, 1)
    assert [part.key[-2:] for part in provider.sent] == ["p1", "m1"]  # the third part never left; the next reply did
    reason = store.outcomes["m0"].reason or ""
    assert "part 2 of 3" in reason and "the 1 before it were sent" in reason
    [(conversation, note)] = notes.notes
    assert conversation == 55 and "m0" in note and "part 2 of 3" in note


def test_given_the_request_budget_runs_out_between_parts_then_the_rest_leaves_on_the_next_drain() -> None:
    provider = FakeProvider()
    spent = iter([0.0, 0.0, 10.0])  # the deadline is set, the first part starts, then the budget is spent
    outbox, store, _ = service(provider, kind="meta", monotonic=lambda: next(spent, 10.0))
    queue(store, LONG)

    inside_a_request = outbox.drain("acme:acme-main", budget_seconds=3)
    scheduled = outbox.drain("acme:acme-main")

    assert (inside_a_request.sent, inside_a_request.waiting, scheduled.sent) == (0, True, 1)
    assert [part.key[-2:] for part in provider.sent] == ["p1", "p2", "p3"]


def test_given_a_reply_partly_sent_when_it_expires_then_the_note_says_parts_had_left() -> None:
    provider = FakeProvider()
    outbox, store, notes = service(provider, kind="meta")
    queue(store, LONG)
    provider.failures[split_text(LONG, 4096)[1]] = [ProviderUnavailable("down")]
    outbox.drain("acme:acme-main")
    later, _, _ = service(provider, kind="meta", clock=NOW + timedelta(hours=4, seconds=1), store=store, notes=notes)

    result = later.drain("acme:acme-main")

    assert result.failed == 1
    assert "1 of its parts had left" in (store.outcomes["m0"].reason or "")


def test_the_parts_of_a_reply_keep_the_cut_of_their_first_part_even_if_the_kind_changes_meanwhile() -> None:
    provider = FakeProvider()
    outbox, store, _ = service(provider, kind="meta")
    queue(store, LONG)
    provider.failures[split_text(LONG, 4096)[1]] = [ProviderUnavailable("down")]
    outbox.drain("acme:acme-main")
    moved, _, _ = service(provider, kind="evolution", store=store)  # now on a kind with a far larger limit

    moved.drain("acme:acme-main")

    assert "\n\n".join(provider.bodies) == LONG and len(provider.sent) == 3


def test_given_a_blank_reply_in_the_outbox_then_it_fails_with_its_reason_instead_of_waiting_forever() -> None:
    provider = FakeProvider()
    outbox, store, _ = service(provider)
    queue(store, " \n ", "b")

    result = outbox.drain("acme:acme-main")

    assert (result.sent, result.failed, provider.bodies) == (1, 1, ["b"])
    assert store.outcomes["m0"].reason == "nothing to send: the reply is blank"

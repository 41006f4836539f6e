"""The pure call rules: forward-only state, first end kept, media by seq, recording apart, ownership."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.calls.domain import (
    CallEventData,
    CallRecord,
    DialAttempt,
    apply_event,
    apply_provider_call,
    bind_to_attempt,
    claim,
    new_record,
    reservation_id,
)
from switchboard.core.errors import CallOwned, Forbidden
from switchboard.providers.base import ProviderCall

PEER = "5511988887777"


def event(kind: str, state: str, *, video: bool = False, **extra: Any) -> CallEventData:
    return CallEventData.model_validate(
        {
            "type": kind,
            "callId": "C1",
            "state": state,
            "direction": "incoming",
            "from": PEER,
            "to": "5511900000000",
            "video": video,
            "createdAt": "2026-11-30T08:00:00.000000000Z",
            **extra,
        }
    )


LIFECYCLE: list[tuple[int, CallEventData]] = [
    (1, event("offer", "ringing")),
    (2, event("answered", "connecting", answeredAt="2026-11-30T08:00:05Z")),
    (3, event("active", "active", answeredAt="2026-11-30T08:00:05Z")),
    (4, event("video", "active", video=True, answeredAt="2026-11-30T08:00:05Z")),
    (5, event("video", "active", video=False, answeredAt="2026-11-30T08:00:05Z")),
    (6, event("ended", "ended", endReason="hangup", endedBy="remote", answeredAt="2026-11-30T08:00:05Z")),
    (7, event("recording_ready", "ended", recording={"status": "ready", "url": "https://rec.example/1"})),
]


def fresh() -> CallRecord:
    return new_record("acme", "line-1", "prv_1", "inst-1", "C1")


def replay(events: list[tuple[int, CallEventData]]) -> CallRecord:
    record = fresh()
    for seq, data in events:
        record = apply_event(record, data, seq)
    return record


def test_given_an_incoming_offer_then_the_call_rings_and_holds_a_slot_without_a_limit_check() -> None:
    record = replay(LIFECYCLE[:1])

    occupant = record.occupant()
    assert occupant is not None
    assert (occupant.kind, occupant.state, occupant.direction) == ("call", "ringing", "incoming")


def test_given_answered_then_the_call_is_connecting_and_still_holds_its_slot() -> None:
    record = replay(LIFECYCLE[:2])

    assert record.state == "connecting"
    assert record.occupant() is not None


def test_given_an_end_then_older_events_never_reopen_and_the_first_reason_stays() -> None:
    ended = replay(LIFECYCLE[:6])
    late = apply_event(ended, event("active", "active"), 3)
    other_end = apply_event(late, event("ended", "ended", endReason="timeout", endedBy="local"), 9)

    assert other_end.state == "ended"
    assert (other_end.end_reason, other_end.ended_by) == ("hangup", "remote")
    assert other_end.occupant() is None


def test_given_video_events_then_the_latest_by_seq_wins_and_no_second_slot() -> None:
    record = replay([LIFECYCLE[0], LIFECYCLE[2], LIFECYCLE[4], LIFECYCLE[3]])  # video off (5) before on (4)

    assert record.video is False
    assert record.occupant() is not None


def test_given_a_recording_event_then_only_the_recording_changes() -> None:
    active = replay(LIFECYCLE[:3])
    recorded = apply_event(active, LIFECYCLE[6][1], 7)

    assert (recorded.recording_status, recorded.recording_url) == ("ready", "https://rec.example/1")
    assert recorded.state == "active"  # the event says ended, but a recording does not end a call
    assert recorded.occupant() == active.occupant()


def test_given_a_provider_read_older_than_what_we_know_then_it_changes_nothing() -> None:
    active = replay(LIFECYCLE[:3])
    stale = ProviderCall(call_id="C1", state="ringing", direction="incoming", peer=PEER)

    assert apply_provider_call(active, stale, "reconcile").state == "active"


def test_given_a_provider_read_with_the_end_then_the_call_ends_with_its_real_reason() -> None:
    active = replay(LIFECYCLE[:3])
    ended = ProviderCall(call_id="C1", state="ended", direction="incoming", end_reason="network", ended_by="remote")

    record = apply_provider_call(active, ended, "reconcile")

    assert (record.state, record.end_reason, record.end_origin) == ("ended", "network", "reconcile")
    assert record.occupant() is None


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=len(LIFECYCLE)).flatmap(
        lambda size: st.lists(st.sampled_from(LIFECYCLE[:size]), min_size=size, max_size=3 * size).filter(
            lambda chosen: {seq for seq, _ in chosen} == {seq for seq, _ in LIFECYCLE[:size]}
        )
    )
)
def test_any_permutation_with_duplicates_reaches_the_in_order_record(events: list[tuple[int, CallEventData]]) -> None:
    size = max(seq for seq, _ in events)
    expected = replay(LIFECYCLE[:size])

    record = replay(events)

    assert record.same_content(expected.model_copy(update={"last_seq": record.last_seq}))
    assert record.occupant() == expected.occupant()


def attempt(attendant: str = "ana") -> DialAttempt:
    return DialAttempt(id="res_1", tenant="acme", instance="line-1", attendant=attendant, to=PEER)


def test_given_a_bound_outgoing_call_then_the_dialer_owns_it() -> None:
    record = bind_to_attempt(fresh().model_copy(update={"state": "ringing"}), attempt())

    assert (record.owner, record.reservation_id, record.holds_slot) == ("ana", "res_1", True)


def test_given_an_owned_call_then_another_attendant_cannot_take_it_but_the_owner_can_transfer() -> None:
    owned = bind_to_attempt(fresh().model_copy(update={"state": "active"}), attempt())

    with pytest.raises(CallOwned):
        claim(owned, "bob", transfer_to=None, is_admin=False)
    with pytest.raises(Forbidden):
        claim(owned, "bob", transfer_to="bob", is_admin=False)
    assert claim(owned, "ana", transfer_to=None, is_admin=False).owner == "ana"
    assert claim(owned, "ana", transfer_to="bob", is_admin=False).owner == "bob"
    assert claim(owned, "boss", transfer_to="carol", is_admin=True).owner == "carol"


def test_reservation_ids_are_stable_per_attendant_and_key() -> None:
    assert reservation_id("acme", "line-1", "ana", "k") == reservation_id("acme", "line-1", "ana", "k")
    assert reservation_id("acme", "line-1", "ana", "k") != reservation_id("acme", "line-1", "bob", "k")
    assert reservation_id("acme", "line-1", "ana", "k") != reservation_id("acme", "line-2", "ana", "k")


def test_the_call_view_names_who_calls_whom_from_the_first_event_that_says_it() -> None:
    from switchboard.lines.schemas import OccupantView  # noqa: PLC0415 - the view the panel reads

    offer = event("offer", "ringing").model_copy(update={"from_": f"+{PEER}"})
    record = apply_event(fresh(), offer, 1)
    record = apply_event(record, event("answered", "connecting").model_copy(update={"from_": "5511000000000"}), 2)
    occupant = record.occupant()

    assert occupant is not None and (occupant.from_number, occupant.to_number) == (PEER, "5511900000000")
    view = OccupantView.of(occupant).model_dump(by_alias=True)
    assert (view["from"], view["to"]) == (PEER, "5511900000000")
    dialled = DialAttempt(id="res_9", tenant="acme", instance="line-1", attendant="ana", to="+55 11 97777-6666")
    assert dialled.occupant().to_number == "5511977776666"
    assert bind_to_attempt(fresh(), dialled).to_number == "5511977776666"

"""Call admission and lifecycle: the limit counts in + out, voice or video, one slot per call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from devstack.simulator import SimulatorControl
from switchboard.core.errors import ProviderDisconnected, ProviderLineBusy, ProviderRejected
from switchboard.providers.base import ProviderTarget
from switchboard.providers.wuzapi import WuzapiClient
from tests.simulator.conftest import InstanceFactory, WebhookReceiver

PEER = "5511988887777"
WAIT_SECONDS = 10.0


def _instance_with_limit(wuzapi: WuzapiClient, make_instance: InstanceFactory, limit: int) -> ProviderTarget:
    target = make_instance()
    wuzapi.set_call_settings(target, limit)
    return target


def _incoming_is_busy(control: SimulatorControl, target: ProviderTarget) -> bool:
    try:
        control.incoming_call(target.provider_instance_id, PEER)
    except httpx.HTTPStatusError as refused:
        return bool(refused.response.status_code == 409 and refused.response.json()["error"] == "line_busy")
    return False


def test_the_same_idempotency_key_returns_the_same_call(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = _instance_with_limit(wuzapi, make_instance, 2)

    first = wuzapi.dial(target, PEER, False, "dial-1")
    again = wuzapi.dial(target, PEER, False, "dial-1")

    assert first.call_id == again.call_id
    assert [call.call_id for call in wuzapi.active_calls(target)] == [first.call_id]


def test_a_key_reused_for_another_dial_is_rejected(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = _instance_with_limit(wuzapi, make_instance, 2)
    wuzapi.dial(target, PEER, False, "dial-1")

    with pytest.raises(ProviderRejected):
        wuzapi.dial(target, "5511000000000", False, "dial-1")


def test_a_dial_at_the_limit_is_line_busy(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = make_instance()
    wuzapi.dial(target, PEER, False, "dial-1")

    with pytest.raises(ProviderLineBusy):
        wuzapi.dial(target, PEER, False, "dial-2")


def test_incoming_outgoing_and_video_calls_take_one_slot_each(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = _instance_with_limit(wuzapi, make_instance, 3)
    control.incoming_call(target.provider_instance_id, PEER)
    wuzapi.dial(target, PEER, False, "voice")
    video = wuzapi.dial(target, PEER, True, "video")

    with pytest.raises(ProviderLineBusy):
        wuzapi.dial(target, PEER, False, "fourth")
    assert _incoming_is_busy(control, target)
    assert [call.video for call in wuzapi.active_calls(target)] == [False, False, True]
    assert wuzapi.get_call(target, video.call_id) is not None


def test_an_ended_call_frees_its_slot_once_and_keeps_its_first_reason(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    call_id = control.incoming_call(target.provider_instance_id, PEER)
    control.call_action(target.provider_instance_id, call_id, "end", reason="rejected", endedBy="remote")

    wuzapi.hangup(target, call_id)

    ended = wuzapi.get_call(target, call_id)
    assert ended is not None
    assert (ended.state, ended.end_reason, ended.ended_by) == ("ended", "rejected", "remote")
    assert wuzapi.dial(target, PEER, False, "after-end").call_id != call_id


def test_hangup_ends_the_call_and_it_stays_in_the_history(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = make_instance()
    call_id = wuzapi.dial(target, PEER, False, "dial-1").call_id

    wuzapi.hangup(target, call_id)

    assert wuzapi.active_calls(target) == []
    [ended] = wuzapi.call_history(target)
    assert (ended.call_id, ended.state, ended.end_reason, ended.ended_by) == (
        call_id,
        "ended",
        "hangup",
        "local",
    )
    assert (ended.direction, ended.peer) == ("outgoing", PEER)


def test_stopping_video_keeps_the_slot(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = make_instance()
    call_id = wuzapi.dial(target, PEER, True, "video").call_id

    wuzapi.stop_video(target, call_id)

    [call] = wuzapi.active_calls(target)
    assert (call.call_id, call.video) == (call_id, False)
    with pytest.raises(ProviderLineBusy):
        wuzapi.dial(target, PEER, False, "second")


def test_recording_events_neither_take_nor_free_a_slot(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    call_id = wuzapi.dial(target, PEER, False, "dial-1").call_id
    control.call_action(target.provider_instance_id, call_id, "recording_ready", url="https://rec.example/1")

    with pytest.raises(ProviderLineBusy):
        wuzapi.dial(target, PEER, False, "second")
    assert [call.call_id for call in wuzapi.active_calls(target)] == [call_id]


def test_lowering_the_limit_keeps_live_calls_and_blocks_new_ones(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = _instance_with_limit(wuzapi, make_instance, 2)
    first = control.incoming_call(target.provider_instance_id, PEER)
    second = wuzapi.dial(target, PEER, False, "dial-1").call_id

    wuzapi.set_call_settings(target, 1)

    assert {call.call_id for call in wuzapi.active_calls(target)} == {first, second}
    with pytest.raises(ProviderLineBusy):
        wuzapi.dial(target, PEER, False, "dial-2")
    wuzapi.hangup(target, first)
    with pytest.raises(ProviderLineBusy):
        wuzapi.dial(target, PEER, False, "dial-3")
    wuzapi.hangup(target, second)
    assert wuzapi.dial(target, PEER, False, "dial-4").call_id


def test_a_dial_while_disconnected_is_refused_as_disconnected(
    wuzapi: WuzapiClient, make_instance: InstanceFactory
) -> None:
    target = make_instance(connected=False)

    with pytest.raises(ProviderDisconnected):
        wuzapi.dial(target, PEER, False, "dial-1")


def test_an_unknown_call_is_none(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    assert wuzapi.get_call(make_instance(), "NO-SUCH-CALL") is None


def test_the_call_lifecycle_is_published_as_call_events(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    target = make_instance()
    instance_id = target.provider_instance_id
    call_id = control.incoming_call(instance_id, PEER, video=True)
    control.call_action(instance_id, call_id, "answer")
    control.call_action(instance_id, call_id, "active")
    wuzapi.stop_video(target, call_id)
    control.call_action(instance_id, call_id, "end", reason="hangup", endedBy="remote")

    deliveries = receiver.wait_for(instance_id, 5, event="call")

    data = [delivery.envelope["data"] for delivery in deliveries]
    assert [(d["type"], d["state"]) for d in data] == [
        ("offer", "ringing"),
        ("answered", "connecting"),
        ("active", "active"),
        ("video", "active"),
        ("ended", "ended"),
    ]
    assert {d["callId"] for d in data} == {call_id}
    assert (data[0]["direction"], data[0]["from"], data[0]["video"]) == ("incoming", PEER, True)
    assert (data[-1]["endReason"], data[-1]["endedBy"]) == ("hangup", "remote")
    assert [delivery.envelope["seq"] for delivery in deliveries] == sorted(d.envelope["seq"] for d in deliveries)


def test_concurrent_dials_admit_exactly_the_limit(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = _instance_with_limit(wuzapi, make_instance, 2)

    def dial(key: str) -> str:
        try:
            return wuzapi.dial(target, PEER, False, key).call_id
        except ProviderLineBusy:
            return "line_busy"

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(dial, [f"dial-{n}" for n in range(8)]))

    assert outcomes.count("line_busy") == 6
    assert len(wuzapi.active_calls(target)) == 2


def test_a_dial_in_flight_holds_an_unlisted_reservation(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.hold_dials(True)
    results: dict[str, str] = {}
    dials = [
        threading.Thread(target=lambda n=n: results.update({n: wuzapi.dial(target, PEER, False, "key").call_id}))
        for n in ("first", "repeat")
    ]
    dials[0].start()
    _wait_until(lambda: control.instance(target.provider_instance_id)["reservations"] == 1)
    dials[1].start()

    assert wuzapi.active_calls(target) == []
    assert _incoming_is_busy(control, target)
    control.hold_dials(False)
    for dial in dials:
        dial.join()
    assert results["first"] == results["repeat"]
    assert [call.call_id for call in wuzapi.active_calls(target)] == [results["first"]]


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)

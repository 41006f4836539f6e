"""The calls server's per-call media: `POST /call/{callId}/attach` and its WebSocket endpoint."""

from __future__ import annotations

import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from devstack.simulator import Simulator, SimulatorControl
from switchboard.core.errors import CallEnded, ProviderRejected, UnsupportedByProvider
from switchboard.providers.base import ProviderTarget
from switchboard.providers.wuzapi import WuzapiClient
from tests.simulator.conftest import FlavourFactory, InstanceFactory

CALLER = "5511977776666"


class Clock:
    """The media sessions' clock, moved by hand: no test waits for a window to pass."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(simulator: Simulator, monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(simulator.app.media, "clock", fake)
    return fake


def wait_detached(simulator: Simulator, target: ProviderTarget, call_id: str) -> None:
    """Until the server has recorded the client's socket as gone (the retention window runs from that
    record, a moment after the socket stops being connected)."""
    deadline = time.monotonic() + 5
    while (view := simulator.app.media.view(target.provider_instance_id, call_id)) and not view["detached"]:
        assert time.monotonic() < deadline, "the server never saw the socket close"
        time.sleep(0.01)


def test_two_calls_media_sockets_never_receive_each_others_frames(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance(callsMaxConcurrent=2)
    first = control.incoming_call(target.provider_instance_id, CALLER)
    second = control.incoming_call(target.provider_instance_id, "5511966665555")

    with (
        connect(wuzapi.attach_media(target, first).media_url) as one,
        connect(wuzapi.attach_media(target, second).media_url) as two,
    ):
        one.send("hello")
        two.send(b"\x00\x01")
        one.send("again")
        assert two.recv(timeout=5) == second.encode() + b":\x00\x01"
        assert one.recv(timeout=5) == f"{first}:hello"
        assert one.recv(timeout=5) == f"{first}:again"
        with pytest.raises(TimeoutError):
            two.recv(timeout=0.2)  # nothing of the first call ever reaches the second


def test_a_ticket_connects_once_and_only_for_a_live_call(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    call_id = control.incoming_call(target.provider_instance_id, CALLER)
    attachment = wuzapi.attach_media(target, call_id)
    assert attachment.expires_at.endswith("Z") and attachment.resumed is False

    with connect(attachment.media_url):
        assert control.media_session(target.provider_instance_id, call_id) == {
            "sessionId": attachment.session_id,
            "connected": True,
            "detached": False,
        }
        with pytest.raises(InvalidStatus) as reused:
            connect(attachment.media_url)
        assert reused.value.response.status_code == 404

    control.call_action(target.provider_instance_id, call_id, "end")
    with pytest.raises(CallEnded):
        wuzapi.attach_media(target, call_id)
    with pytest.raises(ProviderRejected) as unknown:
        wuzapi.attach_media(target, "NO-SUCH-CALL")
    assert unknown.value.details["provider_code"] == "call_not_found"
    assert control.media_session(target.provider_instance_id, "NO-SUCH-CALL") is None


def test_a_reattach_within_30_s_of_a_drop_resumes_the_session_and_later_it_is_released(
    wuzapi: WuzapiClient,
    make_instance: InstanceFactory,
    control: SimulatorControl,
    simulator: Simulator,
    clock: Clock,
) -> None:
    target = make_instance()
    call_id = control.incoming_call(target.provider_instance_id, CALLER)
    first = wuzapi.attach_media(target, call_id)
    with connect(first.media_url) as socket:
        socket.send("x")
        socket.recv(timeout=5)
    wait_detached(simulator, target, call_id)

    clock.now += 29
    again = wuzapi.attach_media(target, call_id)
    assert (again.session_id, again.resumed) == (first.session_id, True)
    assert again.detached_for_seconds == pytest.approx(29, abs=1)

    with connect(again.media_url):
        pass
    wait_detached(simulator, target, call_id)
    clock.now += 31  # its ticket was used, and 31 s passed since that socket dropped
    fresh = wuzapi.attach_media(target, call_id)
    assert fresh.session_id != first.session_id and fresh.resumed is False
    assert control.instance(target.provider_instance_id)["calls"][0]["state"] == "ringing"  # the call lives on


def test_resume_false_starts_a_new_session_and_closes_the_old_socket(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    call_id = control.incoming_call(target.provider_instance_id, CALLER)
    first = wuzapi.attach_media(target, call_id)
    with connect(first.media_url) as old:
        old.send("x")
        old.recv(timeout=5)
        fresh = wuzapi.attach_media(target, call_id, resume=False)
        assert fresh.session_id != first.session_id
        with connect(fresh.media_url) as new:
            new.send("y")
            assert new.recv(timeout=5) == f"{call_id}:y"
        with pytest.raises(ConnectionClosed):  # the provider closed the released session's socket
            old.recv(timeout=5)


def test_attach_needs_the_instance_token(simulator: Simulator, make_instance: InstanceFactory) -> None:
    target = make_instance()
    answer = httpx.post(f"{simulator.base_url}/call/ANY/attach", headers={"token": "wrong"})
    assert (answer.status_code, answer.json()["error"]) == (401, "unauthorized")
    assert target.instance_token is not None
    assert target.instance_token not in answer.text


def test_a_server_without_media_is_not_supported(wuzapi: WuzapiClient, make_flavoured: FlavourFactory) -> None:
    plain = make_flavoured("wuzapi")
    target: ProviderTarget = plain.target()
    with pytest.raises(UnsupportedByProvider) as refused:
        wuzapi.attach_media(target, "CALL")
    assert refused.value.code == "not_supported"

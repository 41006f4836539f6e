"""Call media attachment through the API: only the owner gets a media URL, a WebSocket at the
provider simulator that carries that call's frames and nothing else."""

from __future__ import annotations

import time
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.catalog.domain import Instance
from switchboard.core.identity import Scope
from switchboard.providers.evolution import EvolutionClient
from tools.support.api import Client
from tools.support.aws import AwsResources
from tools.support.builders import admin
from tools.support.connections import Connection, call_events, deliver, register

CALLER = "5511955554444"


class Clock:
    """The simulator's media clock, moved by hand: no test waits for a retention window."""

    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def key_for(attendant: str) -> str:
    created = bootstrap.catalog_service().create_api_key(
        admin(), tenant="acme", name=attendant, environment="LIVE", scopes=[Scope.AGENT], attendant_id=attendant
    )
    return created.plaintext


def ringing_call(control: SimulatorControl, connection: Connection, caller: str = CALLER) -> str:
    call_id = control.incoming_call(connection.sim_id, caller)
    deliver(connection, *call_events(control, connection, call_id))
    return call_id


def claim(client: Client, connection: Connection, call_id: str, key: str) -> None:
    answer = client.post(f"/api/calls/{connection.name}/{call_id}/claim", key=key)
    assert answer.status == 200, answer.body


def attach(client: Client, connection: Connection, call_id: str, key: str) -> Any:
    return client.post(f"/api/calls/{connection.name}/{call_id}/attach", key=key)


def session_of(simulator: Simulator, connection: Connection, call_id: str) -> dict[str, Any] | None:
    return simulator.app.media.view(connection.sim_id, call_id)


def wait_detached(simulator: Simulator, connection: Connection, call_id: str) -> None:
    """Until the simulator has recorded the browser's socket as gone: the retention window runs from
    that record, which comes a moment after the socket stops being connected."""
    deadline = time.monotonic() + 5
    while (view := session_of(simulator, connection, call_id)) and not view["detached"]:
        assert time.monotonic() < deadline, "the simulator never saw the socket close"
        time.sleep(0.01)


@pytest.fixture
def clock(simulator: Simulator, monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(simulator.app.media, "clock", fake)
    return fake


def test_the_owner_gets_a_media_url_and_two_calls_never_hear_each_other(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    ana, bob = key_for("ana"), key_for("bob")
    first, second = ringing_call(control, connection), ringing_call(control, connection, "5511944443333")
    claim(client, connection, first, ana)
    claim(client, connection, second, bob)

    one, two = attach(client, connection, first, ana), attach(client, connection, second, bob)

    assert one.status == 200, one.body
    assert sorted(one.json()) == ["expiresAt", "mediaUrl", "resumed"]
    assert connection.sim_token not in one.body.decode()
    with connect(one.json()["mediaUrl"]) as ana_socket, connect(two.json()["mediaUrl"]) as bob_socket:
        ana_socket.send("ana speaking")
        bob_socket.send("bob speaking")
        assert ana_socket.recv(timeout=5) == f"{first}:ana speaking"
        assert bob_socket.recv(timeout=5) == f"{second}:bob speaking"
        with pytest.raises(TimeoutError):
            ana_socket.recv(timeout=0.2)  # bob's frames never reach ana's call


def test_only_the_owner_of_a_live_claimed_call_gets_its_media(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    ana, bob = key_for("ana"), key_for("bob")
    call_id = ringing_call(control, connection)

    unclaimed = attach(client, connection, call_id, ana)
    claim(client, connection, call_id, ana)
    other = attach(client, connection, call_id, bob)
    control.call_action(connection.sim_id, call_id, "end")
    deliver(connection, *call_events(control, connection, call_id))
    ended = attach(client, connection, call_id, ana)
    unknown = attach(client, connection, "NO-SUCH-CALL", ana)

    assert (unclaimed.status, unclaimed.json()["error"]) == (409, "call_not_claimed")
    assert (other.status, other.json()["error"]) == (403, "not_call_owner")
    assert (ended.status, ended.json()["error"]) == (409, "call_ended")
    assert unknown.status == 404
    assert session_of(simulator, connection, call_id) is None  # nobody was ever given its media


def test_a_provider_failure_is_an_error_not_an_attachment(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    ana = key_for("ana")
    call_id = ringing_call(control, connection)
    claim(client, connection, call_id, ana)
    control.fault("/call/{call_id}/attach", "error500")

    failed = attach(client, connection, call_id, ana)

    assert (failed.status, failed.json()["error"]) == (502, "provider_unavailable")
    assert "mediaUrl" not in failed.json()
    assert attach(client, connection, call_id, ana).status == 200  # the next try works


def test_a_provider_without_call_media_is_not_supported(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = register(simulator, control, limit=1)
    ana = key_for("ana")
    call_id = ringing_call(control, connection)
    claim(client, connection, call_id, ana)
    targets = bootstrap.targets()
    real_target_for = targets.target_for
    evolution = EvolutionClient(local_mode=True)

    def messaging_only(instance: Instance) -> Any:
        return evolution, real_target_for(instance)[1]

    monkeypatch.setattr(targets, "target_for", messaging_only)

    refused = attach(client, connection, call_id, ana)

    assert (refused.status, refused.json()["error"]) == (422, "not_supported")


def test_a_reattach_within_25_s_of_a_drop_resumes_the_same_session_and_later_starts_a_new_one(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl, clock: Clock
) -> None:
    connection = register(simulator, control, limit=1)
    ana = key_for("ana")
    call_id = ringing_call(control, connection)
    claim(client, connection, call_id, ana)
    first = attach(client, connection, call_id, ana).json()
    with connect(first["mediaUrl"]) as socket:
        socket.send("x")
        socket.recv(timeout=5)
    wait_detached(simulator, connection, call_id)
    session = session_of(simulator, connection, call_id)

    clock.now += 24
    soon = attach(client, connection, call_id, ana).json()
    assert soon["resumed"] is True
    resumed = session_of(simulator, connection, call_id)
    assert session is not None and resumed is not None and resumed["sessionId"] == session["sessionId"]
    with connect(soon["mediaUrl"]) as socket:
        socket.send("back")
        assert socket.recv(timeout=5) == f"{call_id}:back"
    wait_detached(simulator, connection, call_id)

    clock.now += 26  # the provider would still resume it (30 s); we no longer do (25 s)
    late = attach(client, connection, call_id, ana).json()
    assert late["resumed"] is False
    fresh = session_of(simulator, connection, call_id)
    assert fresh is not None and session is not None and fresh["sessionId"] != session["sessionId"]


def test_after_a_transfer_the_new_owner_gets_a_new_session_and_the_old_socket_is_closed(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    ana, bob = key_for("ana"), key_for("bob")
    call_id = ringing_call(control, connection)
    claim(client, connection, call_id, ana)
    ana_media = attach(client, connection, call_id, ana).json()
    with connect(ana_media["mediaUrl"]) as ana_socket:
        ana_socket.send("x")
        ana_socket.recv(timeout=5)
        transfer = client.post(
            f"/api/calls/{connection.name}/{call_id}/claim", key=ana, json_body={"transferTo": "bob"}
        )
        assert transfer.status == 200, transfer.body

        bob_media = attach(client, connection, call_id, bob)
        refused = attach(client, connection, call_id, ana)

        assert bob_media.status == 200 and bob_media.json()["resumed"] is False
        assert (refused.status, refused.json()["error"]) == (403, "not_call_owner")
        with pytest.raises(ConnectionClosed):
            ana_socket.recv(timeout=5)

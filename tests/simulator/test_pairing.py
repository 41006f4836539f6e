"""Pairing a phone on the simulator's wuzapi and Evolution servers, through switchboard's own
clients: a session started without a linked phone shows codes that the server replaces as they
expire (and gives up after its last one), the phone scanning one connects the session and the
server posts its connected webhook, a logout unlinks it."""

from __future__ import annotations

import json

import pytest

from devstack.simulator import SimulatorControl
from switchboard.core.errors import ProviderDisconnected
from switchboard.providers.evolution import EvolutionClient
from switchboard.providers.wuzapi import WEBHOOK_EVENTS, WuzapiClient
from tests.simulator.conftest import FlavourFactory, WebhookReceiver


@pytest.fixture(scope="module")
def evolution() -> EvolutionClient:
    return EvolutionClient(local_mode=True, read_timeout=5.0)


def test_a_wuzapi_session_without_a_phone_shows_codes_until_one_is_scanned(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver, wuzapi: WuzapiClient
) -> None:
    instance = make_flavoured("wuzapi", connected=False, paired=False)
    target = instance.target()
    assert wuzapi.pairing(target).state == "not_started"

    first = wuzapi.start_session(target)

    assert first.state == "code" and first.qr_code is not None
    assert wuzapi.pairing(target).qr_code == first.qr_code  # the same code while it is shown
    control.expire_code(instance.id)
    second = wuzapi.pairing(target)
    assert second.state == "code" and second.qr_code != first.qr_code
    # The connect subscribed the events switchboard maps (the codes' `QR` is not one of them).
    assert control.instance(instance.id)["webhook"]["liveEvents"] == list(WEBHOOK_EVENTS)

    control.scan(instance.id)

    assert wuzapi.pairing(target).state == "paired"
    assert wuzapi.instance_status(target).connected
    [connected] = receiver.wait_for(instance.id, 1)
    assert json.loads(connected.body)["type"] == "Connected"
    wuzapi.log_out(target)
    assert wuzapi.pairing(target).state == "not_started"
    assert not wuzapi.instance_status(target).connected
    with pytest.raises(ProviderDisconnected):
        wuzapi.log_out(target)


def test_a_wuzapi_code_series_runs_out_after_six_codes_and_the_client_is_dropped(
    make_flavoured: FlavourFactory, control: SimulatorControl, wuzapi: WuzapiClient
) -> None:
    instance = make_flavoured("wuzapi", subscribed=False, connected=False, paired=False)
    wuzapi.start_session(instance.target())
    codes = set()
    for _ in range(5):
        codes.add(wuzapi.pairing(instance.target()).qr_code)
        control.expire_code(instance.id)
    codes.add(wuzapi.pairing(instance.target()).qr_code)
    assert len(codes) == 6

    control.expire_code(instance.id)

    assert wuzapi.pairing(instance.target()).state == "not_started"
    assert wuzapi.start_session(instance.target()).state == "code"  # a new series


def test_an_evolution_instance_counts_its_codes_and_posts_its_connection_when_scanned(
    make_flavoured: FlavourFactory,
    control: SimulatorControl,
    receiver: WebhookReceiver,
    evolution: EvolutionClient,
) -> None:
    instance = make_flavoured("evolution", connected=False, paired=False)
    target = instance.target()

    first = evolution.start_session(target)
    control.expire_code(instance.id)
    second = evolution.pairing(target)

    assert (first.state, first.count, second.count) == ("code", 1, 2)
    assert first.qr_code != second.qr_code
    control.scan(instance.id)
    assert evolution.pairing(target).state == "paired"
    [opened] = receiver.wait_for(instance.id, 1, event="connection.update")
    assert json.loads(opened.body)["data"]["state"] == "open"

    evolution.log_out(target)

    updates = receiver.wait_for(instance.id, 2, event="connection.update")
    assert json.loads(updates[-1].body)["data"] == {
        "instance": instance.id,
        "state": "close",
        "statusReason": 401,
    }
    with pytest.raises(ProviderDisconnected):
        evolution.log_out(target)


def test_a_scan_without_a_code_shown_is_refused(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("wuzapi", subscribed=False, connected=False, paired=False)

    with pytest.raises(Exception, match="409"):
        control.scan(instance.id)

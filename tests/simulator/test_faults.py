"""Injected faults and the adapter's error mapping: was it applied, and may a retry help?"""

from __future__ import annotations

import socket

import pytest

from devstack.simulator import SimulatorControl
from switchboard.core.errors import (
    ProviderDisconnected,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
)
from switchboard.providers.base import ProviderTarget
from switchboard.providers.wuzapi import WuzapiClient
from tests.simulator.conftest import InstanceFactory

PEER = "5511988887777"


def _sent_by(control: SimulatorControl, target: ProviderTarget) -> list[str]:
    return [m["body"] for m in control.sent() if m["instance"] == target.provider_instance_id]


def test_a_timeout_is_ambiguous_for_the_client_but_not_applied(
    impatient_wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.fault("/chat/send/text", "timeout")

    with pytest.raises(ProviderTimeout):
        impatient_wuzapi.send_text(target, PEER, "hello", "key-1")
    assert _sent_by(control, target) == []


def test_a_dropped_response_is_a_timeout_but_the_message_was_sent(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.fault("/chat/send/text", "drop_response")

    with pytest.raises(ProviderTimeout):
        wuzapi.send_text(target, PEER, "hello", "key-1")
    assert _sent_by(control, target) == ["hello"]


def test_retrying_a_send_after_a_dropped_response_sends_twice(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.fault("/chat/send/text", "drop_response")
    with pytest.raises(ProviderTimeout):
        wuzapi.send_text(target, PEER, "hello", "key-1")

    wuzapi.send_text(target, PEER, "hello", "key-1")

    assert _sent_by(control, target) == ["hello", "hello"]


def test_a_dropped_dial_is_applied_and_the_same_key_recovers_the_call(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.fault("/call/dial", "drop_response")

    with pytest.raises(ProviderTimeout):
        wuzapi.dial(target, PEER, False, "dial-1")
    [live] = wuzapi.active_calls(target)

    assert wuzapi.dial(target, PEER, False, "dial-1").call_id == live.call_id
    assert len(wuzapi.active_calls(target)) == 1


def test_an_error_500_is_unavailable_and_not_applied(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.fault("/call/dial", "error500")

    with pytest.raises(ProviderUnavailable):
        wuzapi.dial(target, PEER, False, "dial-1")
    assert wuzapi.active_calls(target) == []


def test_a_fault_applies_to_the_next_n_requests_only(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.fault("/instance/call-settings", "error500", times=2)

    for _ in range(2):
        with pytest.raises(ProviderUnavailable):
            wuzapi.set_call_settings(target, 2)

    assert wuzapi.set_call_settings(target, 2).calls_config_version == 1


def test_a_send_while_disconnected_is_refused_as_disconnected(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance(kind="messages", connected=False)

    with pytest.raises(ProviderDisconnected):
        wuzapi.send_text(target, PEER, "hello", "key-1")
    assert _sent_by(control, target) == []


def test_a_wrong_token_is_rejected_and_never_echoed(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = make_instance().model_copy(update={"instance_token": "not-the-token-123"})

    with pytest.raises(ProviderRejected) as refused:
        wuzapi.instance_status(target)
    assert "not-the-token-123" not in str(refused.value)
    assert target.base_url not in str(refused.value)


def test_a_closed_port_is_unavailable(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    target = make_instance().model_copy(update={"base_url": f"http://127.0.0.1:{closed_port}"})

    with pytest.raises(ProviderUnavailable):
        wuzapi.instance_status(target)

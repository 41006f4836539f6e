"""Injected faults and the adapter's error mapping: was it applied, and may a retry help?"""

from __future__ import annotations

import socket

import httpx
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
from tests.simulator.conftest import FlavourFactory, FlavourInstance, InstanceFactory

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


def test_retrying_a_send_after_a_dropped_response_resends_the_same_message(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    """The key is the WhatsApp message id: the recipient's phone shows one message."""
    target = make_instance()
    control.fault("/chat/send/text", "drop_response")
    with pytest.raises(ProviderTimeout):
        wuzapi.send_text(target, PEER, "hello", "key-1")

    again = wuzapi.send_text(target, PEER, "hello", "key-1")

    [message] = [m for m in control.sent() if m["instance"] == target.provider_instance_id]
    assert (message["body"], message["id"], message["resends"]) == ("hello", again.provider_message_id, 1)


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


# --- faults on the real-server flavours, in each server's error shape ------------------------


def _flavour_send(instance: FlavourInstance, timeout: float = 5.0) -> httpx.Response:
    if instance.flavour == "evolution":
        url = f"{instance.base_url}/message/sendText/{instance.id}"
        return httpx.post(url, headers={"apikey": instance.token}, json={"number": PEER, "text": "hi"}, timeout=timeout)
    if instance.flavour == "meta":
        url = f"{instance.base_url}/v21.0/{instance.meta_phone_id}/messages"
        body = {"messaging_product": "whatsapp", "to": PEER, "type": "text", "text": {"body": "hi"}}
        return httpx.post(url, headers={"Authorization": f"Bearer {instance.token}"}, json=body, timeout=timeout)
    url = f"{instance.base_url}/chat/send/text"
    return httpx.post(url, headers={"token": instance.token}, json={"Phone": PEER, "Body": "hi"}, timeout=timeout)


SEND_ROUTES = {
    "wuzapi": "/wuzapi/chat/send/text",
    "evolution": "/evolution/message/sendText/{instance}",
    "meta": "/meta/{version}/{phone_number_id}/messages",
}


def _sent_count(control: SimulatorControl, instance: FlavourInstance) -> int:
    return len([m for m in control.sent() if m["instance"] == instance.id])


@pytest.mark.parametrize("flavour", sorted(SEND_ROUTES))
def test_error500_is_the_servers_error_and_not_applied(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=False)
    control.fault(SEND_ROUTES[flavour], "error500")

    answer = _flavour_send(instance)

    assert answer.status_code == 500
    payload = answer.json()
    if flavour == "wuzapi":
        assert (payload["code"], payload["success"]) == (500, False)
    elif flavour == "evolution":
        assert (payload["status"], payload["error"]) == (500, "Internal Server Error")
    else:
        assert payload["error"]["code"] == 2
    assert _sent_count(control, instance) == 0
    assert _flavour_send(instance).status_code in (200, 201)  # the next request is served


@pytest.mark.parametrize("flavour", sorted(SEND_ROUTES))
def test_a_timeout_is_not_applied(flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured(flavour, subscribed=False)
    control.fault(SEND_ROUTES[flavour], "timeout")

    with pytest.raises(httpx.ReadTimeout):
        _flavour_send(instance, timeout=0.3)

    assert _sent_count(control, instance) == 0


@pytest.mark.parametrize("flavour", sorted(SEND_ROUTES))
def test_a_dropped_response_was_applied(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=False)
    control.fault(SEND_ROUTES[flavour], "drop_response")

    with pytest.raises(httpx.RemoteProtocolError):
        _flavour_send(instance)

    assert _sent_count(control, instance) == 1


def test_a_fault_on_one_server_leaves_the_others_alone(
    make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    calls, plain = make_flavoured("calls", subscribed=False), make_flavoured("wuzapi", subscribed=False)
    control.fault("/wuzapi/chat/send/text", "error500")

    assert _flavour_send(calls).status_code == 200
    assert _flavour_send(plain).status_code == 500


def test_an_unknown_route_cannot_be_faulted(control: SimulatorControl) -> None:
    with pytest.raises(httpx.HTTPStatusError) as refused:
        control.fault("/wuzapi/call/dial", "error500")

    assert refused.value.response.json()["error"] == "unknown_route"

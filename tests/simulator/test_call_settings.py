"""The calls-capable server's call-limit contract, driven through the wuzapi adapter."""

from __future__ import annotations

import httpx
import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard.core.errors import ProviderRejected
from switchboard.providers.wuzapi import WuzapiClient
from tests.simulator.conftest import InstanceFactory, WebhookReceiver

MAX_VERSION = 2**63 - 1


def test_capabilities_announce_calls_and_the_range(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    capabilities = wuzapi.capabilities(make_instance())

    assert capabilities.calls and capabilities.calls_per_instance_limit
    assert capabilities.calls_settings_webhook and capabilities.calls_video
    assert (capabilities.calls_min, capabilities.calls_max, capabilities.calls_max_concurrent) == (1, 8, 1)


def test_a_capability_turned_off_is_announced_off(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    control.set_capabilities(calls_video=False)

    assert wuzapi.capabilities(make_instance()).calls_video is False


@pytest.mark.parametrize("limit", [1, 2, 8])
def test_every_limit_from_one_to_eight_is_accepted(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, limit: int
) -> None:
    status = wuzapi.set_call_settings(make_instance(), limit)

    assert status.calls_max_concurrent == limit


@pytest.mark.parametrize("limit", [0, 9, -1])
def test_a_limit_outside_one_to_eight_is_rejected(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, limit: int
) -> None:
    target = make_instance()

    with pytest.raises(ProviderRejected):
        wuzapi.set_call_settings(target, limit)
    assert wuzapi.instance_status(target).calls_config_version == 0


@pytest.mark.parametrize("value", [True, 2.0, "2", None])
def test_a_limit_that_is_not_an_integer_is_rejected(
    simulator: Simulator, make_instance: InstanceFactory, value: object
) -> None:
    target = make_instance()
    assert target.instance_token is not None

    response = httpx.post(
        f"{simulator.base_url}/instance/call-settings",
        headers={"token": target.instance_token},
        json={"callsMaxConcurrent": value},
    )

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_every_accepted_post_increments_the_version_even_with_the_same_value(
    wuzapi: WuzapiClient, make_instance: InstanceFactory
) -> None:
    target = make_instance()

    first = wuzapi.set_call_settings(target, 2)
    second = wuzapi.set_call_settings(target, 2)

    assert (first.calls_config_version, second.calls_config_version) == (1, 2)
    assert wuzapi.instance_status(target).calls_config_version == 2


def test_the_admin_route_is_used_without_an_instance_token(
    wuzapi: WuzapiClient, make_instance: InstanceFactory
) -> None:
    target = make_instance()
    admin_only = target.model_copy(update={"instance_token": None})

    status = wuzapi.set_call_settings(admin_only, 3)

    assert (status.calls_max_concurrent, status.calls_config_version) == (3, 1)


def test_a_wrong_admin_token_is_refused_without_echoing_it(
    wuzapi: WuzapiClient, make_instance: InstanceFactory
) -> None:
    target = make_instance().model_copy(update={"instance_token": None, "admin_token": "wrong-admin-secret"})

    with pytest.raises(ProviderRejected) as refused:
        wuzapi.set_call_settings(target, 3)
    assert "wrong-admin-secret" not in str(refused.value)
    assert refused.value.details["status"] == 401


def test_version_zero_is_reported_as_zero_not_absent(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    status = wuzapi.instance_status(make_instance())

    assert status.calls_config_version == 0
    assert status.kind == "calls" and status.calls_max_concurrent == 1


@pytest.mark.parametrize("start", [2**53, MAX_VERSION - 1])
def test_large_versions_stay_exact(wuzapi: WuzapiClient, make_instance: InstanceFactory, start: int) -> None:
    target = make_instance(callsConfigVersion=start)

    status = wuzapi.set_call_settings(target, 2)

    assert status.calls_config_version == start + 1
    assert wuzapi.instance_status(target).calls_config_version == start + 1


def test_the_last_64_bit_version_cannot_grow(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = make_instance(callsConfigVersion=MAX_VERSION)

    with pytest.raises(ProviderRejected):
        wuzapi.set_call_settings(target, 2)
    assert wuzapi.instance_status(target).calls_config_version == MAX_VERSION


def test_settings_can_be_saved_while_disconnected(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance(connected=False)

    status = wuzapi.set_call_settings(target, 2)

    assert status.connected is False
    assert (status.calls_max_concurrent, status.calls_config_version) == (2, 1)


def test_saving_emits_call_settings_with_the_saved_snapshot(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, receiver: WebhookReceiver
) -> None:
    target = make_instance()

    wuzapi.set_call_settings(target, 2)

    [delivery] = receiver.wait_for(target.provider_instance_id, 1, event="call_settings")
    envelope = delivery.envelope
    assert envelope["EventType"] == envelope["event"] == "call_settings"
    assert envelope["data"]["callsMaxConcurrent"] == 2
    assert envelope["data"]["callsConfigVersion"] == 1
    assert envelope["data"]["kind"] == "calls"
    assert envelope["data"]["updatedAt"].endswith("Z")
    assert "callId" not in envelope["data"]


def test_a_change_in_the_provider_panel_emits_call_settings(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    target = make_instance()

    control.panel_call_settings(target.provider_instance_id, 2)

    [delivery] = receiver.wait_for(target.provider_instance_id, 1, event="call_settings")
    assert delivery.envelope["data"]["callsConfigVersion"] == 1
    assert wuzapi.instance_status(target).calls_max_concurrent == 2


def test_a_server_without_per_instance_limits_sends_no_limit_fields(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    control.set_capabilities(calls_per_instance_limit=False)

    status = wuzapi.instance_status(target)

    assert (status.calls_max_concurrent, status.calls_config_version) == (None, None)


def test_a_messages_instance_has_no_calls_fields(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    status = wuzapi.instance_status(make_instance(kind="messages"))

    assert status.kind == "messages"
    assert (status.calls_max_concurrent, status.calls_config_version) == (None, None)

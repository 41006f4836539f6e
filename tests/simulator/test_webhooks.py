"""Signed webhooks and the subscription contract, checked the way a receiver would check them."""

from __future__ import annotations

import hashlib
import hmac

import httpx
import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard.core.errors import Conflict
from switchboard.providers.base import ProviderTarget
from switchboard.providers.wuzapi import WuzapiClient
from tests.simulator.conftest import SECRET, InstanceFactory, Received, WebhookReceiver

PEER = "5511988887777"


def _signature_entries(received: Received) -> list[str]:
    return [entry.strip() for entry in received.headers["X-Webhook-Signature"].split(",")]


def _signed_with(received: Received, secret: str) -> bool:
    """An independent check of `v1=HMAC-SHA256(secret, timestamp + "." + raw body)`."""
    timestamp = received.headers["X-Webhook-Timestamp"].encode()
    expected = "v1=" + hmac.new(secret.encode(), timestamp + b"." + received.body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, entry) for entry in _signature_entries(received))


def _raw_webhook(simulator: Simulator, target: ProviderTarget, method: str, **body: object) -> httpx.Response:
    assert target.instance_token is not None
    headers = {"token": target.instance_token}
    return httpx.request(method, f"{simulator.base_url}/webhook", headers=headers, json=body or None)


def test_deliveries_are_signed_over_the_timestamp_and_the_raw_body(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, receiver: WebhookReceiver
) -> None:
    target = make_instance()

    wuzapi.set_call_settings(target, 2)

    [delivery] = receiver.wait_for(target.provider_instance_id, 1)
    assert _signed_with(delivery, SECRET)
    assert not _signed_with(delivery, "another-secret")
    assert len(_signature_entries(delivery)) == 1
    assert delivery.headers["X-Webhook-Timestamp"].isdigit()


def test_a_rotating_secret_signs_with_both(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    target = make_instance()
    control.webhook_secrets(target.provider_instance_id, "whsec-next", previous_secret=SECRET)

    wuzapi.set_call_settings(target, 2)

    [delivery] = receiver.wait_for(target.provider_instance_id, 1)
    assert len(_signature_entries(delivery)) == 2
    assert _signed_with(delivery, "whsec-next") and _signed_with(delivery, SECRET)


def test_a_refused_delivery_is_retried_with_the_same_event_and_body(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, receiver: WebhookReceiver
) -> None:
    target = make_instance()
    receiver.fail_next(target.provider_instance_id, 2)

    wuzapi.set_call_settings(target, 2)

    attempts = receiver.wait_for(target.provider_instance_id, 3)
    assert len({attempt.envelope["eventId"] for attempt in attempts}) == 1
    assert len({attempt.body for attempt in attempts}) == 1
    assert all(_signed_with(attempt, SECRET) for attempt in attempts)


def test_redelivery_sends_the_same_event_again(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    target = make_instance()
    wuzapi.set_call_settings(target, 2)
    [original] = receiver.wait_for(target.provider_instance_id, 1)

    control.redeliver(original.envelope["eventId"])

    first, duplicate = receiver.wait_for(target.provider_instance_id, 2)
    assert duplicate.body == first.body
    assert _signed_with(duplicate, SECRET)


def test_connection_carries_the_calls_config_outside_data(
    make_instance: InstanceFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    target = make_instance(callsMaxConcurrent=2, callsConfigVersion=7)
    instance_id = target.provider_instance_id

    control.set_connection(instance_id, False)
    control.set_connection(instance_id, True, include_calls_config=False)

    down, up = (delivery.envelope for delivery in receiver.wait_for(instance_id, 2, event="connection"))
    assert down["instance"] == {"kind": "calls", "callsMaxConcurrent": 2, "callsConfigVersion": 7}
    assert down["data"]["connected"] is False
    assert "callsConfigVersion" not in down["data"]
    assert up["instance"] == {"kind": "calls"}
    assert up["data"]["connected"] is True
    assert up["seq"] > down["seq"]


def test_incoming_messages_and_receipts_are_published(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    target = make_instance(kind="messages")
    instance_id = target.provider_instance_id
    sent = wuzapi.send_text(target, PEER, "hello", "key-1")

    control.incoming_message(instance_id, PEER, "hi there")
    control.receipt(instance_id, sent.provider_message_id, "read")

    [message] = receiver.wait_for(instance_id, 1, event="message")
    [receipt] = receiver.wait_for(instance_id, 1, event="receipt")
    assert (message.envelope["data"]["from"], message.envelope["data"]["text"]) == (PEER, "hi there")
    assert receipt.envelope["data"]["id"] == sent.provider_message_id
    assert receipt.envelope["data"]["status"] == "read"


def test_events_outside_the_subscription_are_not_sent(
    wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance(webhookEvents=["connection"])

    wuzapi.set_call_settings(target, 2)

    [event] = control.events(target.provider_instance_id)
    assert (event["event"], event["delivered"]) == ("call_settings", False)


def test_get_never_shows_the_secret(simulator: Simulator, make_instance: InstanceFactory) -> None:
    response = _raw_webhook(simulator, make_instance(), "GET")

    assert response.status_code == 200
    assert "secret" not in response.json()
    assert SECRET not in response.text


def test_updating_events_keeps_url_filters_enabled_and_secret(
    simulator: Simulator,
    wuzapi: WuzapiClient,
    make_instance: InstanceFactory,
    control: SimulatorControl,
    receiver: WebhookReceiver,
) -> None:
    target = make_instance(webhookEvents=["connection"])
    _raw_webhook(simulator, target, "POST", filters={"fromMe": False})

    updated = wuzapi.update_webhook_events(target, ["connection", "call", "call_settings"])

    assert (updated.url, updated.filters, updated.enabled, updated.inherited) == (
        receiver.url,
        {"fromMe": False},
        True,
        False,
    )
    assert updated.events == ["connection", "call", "call_settings"]
    assert control.events(target.provider_instance_id) == []  # registering emits no snapshot
    wuzapi.set_call_settings(target, 2)
    [delivery] = receiver.wait_for(target.provider_instance_id, 1, event="call_settings")
    assert _signed_with(delivery, SECRET)


def test_a_new_url_without_a_secret_is_refused(simulator: Simulator, make_instance: InstanceFactory) -> None:
    response = _raw_webhook(simulator, make_instance(), "POST", url="http://127.0.0.1:9/elsewhere")

    assert response.status_code == 400
    assert response.json()["error"] == "secret_required"


def test_an_instance_without_its_own_subscription_inherits_the_global_one(
    simulator: Simulator,
    wuzapi: WuzapiClient,
    make_instance: InstanceFactory,
    control: SimulatorControl,
    receiver: WebhookReceiver,
) -> None:
    control.set_global_webhook(url=receiver.url, events=["call_settings"], secret="whsec-global")
    target = make_instance(subscribed=False)

    subscription = wuzapi.get_webhook(target)
    wuzapi.set_call_settings(target, 2)

    assert (subscription.url, subscription.inherited, subscription.exists) == (receiver.url, True, True)
    [delivery] = receiver.wait_for(target.provider_instance_id, 1)
    assert _signed_with(delivery, "whsec-global")
    with pytest.raises(Conflict):
        wuzapi.update_webhook_events(target, ["call_settings", "call"])
    assert wuzapi.get_webhook(target).inherited is True


def test_posting_on_an_inherited_subscription_creates_the_instance_own(
    simulator: Simulator, make_instance: InstanceFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    control.set_global_webhook(url=receiver.url, events=["call_settings"], secret="whsec-global")
    target = make_instance(subscribed=False)

    response = _raw_webhook(simulator, target, "POST", events=["call_settings", "call"])

    assert response.json()["inherited"] is False
    assert response.json()["url"] == receiver.url


def test_no_subscription_at_all_is_reported_absent(wuzapi: WuzapiClient, make_instance: InstanceFactory) -> None:
    target = make_instance(subscribed=False)

    assert wuzapi.get_webhook(target).exists is False
    with pytest.raises(Conflict):
        wuzapi.update_webhook_events(target, ["call"])


def test_a_disabled_subscription_sends_nothing(
    simulator: Simulator, wuzapi: WuzapiClient, make_instance: InstanceFactory, control: SimulatorControl
) -> None:
    target = make_instance()
    _raw_webhook(simulator, target, "POST", enabled=False)

    wuzapi.set_call_settings(target, 2)

    assert [event["delivered"] for event in control.events(target.provider_instance_id)] == [False]

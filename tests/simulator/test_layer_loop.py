"""The layer's provider kinds against the simulator's servers, both ways: its clients send to each
flavour, and each flavour's webhooks pass its `KIND.authenticate` and map through `KIND.events`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from devstack.simulator import SimulatorControl
from switchboard.catalog.webhook_setup import WebhookSetup
from switchboard.core.errors import ProviderDisconnected, Unauthenticated
from switchboard.providers.base import InboundEvent, ProviderClient, ProviderTarget, WebhookRequest
from switchboard.providers.kinds import spec_for
from tests.simulator.conftest import HOOK_KEY, SCHEME_OF, FlavourFactory, FlavourInstance, Received, WebhookReceiver
from tools.support.builders import instance
from tools.support.fakes import FakeSecrets

PEER = "5511988887777"
KIND_OF = {"calls": "wuzapi", "wuzapi": "wuzapi", "evolution": "evolution", "meta": "meta"}
REAL_FLAVOURS = ["wuzapi", "evolution", "meta"]


@dataclass
class Secrets:
    secret: str | None = HOOK_KEY
    verify: str | None = None
    token: str | None = None

    def webhook_secret(self) -> str | None:
        return self.secret

    def verify_token(self) -> str | None:
        return self.verify

    def instance_token(self, binding: str) -> str | None:
        return self.token


def _request(received: Received) -> WebhookRequest:
    return WebhookRequest(headers={name.lower(): value for name, value in received.headers.items()}, body=received.body)


def _events(instance: FlavourInstance, received: Received, secrets: Secrets | None = None) -> list[InboundEvent]:
    spec = spec_for(KIND_OF[instance.flavour])
    request = _request(received)
    scheme = SCHEME_OF[instance.flavour]
    spec.authenticate(request, secrets or Secrets(), time.time(), scheme)
    return spec.events(request, scheme)


def _client(instance: FlavourInstance) -> ProviderClient:
    return spec_for(KIND_OF[instance.flavour]).client(local_mode=True, read_timeout=5.0)


@pytest.mark.parametrize("flavour", ["calls", *REAL_FLAVOURS])
def test_the_client_sends_and_the_message_is_recorded(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=False)
    client = _client(instance)

    sent = client.send_text(instance.target(), PEER, "hello", "3EB0000000000000000001")

    [message] = [m for m in control.sent() if m["instance"] == instance.id]
    assert (message["id"], message["phone"], message["body"]) == (sent.provider_message_id, PEER, "hello")
    assert client.instance_status(instance.target()).connected is True


@pytest.mark.parametrize("flavour", ["calls", "wuzapi", "evolution"])
def test_a_send_without_a_session_is_disconnected(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured(flavour, subscribed=False)
    control.set_connection(instance.id, False)
    client = _client(instance)

    with pytest.raises(ProviderDisconnected):
        client.send_text(instance.target(), PEER, "hello", "3EB0000000000000000002")
    assert client.instance_status(instance.target()).connected is False


@pytest.mark.parametrize("flavour", REAL_FLAVOURS)
def test_incoming_messages_and_receipts_map_to_our_events(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured(flavour)
    client = _client(instance)
    sent = client.send_text(instance.target(), PEER, "hello", "3EB0000000000000000003")

    incoming = control.incoming_message(instance.id, PEER, "hi there")
    control.receipt(instance.id, sent.provider_message_id, "read")

    message, receipt = receiver.wait_for(instance.id, 2)
    [got] = _events(instance, message)
    assert (got.name, got.data["id"], got.data["from"], got.data["content"], got.ignored) == (
        "message",
        incoming,
        PEER,
        {"type": "text", "body": "hi there"},
        None,
    )
    expected_binding = instance.meta_phone_id if flavour == "meta" else instance.id
    assert got.binding == expected_binding
    [read] = _events(instance, receipt)
    assert (read.name, read.data["id"], read.data["status"]) == ("receipt", sent.provider_message_id, "read")


@pytest.mark.parametrize("flavour", ["wuzapi", "evolution"])
def test_connection_changes_map_to_connection_events(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured(flavour)

    control.set_connection(instance.id, False)
    control.set_connection(instance.id, True)

    down, up = receiver.wait_for(instance.id, 2)
    assert [(event.name, event.data["connected"]) for event in _events(instance, down)] == [("connection", False)]
    assert [(event.name, event.data["connected"]) for event in _events(instance, up)] == [("connection", True)]


def test_wuzapi_form_mode_maps_too(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi", webhookFormat="form")

    control.incoming_message(instance.id, PEER, "via form")

    [delivery] = receiver.wait_for(instance.id, 1)
    [event] = _events(instance, delivery)
    assert (event.name, event.data["content"]) == ("message", {"type": "text", "body": "via form"})


@pytest.mark.parametrize("flavour", REAL_FLAVOURS)
def test_a_delivery_signed_with_another_secret_is_refused(
    flavour: str, make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured(flavour)

    control.incoming_message(instance.id, PEER, "hi")

    [delivery] = receiver.wait_for(instance.id, 1)
    with pytest.raises(Unauthenticated):
        _events(instance, delivery, Secrets(secret=HOOK_KEY + "-other"))


def test_metas_verification_query_is_answered_by_the_kind(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("meta", verifyToken="verify-me")
    control.verify_webhook(instance.id)  # the receiver records the query Meta sends
    query = dict(receiver.last_query)

    answer = spec_for("meta").verify_subscription(query, Secrets(verify="verify-me"))

    assert answer == query["hub.challenge"]


@dataclass
class _OneTarget:
    client: ProviderClient
    target: Any

    def target_for(self, instance: Any) -> tuple[ProviderClient, Any]:
        return self.client, self.target


def _setup_for(flavoured: FlavourInstance, secret: str) -> tuple[WebhookSetup, ProviderClient]:
    return _setup_for_target(flavoured.target(), secret)


def _setup_for_target(target: ProviderTarget, secret: str) -> tuple[WebhookSetup, ProviderClient]:
    client = spec_for("wuzapi").client(local_mode=True, read_timeout=5.0)
    secrets = FakeSecrets({"/switchboard/providers/prv_w/webhook-secret": secret}, prefix="/switchboard")
    return WebhookSetup(_OneTarget(client, target), secrets, "https://sb.example"), client


def test_given_a_plain_wuzapi_saved_as_an_envelope_server_then_its_webhook_is_left_alone(
    make_flavoured: FlavourFactory,
) -> None:
    """Setting a wuzapi's HMAC key would make it sign deliveries its provider then refuses."""
    plain = make_flavoured("wuzapi", subscribed=False)
    target = plain.target().model_copy(update={"webhook_scheme": "envelope"})
    setup, client = _setup_for_target(target, HOOK_KEY)

    assert setup.configure(instance(name=plain.id, provider_id="prv_w")) is False
    assert client.read_webhook(plain.target()).url is None  # type: ignore[attr-defined]  # read_webhook is the simulator-backed client's, not the setup's port


def test_given_a_plain_wuzapi_instance_when_saved_then_its_webhook_points_at_us_signed_with_the_provider_secret(
    make_flavoured: FlavourFactory,
) -> None:
    flavoured = make_flavoured("wuzapi", subscribed=False)
    setup, client = _setup_for(flavoured, HOOK_KEY)

    assert setup.configure(instance(name=flavoured.id, provider_id="prv_w")) is True

    subscription = client.read_webhook(flavoured.target())  # type: ignore[attr-defined]  # read_webhook is the simulator-backed client's, not the setup's port
    assert subscription.url == "https://sb.example/webhooks/prv_w"
    assert set(subscription.events) == {"Message", "ReadReceipt", "Connected", "Disconnected", "LoggedOut"}


def test_given_a_calls_capable_server_or_a_short_secret_then_the_webhook_is_left_to_the_operator(
    make_flavoured: FlavourFactory,
) -> None:
    calls = make_flavoured("calls", subscribed=False)
    plain = make_flavoured("wuzapi", subscribed=False)

    assert _setup_for(calls, HOOK_KEY)[0].configure(instance(name=calls.id, provider_id="prv_w")) is False
    # Saved before schemes were stored, or saved as a plain wuzapi by mistake: its capabilities tell.
    for scheme in (None, "wuzapi-hmac"):
        target = calls.target().model_copy(update={"webhook_scheme": scheme})
        assert _setup_for_target(target, HOOK_KEY)[0].configure(instance(name=calls.id, provider_id="prv_w")) is False
    setup, client = _setup_for(plain, "short-secret")
    assert setup.configure(instance(name=plain.id, provider_id="prv_w")) is False
    assert client.read_webhook(plain.target()).url is None  # type: ignore[attr-defined]  # read_webhook is the simulator-backed client's, not the setup's port

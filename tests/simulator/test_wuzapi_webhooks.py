"""What a plain wuzapi posts: JSON or form bodies byte for byte as the real server, signed with
`x-hmac-signature` = hex HMAC-SHA256(hmac key, raw body), checked here with hashlib directly."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from devstack.simulator import SimulatorControl
from devstack.simulator.payloads import wuzapi_webhook
from tests.simulator.conftest import HOOK_KEY, FlavourFactory, FlavourInstance, Received, WebhookReceiver

PEER = "5511988887777"
FIXTURES = Path(__file__).parents[1] / "contracts" / "wuzapi"


def _signed_with(received: Received, key: str) -> bool:
    expected = hmac.new(key.encode(), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, received.headers.get("X-Hmac-Signature", ""))


def _form(received: Received) -> dict[str, Any]:
    fields = {name: values[0] for name, values in parse_qs(received.body.decode(), keep_blank_values=True).items()}
    return {**fields, "jsonData": json.loads(fields["jsonData"])}


def _send(instance: FlavourInstance, body: dict[str, Any]) -> str:
    answer = httpx.post(instance.base_url + "/chat/send/text", headers={"token": instance.token}, json=body)
    message_id: str = answer.json()["data"]["Id"]
    return message_id


def test_an_incoming_text_is_posted_as_a_sorted_compact_json_map(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi")

    message_id = control.incoming_message(instance.id, PEER, "Olá & <bem-vindo>")

    [delivery] = receiver.wait_for(instance.id, 1)
    assert _signed_with(delivery, HOOK_KEY)
    assert not _signed_with(delivery, HOOK_KEY + "x")
    assert delivery.headers["Content-Type"] == "application/json"
    body = delivery.envelope
    assert (body["type"], body["instanceName"], body["userID"]) == ("Message", instance.id, body["userID"])
    assert len(body["userID"]) == 32
    info = body["event"]["Info"]
    assert (info["ID"], info["Chat"], info["Sender"], info["IsFromMe"]) == (
        message_id,
        f"{PEER}@s.whatsapp.net",
        f"{PEER}@s.whatsapp.net",
        False,
    )
    assert info["Timestamp"].endswith("-03:00")
    assert body["event"]["Message"] == {"conversation": "Olá & <bem-vindo>"}
    assert b"\\u0026" in delivery.body and b"\\u003c" in delivery.body and "Olá".encode() in delivery.body
    assert not delivery.body.endswith(b"\n")
    assert list(body) == sorted(body) and list(info) == sorted(info)


def test_form_mode_posts_jsondata_instancename_and_userid(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi", webhookFormat="form", userId="a3f1c2d4e5b60718293a4b5c6d7e8f90")

    control.incoming_message(instance.id, PEER, "hi there")

    [delivery] = receiver.wait_for(instance.id, 1)
    assert delivery.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert delivery.body.startswith(b"instanceName=" + instance.id.encode() + b"&jsonData=%7B%22event%22%3A")
    assert delivery.body.endswith(b"&userID=a3f1c2d4e5b60718293a4b5c6d7e8f90")
    assert _signed_with(delivery, HOOK_KEY)
    form = _form(delivery)
    assert form["jsonData"]["type"] == "Message"
    assert list(form["jsonData"]["event"]["Info"])[:3] == ["Chat", "Sender", "IsFromMe"]  # struct order
    assert form["jsonData"]["event"]["Message"]["conversation"] == "hi there"


def test_the_format_can_be_switched_per_instance(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi")

    control.webhook_format(instance.id, "form")
    control.incoming_message(instance.id, PEER, "one")
    control.webhook_format(instance.id, "json")
    control.incoming_message(instance.id, PEER, "two")

    form, as_json = receiver.wait_for(instance.id, 2)
    assert _form(form)["jsonData"]["event"]["Message"]["conversation"] == "one"
    assert as_json.envelope["event"]["Message"]["conversation"] == "two"


def test_receipts_are_readreceipts_of_the_delivered_message(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi")
    message_id = _send(instance, {"Phone": PEER, "Body": "hello"})

    control.receipt(instance.id, message_id, "delivered")
    control.receipt(instance.id, message_id, "read")

    delivered, read = (item.envelope for item in receiver.wait_for(instance.id, 2))
    assert (delivered["type"], delivered["state"], delivered["event"]["Type"]) == ("ReadReceipt", "Delivered", "")
    assert (read["state"], read["event"]["Type"]) == ("Read", "read")
    assert delivered["event"]["MessageIDs"] == read["event"]["MessageIDs"] == [message_id]
    assert delivered["event"]["Chat"] == f"{PEER}@s.whatsapp.net"


def test_wuzapi_posts_no_failed_receipt(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("wuzapi")
    message_id = _send(instance, {"Phone": PEER, "Body": "hello"})

    with pytest.raises(httpx.HTTPStatusError) as refused:
        control.receipt(instance.id, message_id, "failed")

    assert refused.value.response.status_code == 400


def test_connection_events(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi")

    control.set_connection(instance.id, False, reason="disconnected")
    control.set_connection(instance.id, True)
    control.set_connection(instance.id, False)

    events = [(item.envelope["type"], item.envelope["event"]) for item in receiver.wait_for(instance.id, 3)]
    assert events == [
        ("Disconnected", {}),
        ("Connected", {}),
        ("LoggedOut", {"OnConnect": False, "Reason": 401}),
    ]


def test_without_an_hmac_key_webhooks_go_unsigned(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi", secret=None)

    control.incoming_message(instance.id, PEER, "hi")

    [delivery] = receiver.wait_for(instance.id, 1)
    assert "X-Hmac-Signature" not in delivery.headers


def test_only_subscribed_types_are_posted(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("wuzapi", webhookEvents=["ReadReceipt"])

    control.incoming_message(instance.id, PEER, "hi")

    [event] = control.events(instance.id)
    assert (event["event"], event["flavour"], event["delivered"]) == ("Message", "wuzapi", False)
    assert event["payload"]["event"]["Message"]["conversation"] == "hi"


def test_a_webhook_post_without_events_silences_every_webhook(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    """The real server's trap: the stored events stay, the live subscription is emptied."""
    instance = make_flavoured("wuzapi")
    headers = {"token": instance.token}
    httpx.post(instance.base_url + "/webhook", headers=headers, json={"webhookurl": receiver.url_for(instance.id)})

    control.incoming_message(instance.id, PEER, "lost")

    shown = httpx.get(instance.base_url + "/webhook", headers=headers).json()["data"]
    assert "Message" in shown["subscribe"]
    assert [event["delivered"] for event in control.events(instance.id)] == [False]


def test_redelivery_is_byte_for_byte(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("wuzapi")
    control.incoming_message(instance.id, PEER, "hi")
    receiver.wait_for(instance.id, 1)

    control.redeliver(control.events(instance.id)[0]["eventId"])

    first, duplicate = receiver.wait_for(instance.id, 2)
    assert (duplicate.body, duplicate.headers["X-Hmac-Signature"]) == (first.body, first.headers["X-Hmac-Signature"])


# --- the encoders against the real server's bytes -------------------------------------------


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_json_mode_reproduces_the_real_bytes() -> None:
    real = _fixture("webhook_json_message_text.json")
    parsed = json.loads(real)
    postmap = {key: parsed[key] for key in ("event", "type")}

    body, content_type = wuzapi_webhook(
        postmap, instance_name=parsed["instanceName"], user_id=parsed["userID"], form=False
    )

    assert (body, content_type) == (real, "application/json")


def test_form_mode_reproduces_the_real_bytes_and_signature() -> None:
    real = _fixture("webhook_form_message_text.txt")
    fields = {name: values[0] for name, values in parse_qs(real.decode(), keep_blank_values=True).items()}
    postmap = json.loads(fields["jsonData"])  # keeps the struct order of the nested objects

    body, _ = wuzapi_webhook(postmap, instance_name=fields["instanceName"], user_id=fields["userID"], form=True)

    vectors = json.loads(_fixture("hmac_signature.json"))
    [vector] = [v for v in vectors["vectors"] if v["body_file"] == "webhook_form_message_text.txt"]
    assert body == real
    assert hmac.new(vectors["key"].encode(), body, hashlib.sha256).hexdigest() == vector["signature"]

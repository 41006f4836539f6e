"""The Meta Cloud API fake at `/meta`: the send answer and errors, webhooks signed
`X-Hub-Signature-256: sha256=<hex HMAC(app secret, raw body)>`, and the `hub.challenge` check."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import httpx
import pytest

from devstack.simulator import SimulatorControl
from tests.simulator.conftest import HOOK_KEY, FlavourFactory, FlavourInstance, Received, WebhookReceiver

PEER = "5511988887777"
VERSION = "v21.0"


def _signed_with(received: Received, secret: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), received.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, received.headers.get("X-Hub-Signature-256", ""))


def _send(
    instance: FlavourInstance, body: Any, *, token: str | None = None, phone_id: str | None = None
) -> httpx.Response:
    url = f"{instance.base_url}/{VERSION}/{phone_id or instance.meta_phone_id}/messages"
    return httpx.post(url, headers={"Authorization": f"Bearer {token or instance.token}"}, json=body)


def _text(to: str, body: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "text",
        "text": {"body": body},
    }


def test_a_send_answers_contacts_and_a_wamid(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("meta", subscribed=False)

    answer = _send(instance, _text(f"+{PEER}", "hello"))

    assert answer.status_code == 200
    payload = answer.json()
    assert payload["messaging_product"] == "whatsapp"
    assert payload["contacts"] == [{"input": f"+{PEER}", "wa_id": PEER}]
    [message] = payload["messages"]
    assert message["id"].startswith("wamid.")
    [sent] = [m for m in control.sent() if m["instance"] == instance.id]
    assert (sent["id"], sent["phone"], sent["body"]) == (message["id"], PEER, "hello")


def test_a_bad_token_is_error_190(make_flavoured: FlavourFactory) -> None:
    answer = _send(make_flavoured("meta", subscribed=False), _text(PEER, "x"), token="expired")

    assert answer.status_code == 401
    error = answer.json()["error"]
    assert (error["code"], error["type"]) == (190, "OAuthException")
    assert "fbtrace_id" in error


def test_another_numbers_phone_id_is_error_100(make_flavoured: FlavourFactory) -> None:
    answer = _send(make_flavoured("meta", subscribed=False), _text(PEER, "x"), phone_id="999")

    assert answer.status_code == 400
    assert (answer.json()["error"]["code"], answer.json()["error"]["error_subcode"]) == (100, 33)


@pytest.mark.parametrize(
    "body",
    [
        {"to": PEER, "type": "text", "text": {"body": "x"}},
        {"messaging_product": "whatsapp", "type": "text", "text": {"body": "x"}},
        {"messaging_product": "whatsapp", "to": PEER, "type": "text", "text": {}},
    ],
)
def test_invalid_parameters_are_error_100(make_flavoured: FlavourFactory, body: dict[str, Any]) -> None:
    answer = _send(make_flavoured("meta", subscribed=False), body)

    assert (answer.status_code, answer.json()["error"]["code"]) == (400, 100)


def test_an_unknown_version_is_refused(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("meta", subscribed=False)

    answer = httpx.post(f"{instance.base_url}/latest/{instance.meta_phone_id}/messages", json=_text(PEER, "x"))

    assert answer.status_code == 400


def test_messages_and_statuses_are_signed_with_the_app_secret(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("meta")
    wamid = _send(instance, _text(PEER, "hello")).json()["messages"][0]["id"]

    incoming = control.incoming_message(instance.id, PEER, "Olá / oi")
    control.receipt(instance.id, wamid, "delivered")
    control.receipt(instance.id, wamid, "failed")

    message, delivered, failed = receiver.wait_for(instance.id, 3)
    assert all(_signed_with(item, HOOK_KEY) for item in (message, delivered, failed))
    assert not _signed_with(message, HOOK_KEY + "x")
    assert b"Ol\\u00e1 \\/ oi" in message.body  # escaped unicode and slashes: verify the raw bytes
    body = message.envelope
    assert body["object"] == "whatsapp_business_account"
    [entry] = body["entry"]
    [change] = entry["changes"]
    assert change["field"] == "messages"
    value = change["value"]
    assert value["metadata"] == {"display_phone_number": instance.number, "phone_number_id": instance.meta_phone_id}
    assert value["contacts"][0]["wa_id"] == PEER
    [received] = value["messages"]
    assert (received["id"], received["from"], received["type"], received["text"]) == (
        incoming,
        PEER,
        "text",
        {"body": "Olá / oi"},
    )
    assert received["timestamp"].isdigit()
    [status] = delivered.envelope["entry"][0]["changes"][0]["value"]["statuses"]
    assert (status["id"], status["status"], status["recipient_id"]) == (wamid, "delivered", PEER)
    [failure] = failed.envelope["entry"][0]["changes"][0]["value"]["statuses"]
    assert (failure["status"], failure["errors"][0]["code"]) == ("failed", 131049)


def test_a_cloud_api_number_cannot_be_disconnected(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("meta", subscribed=False)

    with pytest.raises(httpx.HTTPStatusError) as refused:
        control.set_connection(instance.id, False)

    assert refused.value.response.json()["error"] == "always_connected"


def test_the_verification_get_carries_the_challenge_and_the_verify_token(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("meta", verifyToken="vibecoding")

    receiver.answer_gets(instance.id, 403, b"")
    refused = control.verify_webhook(instance.id)

    assert refused == {"verified": False, "status": 403}
    assert receiver.last_query["hub.mode"] == "subscribe"
    assert receiver.last_query["hub.verify_token"] == "vibecoding"
    challenge = receiver.last_query["hub.challenge"]
    assert challenge.isdigit()
    receiver.answer_gets(instance.id, 200, b"echo-does-not-match")
    assert control.verify_webhook(instance.id)["verified"] is False
    receiver.answer_gets(instance.id, 200)
    assert control.verify_webhook(instance.id) == {"verified": True, "status": 200}


def test_a_text_body_over_4096_characters_is_error_100_and_nothing_is_sent(
    make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured("meta", subscribed=False)

    longest = _send(instance, _text(PEER, "a" * 4096))
    over = _send(instance, _text(PEER, "a" * 4097))
    emoji_over = _send(instance, _text(PEER, "😀" * 2049))  # 4,098 UTF-16 code units

    assert longest.status_code == 200
    assert (over.status_code, over.json()["error"]["code"]) == (400, 100)
    assert "4096" in over.json()["error"]["message"]
    assert emoji_over.status_code == 400
    assert [len(m["body"]) for m in control.sent() if m["instance"] == instance.id] == [4096]


def test_the_contacts_profile_name_is_the_senders_push_name(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("meta")

    control.incoming_message(instance.id, PEER, "oi", push_name="Sheena Nelson")
    control.incoming_message(instance.id, PEER, "oi", push_name=None)

    named, unnamed = receiver.wait_for(instance.id, 2)
    assert named.envelope["entry"][0]["changes"][0]["value"]["contacts"] == [
        {"profile": {"name": "Sheena Nelson"}, "wa_id": PEER}
    ]
    assert unnamed.envelope["entry"][0]["changes"][0]["value"]["contacts"] == [{"wa_id": PEER}]

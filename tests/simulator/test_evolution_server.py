"""The Evolution API v2 fake at `/evolution`: answers, errors, and webhooks authenticated by an
HS256 JWT made with the instance's `jwt_key` (checked here with hmac and base64 directly)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.simulator import SimulatorControl
from devstack.simulator.model import Delivery
from devstack.simulator.webhooks import WebhookDispatcher
from devstack.simulator.wire import evolution_jwt
from tests.simulator.conftest import HOOK_KEY, FlavourFactory, FlavourInstance, Received, WebhookReceiver

PEER = "5511988887777"
FIXTURES = Path(__file__).parents[1] / "contracts" / "evolution"


def _b64url_json(segment: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def _claims(received: Received, secret: str) -> dict[str, Any] | None:
    """The JWT's claims when it is an HS256 token signed with `secret`, else None."""
    scheme, _, token = received.headers.get("Authorization", "").partition(" ")
    header, payload, signature = token.split(".")
    expected = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    given = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    if scheme != "Bearer" or _b64url_json(header) != {"alg": "HS256", "typ": "JWT"}:
        return None
    claims: dict[str, Any] = _b64url_json(payload)
    return claims if hmac.compare_digest(expected, given) else None


def _send(instance: FlavourInstance, body: Any, apikey: str | None = None) -> httpx.Response:
    headers = {"apikey": apikey if apikey is not None else instance.token}
    return httpx.post(f"{instance.base_url}/message/sendText/{instance.id}", headers=headers, json=body)


def test_send_text_answers_201_with_the_message_key(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("evolution", subscribed=False)

    answer = _send(instance, {"number": f"+{PEER}", "text": "hello"})

    assert answer.status_code == 201
    sent = answer.json()
    assert sent["key"]["remoteJid"] == f"{PEER}@s.whatsapp.net"
    assert sent["key"]["fromMe"] is True
    assert re.fullmatch(r"3EB0[0-9A-F]{18}", sent["key"]["id"])
    assert (sent["status"], sent["message"], sent["messageType"]) == (
        "PENDING",
        {"conversation": "hello"},
        "conversation",
    )
    assert isinstance(sent["messageTimestamp"], int)
    assert list(sent) == list(json.loads((FIXTURES / "api_send_text_201_success.json").read_text()))
    [message] = [m for m in control.sent() if m["instance"] == instance.id]
    assert (message["id"], message["phone"], message["flavour"]) == (sent["key"]["id"], PEER, "evolution")


def test_an_unknown_instance_is_404_before_the_key_is_checked(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("evolution", subscribed=False)

    answer = httpx.post(f"{instance.base_url}/message/sendText/nope", headers={"apikey": "wrong"}, json={})

    assert answer.status_code == 404
    assert answer.json() == {
        "status": 404,
        "error": "Not Found",
        "response": {"message": ['The "nope" instance does not exist']},
    }


def test_a_wrong_apikey_is_401(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("evolution", subscribed=False)

    answer = _send(instance, {"number": PEER, "text": "x"}, apikey="wrong")

    assert answer.status_code == 401
    assert answer.json() == {"status": 401, "error": "Unauthorized", "response": {"message": "Unauthorized"}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"number": PEER}, [['instance requires property "text"']]),
        ({"number": PEER, "text": "  "}, ["Text is required"]),
        ({"number": 5511, "text": "x"}, [["Invalid format"]]),
    ],
)
def test_validation_errors_have_the_real_nesting(make_flavoured: FlavourFactory, body: Any, message: Any) -> None:
    answer = _send(make_flavoured("evolution", subscribed=False), body)

    assert answer.status_code == 400
    assert answer.json() == {"status": 400, "error": "Bad Request", "response": {"message": message}}


def test_a_closed_connection_refuses_the_send(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("evolution", subscribed=False)
    control.set_connection(instance.id, False)

    answer = _send(instance, {"number": PEER, "text": "x"})

    assert answer.status_code == 500
    assert answer.json()["response"]["message"] == "Connection Closed"
    assert [m for m in control.sent() if m["instance"] == instance.id] == []


def test_connection_state(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("evolution", subscribed=False)
    url = f"{instance.base_url}/instance/connectionState/{instance.id}"

    opened = httpx.get(url, headers={"apikey": instance.token}).json()
    control.set_connection(instance.id, False, reason="disconnected")
    closed = httpx.get(url, headers={"apikey": instance.token}).json()

    assert opened == {"instance": {"instanceName": instance.id, "state": "open"}}
    assert closed == {"instance": {"instanceName": instance.id, "state": "close"}}


def test_webhooks_carry_a_fresh_jwt_and_the_real_body(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("evolution")
    sent_id = _send(instance, {"number": PEER, "text": "hello"}).json()["key"]["id"]

    incoming_id = control.incoming_message(instance.id, PEER, "oi")
    control.receipt(instance.id, sent_id, "read")

    upsert, update = receiver.wait_for(instance.id, 2)
    claims = _claims(upsert, HOOK_KEY)
    assert claims is not None and _claims(upsert, "another-key") is None
    assert (claims["app"], claims["action"], claims["exp"] - claims["iat"]) == ("evolution", "webhook", 600)
    assert abs(claims["iat"] - time.time()) < 60
    body = upsert.envelope
    assert list(body) == ["event", "instance", "data", "destination", "date_time", "sender", "server_url", "apikey"]
    assert (body["event"], body["instance"], body["apikey"]) == ("messages.upsert", instance.id, None)
    assert body["destination"] == receiver.url_for(instance.id)
    assert body["sender"] == f"{instance.number}@s.whatsapp.net"
    data = body["data"]
    assert (data["key"]["id"], data["key"]["remoteJid"], data["key"]["fromMe"]) == (
        incoming_id,
        f"{PEER}@s.whatsapp.net",
        False,
    )
    assert (data["message"], data["messageType"]) == ({"conversation": "oi"}, "conversation")
    assert _claims(update, HOOK_KEY) is not None
    assert update.envelope["event"] == "messages.update"
    assert (update.envelope["data"]["keyId"], update.envelope["data"]["status"]) == (sent_id, "READ")


def test_connection_updates(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("evolution")

    control.set_connection(instance.id, False, reason="disconnected")  # reconnectable: nothing posted
    control.set_connection(instance.id, True)
    control.set_connection(instance.id, False)

    opened, closed = (item.envelope["data"] for item in receiver.wait_for(instance.id, 2))
    assert (opened["state"], opened["statusReason"], opened["wuid"]) == (
        "open",
        200,
        f"{instance.number}@s.whatsapp.net",
    )
    assert closed == {"instance": instance.id, "state": "close", "statusReason": 401}


def test_a_refused_webhook_is_not_retried_on_401_but_is_on_500(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    refusing, failing = make_flavoured("evolution"), make_flavoured("evolution")
    receiver.fail_next(refusing.id, 1, status=401)
    receiver.fail_next(failing.id, 1, status=500)

    control.incoming_message(refusing.id, PEER, "one")
    control.incoming_message(failing.id, PEER, "two")

    first, retried = receiver.wait_for(failing.id, 2)
    assert first.body == retried.body
    assert len(receiver.received(refusing.id)) == 1


def test_without_a_jwt_key_there_is_no_authorization(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("evolution", secret=None)

    control.incoming_message(instance.id, PEER, "hi")

    [delivery] = receiver.wait_for(instance.id, 1)
    assert "Authorization" not in delivery.headers


def test_the_jwt_matches_the_real_library() -> None:
    real = json.loads((FIXTURES / "webhook_jwt_example.json").read_text())

    assert evolution_jwt(real["jwt_secret"], real["jwt_claims"]["iat"]) == real["token"]


def _numbers(instance: FlavourInstance, numbers: Any) -> httpx.Response:
    url = f"{instance.base_url}/chat/whatsappNumbers/{instance.id}"
    return httpx.post(url, headers={"apikey": instance.token}, json={"numbers": numbers})


@pytest.mark.parametrize(
    ("addressing", "shape"),
    [("pn", ("phone", "lid", "pn")), ("lid", ("lid", "phone", "lid")), ("lid_only", ("lid", None, "lid"))],
)
def test_a_chat_is_addressed_by_phone_or_by_lid_as_baileys_keys_it(
    make_flavoured: FlavourFactory,
    control: SimulatorControl,
    receiver: WebhookReceiver,
    addressing: str,
    shape: tuple[str, str | None, str],
) -> None:
    remote, alternate, mode = shape
    instance = make_flavoured("evolution")

    control.incoming_message(instance.id, PEER, "oi", push_name="Maria Souza", addressing=addressing)

    [upsert] = receiver.wait_for(instance.id, 1)
    data = upsert.envelope["data"]
    key = data["key"]
    addresses = {"phone": f"{PEER}@s.whatsapp.net", "lid": key["remoteJid"] if remote == "lid" else key["remoteJidAlt"]}
    assert re.fullmatch(r"[1-9][0-9]{14}@lid", addresses["lid"])
    assert key["remoteJid"] == addresses[remote]
    assert key.get("remoteJidAlt") == (addresses[alternate] if alternate else None)
    assert ("remoteJidAlt" in key) is (alternate is not None)  # absent, not null: JSON.stringify drops undefined
    assert (key["addressingMode"], data["pushName"]) == (mode, "Maria Souza")
    expected_keys = [
        "remoteJid",
        *(["remoteJidAlt"] if alternate else []),
        "fromMe",
        "id",
        "participant",
        "addressingMode",
    ]
    assert list(key) == expected_keys


def test_without_a_push_name_a_1_1_upsert_has_null(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("evolution")

    control.incoming_message(instance.id, PEER, "oi", push_name=None)

    [upsert] = receiver.wait_for(instance.id, 1)
    assert upsert.envelope["data"]["pushName"] is None


def test_whatsapp_numbers_answers_a_lid_with_its_number_only_once_a_phone_addressed_message_taught_it(
    make_flavoured: FlavourFactory, control: SimulatorControl, receiver: WebhookReceiver
) -> None:
    instance = make_flavoured("evolution")
    control.incoming_message(instance.id, PEER, "first", addressing="lid_only", push_name="Maria Souza")
    [hidden] = receiver.wait_for(instance.id, 1)
    lid = hidden.envelope["data"]["key"]["remoteJid"]

    unknown = _numbers(instance, [lid])
    control.incoming_message(instance.id, PEER, "lid chat with the number", addressing="lid")
    still_unknown = _numbers(instance, [lid])
    control.incoming_message(instance.id, PEER, "phone chat with the lid", addressing="pn", push_name="Maria")
    known = _numbers(instance, [lid, PEER])

    assert unknown.status_code == 200
    assert unknown.json() == [{"jid": lid, "exists": True, "number": lid, "name": "Maria Souza", "lid": "lid"}]
    assert still_unknown.json()[0]["jid"] == lid  # a LID-addressed message does not teach the cache
    assert known.json() == [
        {"jid": f"{PEER}@s.whatsapp.net", "exists": True, "number": lid, "name": "Maria"},
        {"jid": f"{PEER}@s.whatsapp.net", "exists": True, "number": PEER, "name": "Maria"},
    ]
    assert list(known.json()[0]) == list(
        json.loads((FIXTURES / "api_whatsapp_numbers_200_lid_known.json").read_text())[0]
    )


@pytest.mark.parametrize("body", [{}, {"numbers": []}, {"numbers": "x"}, {"numbers": [1]}, {"numbers": ["a", "a"]}])
def test_whatsapp_numbers_refuses_what_its_schema_refuses(make_flavoured: FlavourFactory, body: Any) -> None:
    instance = make_flavoured("evolution", subscribed=False)

    answer = httpx.post(
        f"{instance.base_url}/chat/whatsappNumbers/{instance.id}", headers={"apikey": instance.token}, json=body
    )

    assert answer.status_code == 400


def test_whatsapp_numbers_checks_the_instance_and_its_key(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("evolution", subscribed=False)
    url = f"{instance.base_url}/chat/whatsappNumbers"

    assert httpx.post(f"{url}/nope", headers={"apikey": instance.token}, json={"numbers": [PEER]}).status_code == 404
    assert httpx.post(f"{url}/{instance.id}", headers={"apikey": "wrong"}, json={"numbers": [PEER]}).status_code == 401


def test_a_reply_to_a_lid_is_sent_to_that_lid(make_flavoured: FlavourFactory, control: SimulatorControl) -> None:
    instance = make_flavoured("evolution", subscribed=False)

    answer = _send(instance, {"number": "204857600054321@lid", "text": "olá"})

    assert (answer.status_code, answer.json()["key"]["remoteJid"]) == (201, "204857600054321@lid")
    [sent] = [m for m in control.sent() if m["instance"] == instance.id]
    assert sent["phone"] == "204857600054321@lid"


def test_only_the_evolution_server_takes_lid_addressed_chats(
    make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured("wuzapi", subscribed=False)

    with pytest.raises(httpx.HTTPStatusError) as refused:
        control.incoming_message(instance.id, PEER, "oi", addressing="lid_only")

    assert refused.value.response.json()["error"] == "not_on_this_server"


def test_a_retried_webhook_carries_the_token_of_its_first_attempt() -> None:
    """Evolution builds the headers, token included, once per event before its retry loop: a
    retry a second or more later still sends the first token, and its `iat` (whole seconds)."""
    attempts: list[httpx.Request] = []
    readings = iter(range(1_800_000_000, 1_800_000_100, 3))  # every reading of the clock 3 s on

    def answer(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        return httpx.Response(500 if len(attempts) == 1 else 200)

    dispatcher = WebhookDispatcher(
        timeout_seconds=2.0,
        retry_base_delay=0.01,
        max_attempts=2,
        transport=httpx.MockTransport(answer),
        clock=lambda: float(next(readings)),
    )
    body = b'{"event":"messages.upsert"}'
    delivery = Delivery("e-1", "i-1", "https://sb.example/webhooks/p", body, (HOOK_KEY,), scheme="evolution")
    try:
        dispatcher.enqueue(delivery)
        deadline = time.monotonic() + 10
        while len(attempts) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        dispatcher.close()

    first, retry = attempts
    assert first.headers["authorization"] == retry.headers["authorization"]
    token = first.headers["authorization"].removeprefix("Bearer ")
    assert _b64url_json(token.split(".")[1])["iat"] == 1_800_000_000

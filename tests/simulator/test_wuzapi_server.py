"""wuzapi's answers, as the real server writes them: the plain `/wuzapi` server and the messaging
routes of the calls-capable server at the root (its calls routes stay ours)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from devstack.simulator import Simulator, SimulatorControl
from tests.simulator.conftest import FlavourFactory, FlavourInstance

PEER = "5511988887777"
GENERATED_ID = re.compile(r"3EB0[0-9A-F]{18}")


def _request(instance: FlavourInstance, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Token": instance.token, **kwargs.pop("headers", {})}
    return httpx.request(method, instance.base_url + path, headers=headers, **kwargs)


def _send(instance: FlavourInstance, **body: Any) -> httpx.Response:
    return _request(instance, "POST", "/chat/send/text", json=body)


def _sent(control: SimulatorControl, instance: FlavourInstance) -> list[dict[str, Any]]:
    return [message for message in control.sent() if message["instance"] == instance.id]


@pytest.fixture(params=["calls", "wuzapi"])
def server(request: pytest.FixtureRequest, make_flavoured: FlavourFactory) -> FlavourInstance:
    """Both servers answer `/chat/send/text` and `/session/status` the same way."""
    flavour: str = request.param
    return make_flavoured(flavour, subscribed=False)


def test_a_send_answers_the_real_envelope_with_a_generated_id(
    server: FlavourInstance, control: SimulatorControl
) -> None:
    answer = _send(server, Phone=PEER, Body="hello")

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.content.endswith(b"}\n")
    assert list(answer.json()) == ["code", "data", "success"]  # key-sorted, as Go's encoder writes maps
    payload = answer.json()
    assert (payload["code"], payload["success"], payload["data"]["Details"]) == (200, True, "Sent")
    assert GENERATED_ID.fullmatch(payload["data"]["Id"])
    assert isinstance(payload["data"]["Timestamp"], int)
    [message] = _sent(control, server)
    assert (message["id"], message["phone"], message["body"], message["resends"]) == (
        payload["data"]["Id"],
        PEER,
        "hello",
        0,
    )


def test_field_names_are_matched_without_case_and_a_plus_is_stripped(
    server: FlavourInstance, control: SimulatorControl
) -> None:
    answer = _send(server, phone=f"+{PEER}", BODY="hi", id="MY-ID-1")

    assert answer.json()["data"]["Id"] == "MY-ID-1"
    assert [(m["phone"], m["id"]) for m in _sent(control, server)] == [(PEER, "MY-ID-1")]


def test_a_resend_of_an_id_the_recipient_has_is_one_message(server: FlavourInstance, control: SimulatorControl) -> None:
    first = _send(server, Phone=PEER, Body="hello", Id="3EB0AAAAAAAAAAAAAAAAAA")
    again = _send(server, Phone=PEER, Body="hello", Id="3EB0AAAAAAAAAAAAAAAAAA")
    other_recipient = _send(server, Phone="5511977776666", Body="hello", Id="3EB0AAAAAAAAAAAAAAAAAA")

    assert first.status_code == again.status_code == other_recipient.status_code == 200
    assert again.json()["data"]["Id"] == "3EB0AAAAAAAAAAAAAAAAAA"
    assert [(m["phone"], m["resends"]) for m in _sent(control, server)] == [(PEER, 1), ("5511977776666", 0)]


def test_a_send_without_a_whatsapp_session_is_no_session(server: FlavourInstance, control: SimulatorControl) -> None:
    control.set_connection(server.id, False)

    answer = _send(server, Phone=PEER, Body="hello")

    assert answer.status_code == 500
    assert answer.content == b'{"code":500,"error":"no session","success":false}\n'
    assert _sent(control, server) == []


def test_a_dropped_socket_keeps_the_session_but_the_send_fails(
    make_flavoured: FlavourFactory, control: SimulatorControl
) -> None:
    instance = make_flavoured("wuzapi", subscribed=False)
    control.set_connection(instance.id, False, reason="disconnected")

    answer = _send(instance, Phone=PEER, Body="hello")

    assert answer.status_code == 500
    assert answer.json()["error"] == "error sending message: websocket not connected"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"not json", "could not decode Payload"),
        (b'{"Phone": 5511, "Body": "x"}', "could not decode Payload"),
        (b'{"Body": "x"}', "missing Phone in Payload"),
        (b'{"Phone": "5511988887777", "Body": ""}', "missing Body in Payload"),
    ],
)
def test_bad_payloads_are_refused_with_wuzapi_texts(server: FlavourInstance, content: bytes, error: str) -> None:
    answer = _request(server, "POST", "/chat/send/text", content=content)

    assert answer.status_code == 400
    assert answer.json() == {"code": 400, "error": error, "success": False}


def test_an_unknown_token_is_the_real_401(server: FlavourInstance) -> None:
    answer = httpx.post(
        server.base_url + "/chat/send/text", headers={"token": "nope"}, json={"Phone": PEER, "Body": "x"}
    )

    assert answer.status_code == 401
    assert answer.content == b'{"code":401,"error":"unauthorized","success":false}\n'


def test_the_token_can_come_as_a_query_parameter(server: FlavourInstance) -> None:
    answer = httpx.get(server.base_url + "/session/status", params={"token": server.token})

    assert answer.status_code == 200


def test_session_status_has_the_real_keys_and_never_the_token(
    server: FlavourInstance, control: SimulatorControl
) -> None:
    connected = _request(server, "GET", "/session/status")
    control.set_connection(server.id, False)
    disconnected = _request(server, "GET", "/session/status")

    data = connected.json()["data"]
    assert {"connected", "loggedIn", "id", "name", "jid", "webhook", "events", "hmac_configured"} <= set(data)
    assert "token" not in data and server.token not in connected.text
    assert (data["connected"], data["loggedIn"], data["name"]) == (True, True, server.id)
    assert disconnected.status_code == 200
    assert (disconnected.json()["data"]["connected"], disconnected.json()["data"]["loggedIn"]) == (False, False)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/capabilities"), ("GET", "/instance/status"), ("POST", "/call/dial"), ("GET", "/call/active")],
)
def test_a_plain_wuzapi_has_no_calls_routes(make_flavoured: FlavourFactory, method: str, path: str) -> None:
    instance = make_flavoured("wuzapi", subscribed=False)

    answer = _request(instance, method, path, json={})

    assert answer.status_code == 404
    assert answer.text == "404 page not found\n"


def test_the_calls_server_keeps_its_own_routes(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("calls", subscribed=False)

    assert _request(instance, "GET", "/instance/status").json()["instance"]["connected"] is True
    assert _request(instance, "GET", "/v1/capabilities").json()["capabilities"]["calls"] is True
    assert _request(instance, "GET", "/webhook").json()["enabled"] is False


def test_tokens_are_per_server(make_flavoured: FlavourFactory, simulator: Simulator) -> None:
    plain = make_flavoured("wuzapi", subscribed=False)

    answer = httpx.get(simulator.base_url + "/session/status", headers={"token": plain.token})

    assert answer.status_code == 401


# --- the plain wuzapi's webhook and HMAC routes ----------------------------------------------


def test_webhook_routes_have_the_real_shapes(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("wuzapi", subscribed=False)
    url = "https://hooks.example.com/wuzapi/inbound"

    empty = _request(instance, "GET", "/webhook").json()["data"]
    posted = _request(instance, "POST", "/webhook", json={"webhookurl": url, "events": ["Message", "Bogus"]})
    shown = _request(instance, "GET", "/webhook").json()["data"]
    put = _request(instance, "PUT", "/webhook", json={"webhook": url, "events": ["ReadReceipt"], "active": True})
    inactive = _request(instance, "PUT", "/webhook", json={"webhook": url})
    deleted = _request(instance, "DELETE", "/webhook")

    assert empty == {"subscribe": [""], "webhook": ""}
    assert posted.json()["data"] == {"webhook": url}
    assert shown == {"subscribe": ["Message"], "webhook": url}
    assert put.json()["data"] == {"active": True, "events": ["ReadReceipt"], "webhook": url}
    assert inactive.json()["data"] == {"active": False, "events": None, "webhook": ""}
    assert deleted.json()["data"] == {"Details": "Webhook and events deleted successfully"}


def test_hmac_config_answers_without_the_envelope(make_flavoured: FlavourFactory) -> None:
    instance = make_flavoured("wuzapi", subscribed=False, secret=None)

    unset = _request(instance, "GET", "/session/hmac/config")
    short = _request(instance, "POST", "/session/hmac/config", json={"hmac_key": "too-short"})
    saved = _request(instance, "POST", "/session/hmac/config", json={"hmac_key": "k" * 32})
    shown = _request(instance, "GET", "/session/hmac/config")
    status = _request(instance, "GET", "/session/status").json()["data"]
    deleted = _request(instance, "DELETE", "/session/hmac/config")

    assert unset.json() == {"hmac_key": ""}
    assert unset.headers["content-type"] == "application/json; charset=utf-8"
    assert (short.status_code, short.json()["error"]) == (400, "HMAC key must be at least 32 characters long")
    assert saved.json() == {"Details": "HMAC configuration saved successfully"}
    assert shown.json() == {"hmac_key": "***"}
    assert status["hmac_configured"] is True
    assert deleted.json() == {"Details": "HMAC configuration deleted successfully"}


def test_answers_are_go_encoded(make_flavoured: FlavourFactory) -> None:
    """Every object level key-sorted, `&` `<` `>` escaped, one trailing newline."""
    instance = make_flavoured("wuzapi", subscribed=False)
    _request(instance, "POST", "/webhook", json={"webhookurl": "http://h/x?a=1&b=<2>", "events": ["Message"]})

    answer = _request(instance, "GET", "/webhook")

    assert answer.content == (
        b'{"code":200,"data":{"subscribe":["Message"],"webhook":"http://h/x?a=1\\u0026b=\\u003c2\\u003e"},'
        b'"success":true}\n'
    )
    assert json.loads(answer.content)["data"]["webhook"] == "http://h/x?a=1&b=<2>"

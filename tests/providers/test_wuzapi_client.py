"""WuzapiClient against a plain wuzapi: requests as wuzapi reads them, its exact answer bytes back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchboard.core.errors import (
    InvalidInput,
    ProviderDisconnected,
    ProviderError,
    ProviderRejected,
    ProviderThrottled,
    ProviderTimeout,
    ProviderUnavailable,
)
from switchboard.providers.base import ProviderTarget
from switchboard.providers.wuzapi import WEBHOOK_EVENTS, WuzapiClient

FIXTURES = Path(__file__).resolve().parents[1] / "contracts" / "wuzapi"
TOKEN = "b7e2c9a14f3d4e8a9c0d1e2f3a4b5c6d"
BASE_URL = "http://127.0.0.1:8080"
KEY = json.loads((FIXTURES / "request_hmac_config.json").read_text())["hmac_key"]
HOOK = "https://hooks.example.com/wuzapi/inbound"
NOT_FOUND = httpx.Response(404, content=b"404 page not found\n", headers={"content-type": "text/plain; charset=utf-8"})


def answer(name: str, status: int = 200, content_type: str = "application/json") -> httpx.Response:
    return httpx.Response(status, content=(FIXTURES / name).read_bytes(), headers={"content-type": content_type})


class Server:
    """Answers by (method, path) and records every request."""

    def __init__(self, routes: dict[tuple[str, str], httpx.Response | Callable[[], httpx.Response]]) -> None:
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        found = self.routes.get((request.method, request.url.path), NOT_FOUND)
        return found() if callable(found) else found

    def client(self) -> WuzapiClient:
        return WuzapiClient(local_mode=True, transport=httpx.MockTransport(self.handle))

    def paths(self) -> list[str]:
        return [f"{request.method} {request.url.path}" for request in self.requests]

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


def target(base_url: str = BASE_URL) -> ProviderTarget:
    return ProviderTarget(kind="wuzapi", base_url=base_url, provider_instance_id="atendimento-01", instance_token=TOKEN)


def send_with(response: httpx.Response) -> tuple[Server, Callable[[], Any]]:
    server = Server({("POST", "/chat/send/text"): response})
    client = server.client()
    return server, lambda: client.send_text(target(), "5511987654321", "Temos horário amanhã às 14h.", "msg_abc123")


def assert_clean(error: ProviderError) -> None:
    """Our messages never carry the token, the host or the provider's free text."""
    for leaked in (TOKEN, "127.0.0.1", "no session", "error sending message", "device JID", "timed out waiting"):
        assert leaked not in str(error)


# --- send ----------------------------------------------------------------------------------


def test_a_send_passes_our_key_as_the_message_id_and_returns_wuzapis_id() -> None:
    server, send = send_with(answer("answer_send_text_success.json"))

    sent = send()

    assert sent.provider_message_id == "3EB0C431E2A6F07B9D18AF"
    [request] = server.requests
    assert request.headers["token"] == TOKEN
    assert server.body() == {"Phone": "5511987654321", "Body": "Temos horário amanhã às 14h.", "Id": "msg_abc123"}
    assert set(server.body()) == set(json.loads((FIXTURES / "request_send_text.json").read_text()))


def test_a_retry_sends_the_same_message_id() -> None:
    server, send = send_with(answer("answer_send_text_success.json"))

    send()
    send()

    assert server.body(0)["Id"] == server.body(1)["Id"] == "msg_abc123"


@pytest.mark.parametrize(
    "response",
    [
        answer("answer_no_session.json", 500),
        answer("answer_send_text_error_not_logged_in.json", 500),
        httpx.Response(500, json={"code": 500, "error": "No session", "success": False}),
        httpx.Response(500, json={"code": 500, "error": "error sending message: websocket not connected"}),
        httpx.Response(409, json={"error": "not_connected"}),
    ],
    ids=["no-session", "not-paired", "older-capitalised", "websocket", "calls-capable-409"],
)
def test_a_send_without_a_whatsapp_session_is_disconnected(response: httpx.Response) -> None:
    _, send = send_with(response)

    with pytest.raises(ProviderDisconnected) as refused:
        send()
    assert_clean(refused.value)


def test_a_send_that_whatsapp_did_not_confirm_in_time_has_an_unknown_outcome() -> None:
    _, send = send_with(answer("answer_send_text_error_timeout.json", 500))

    with pytest.raises(ProviderTimeout) as unknown:
        send()
    assert_clean(unknown.value)


def test_whatsapps_463_refusal_is_the_numbers_reach_out_timelock() -> None:
    _, send = send_with(answer("answer_send_text_error_463_timelock.json", 500))

    with pytest.raises(ProviderThrottled) as throttled:
        send()
    assert throttled.value.details["provider_code"] == "463"
    assert_clean(throttled.value)


def test_any_other_500_is_unavailable() -> None:
    _, send = send_with(
        httpx.Response(500, json={"code": 500, "error": "error sending message: server returned error 500"})
    )

    with pytest.raises(ProviderUnavailable) as unavailable:
        send()
    assert_clean(unavailable.value)


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("answer_send_text_error_missing_body.json", 400),
        ("answer_send_text_error_missing_phone.json", 400),
        ("answer_send_text_error_bad_json.json", 400),
        ("answer_unauthorized.json", 401),
    ],
)
def test_a_refused_send_is_rejected(name: str, status: int) -> None:
    _, send = send_with(answer(name, status))

    with pytest.raises(ProviderRejected) as rejected:
        send()
    assert rejected.value.details["status"] == status
    assert_clean(rejected.value)


def test_the_calls_capable_answer_shape_is_still_read() -> None:
    _, send = send_with(httpx.Response(200, json={"id": "3EB0FFFF"}))

    assert send().provider_message_id == "3EB0FFFF"


@pytest.mark.parametrize("body", [{"code": 200, "data": {"Details": "Sent"}, "success": True}, {}])
def test_a_success_without_a_message_id_has_an_unknown_outcome(body: dict[str, Any]) -> None:
    _, send = send_with(httpx.Response(200, json=body))

    with pytest.raises(ProviderTimeout):
        send()


@pytest.mark.parametrize(
    "content",
    [b"[" * 100_000, b'{"data": ' * 5_000 + b"1" + b"}" * 5_000, b"\xff\xfe not utf-8", b'{"data": NaN}'],
    ids=["brackets", "deep-object", "not-utf8", "nan"],
)
def test_a_hostile_answer_to_a_send_is_an_unknown_outcome_not_a_crash(content: bytes) -> None:
    """A server that answers garbage (or nests until Python's parser would recurse to death)
    leaves the send ambiguous, the same as an answer that never came."""
    _, send = send_with(httpx.Response(200, content=content))

    with pytest.raises(ProviderTimeout):
        send()


@pytest.mark.parametrize("content", [b"[" * 100_000, b"\xff\xfe"], ids=["brackets", "not-utf8"])
def test_a_hostile_error_answer_is_still_classified_by_its_status(content: bytes) -> None:
    _, send = send_with(httpx.Response(503, content=content))

    with pytest.raises(ProviderUnavailable):
        send()


# --- status --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "connected"),
    [
        ("answer_session_status_connected.json", True),
        ("answer_session_status_not_connected.json", False),
        ("answer_session_status_never_paired.json", False),
    ],
)
def test_a_plain_wuzapi_status_is_read_from_the_session(name: str, connected: bool) -> None:
    server = Server({("GET", "/session/status"): answer(name)})

    status = server.client().instance_status(target())

    assert status.connected is connected
    assert (status.kind, status.calls_max_concurrent, status.calls_config_version) == (None, None, None)
    assert TOKEN not in repr(status)
    assert server.paths() == ["GET /instance/status", "GET /session/status"]
    assert all(request.headers["token"] == TOKEN for request in server.requests)


@pytest.mark.parametrize(
    ("data", "connected"),
    [
        ({"connected": True, "loggedIn": False}, False),
        ({"Connected": True, "LoggedIn": True}, True),
        ({"Connected": True, "LoggedIn": False}, False),
    ],
)
def test_connected_and_usable_needs_both_flags_in_either_casing(data: dict[str, bool], connected: bool) -> None:
    server = Server({("GET", "/session/status"): httpx.Response(200, json={"code": 200, "data": data})})

    assert server.client().instance_status(target()).connected is connected


def test_a_plain_server_is_remembered_per_base_url() -> None:
    server = Server({("GET", "/session/status"): answer("answer_session_status_connected.json")})
    client = server.client()

    client.instance_status(target())
    client.instance_status(target())
    client.instance_status(target("http://127.0.0.1:8081"))

    assert server.paths() == [
        "GET /instance/status",
        "GET /session/status",
        "GET /session/status",
        "GET /instance/status",
        "GET /session/status",
    ]


def test_a_calls_capable_server_is_read_from_instance_status_only() -> None:
    instance = {"instance": {"connected": True, "kind": "calls", "callsMaxConcurrent": 2, "callsConfigVersion": 5}}
    server = Server({("GET", "/instance/status"): httpx.Response(200, json=instance)})

    status = server.client().instance_status(target())

    assert (status.connected, status.kind, status.calls_max_concurrent, status.calls_config_version) == (
        True,
        "calls",
        2,
        5,
    )
    assert server.paths() == ["GET /instance/status"]


def test_a_server_with_neither_status_route_is_rejected() -> None:
    server = Server({})

    with pytest.raises(ProviderRejected):
        server.client().instance_status(target())


def test_a_wrong_token_on_a_plain_wuzapi_is_rejected() -> None:
    server = Server({("GET", "/session/status"): answer("answer_unauthorized.json", 401)})

    with pytest.raises(ProviderRejected) as rejected:
        server.client().instance_status(target())
    assert_clean(rejected.value)


# --- webhook configuration -----------------------------------------------------------------


def webhook_server(hmac_answer: httpx.Response | None = None) -> Server:
    saved = answer("answer_hmac_config_saved.json", content_type="application/json; charset=utf-8")
    return Server(
        {
            ("POST", "/session/hmac/config"): hmac_answer or saved,
            ("POST", "/webhook"): answer("answer_set_webhook.json"),
            ("GET", "/webhook"): answer("answer_get_webhook.json"),
        }
    )


def test_configuring_sets_the_key_first_then_the_url_with_every_event() -> None:
    server = webhook_server()

    subscription = server.client().configure_webhook(target(), HOOK, WEBHOOK_EVENTS, KEY)

    assert server.paths() == ["POST /session/hmac/config", "POST /webhook"]
    assert server.body(0) == json.loads((FIXTURES / "request_hmac_config.json").read_text())
    assert server.body(1) == json.loads((FIXTURES / "request_set_webhook.json").read_text())
    assert all(request.headers["token"] == TOKEN for request in server.requests)
    assert (subscription.url, subscription.events, subscription.enabled) == (HOOK, list(WEBHOOK_EVENTS), True)


@pytest.mark.parametrize(
    ("url", "events", "key"),
    [
        (HOOK, [], KEY),
        (HOOK, ["Message", "Receipt"], KEY),
        (HOOK, WEBHOOK_EVENTS, "short-key"),
        ("", WEBHOOK_EVENTS, KEY),
    ],
    ids=["no-events", "receipt-is-not-posted", "short-key", "no-url"],
)
def test_a_configuration_wuzapi_would_mishandle_is_refused_before_any_request(
    url: str, events: list[str], key: str
) -> None:
    server = webhook_server()

    with pytest.raises(InvalidInput) as invalid:
        server.client().configure_webhook(target(), url, events, key)
    assert server.requests == []
    assert key not in str(invalid.value)


def test_a_key_the_server_refuses_stops_before_the_url_is_set() -> None:
    server = webhook_server(answer("answer_hmac_config_error_short_key.json", 400))

    with pytest.raises(ProviderRejected) as rejected:
        server.client().configure_webhook(target(), HOOK, WEBHOOK_EVENTS, KEY)
    assert server.paths() == ["POST /session/hmac/config"]
    assert KEY not in str(rejected.value)


def test_reading_the_webhook_gives_its_url_and_events() -> None:
    subscription = webhook_server().client().read_webhook(target())

    assert (subscription.url, subscription.events, subscription.enabled, subscription.exists) == (
        HOOK,
        ["Message", "ReadReceipt", "Connected", "Disconnected", "LoggedOut"],
        True,
        True,
    )


def test_a_webhook_without_events_reads_as_an_empty_list_not_one_blank_event() -> None:
    server = Server({("GET", "/webhook"): answer("answer_get_webhook_no_events.json")})

    subscription = server.client().read_webhook(target())

    assert (subscription.url, subscription.events, subscription.enabled, subscription.exists) == (
        None,
        [],
        False,
        False,
    )

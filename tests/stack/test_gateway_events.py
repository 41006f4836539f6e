"""The local gateway builds the events API Gateway sends, checked against the samples in events/.

The requests go over a real socket with exact header lines (repeats included), so the whole
path is covered: HTTP server -> raw request -> payload format 2.0 event -> authorizer.
The samples are the ones `sam local invoke -e events/<name>.json` uses.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack.apigw import HttpApi
from devstack.gateway import Gateway
from devstack.lambdas import Functions

EVENTS = Path(__file__).resolve().parents[2] / "events"
VOLATILE_CONTEXT = ("requestId", "time", "timeEpoch")
AUTHORIZER_CONTEXT = {"tenant": "demo", "keyId": "key_01", "scopes": "admin", "attendantId": ""}


class CapturingFunctions(Functions):
    """The template's functions, but each invocation is recorded instead of run."""

    def __init__(self) -> None:
        super().__init__()
        self.invocations: list[tuple[str, dict[str, Any]]] = []

    def invoke(self, logical_id: str, event: Any) -> Any:
        self.invocations.append((logical_id, event))
        if event.get("type") == "REQUEST":
            return {"isAuthorized": True, "context": AUTHORIZER_CONTEXT}
        return {"statusCode": 200, "headers": {"content-type": "text/plain"}, "body": "ok", "cookies": ["a=1", "b=2"]}


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[Gateway, CapturingFunctions]]:
    functions = CapturingFunctions()
    server = Gateway(HttpApi(functions), port=0).start()
    yield server, functions
    server.stop()


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return loaded


def send(gateway: Gateway, method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"") -> Any:
    """One request with exactly these header lines (http.client adds none of its own)."""
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    for name, value in headers:
        connection.putheader(name, value)
    connection.endheaders(body or None)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def without_volatile(event: dict[str, Any]) -> dict[str, Any]:
    context = {k: v for k, v in event["requestContext"].items() if k not in VOLATILE_CONTEXT}
    return {**event, "requestContext": context}


def request_of(event: dict[str, Any]) -> tuple[str, str, list[tuple[str, str]]]:
    """The HTTP request that produces a sample event (repeated values back on separate lines)."""
    method = event["requestContext"]["http"]["method"]
    target = event["rawPath"] + (f"?{event['rawQueryString']}" if event["rawQueryString"] else "")
    lines = [(name, value) for name, value in event["headers"].items() if name not in REPEATED]
    lines += [(name, value) for name, values in REPEATED.items() for value in values]
    lines += [("cookie", "; ".join(event.get("cookies", [])))] if event.get("cookies") else []
    return method, target, lines


# Headers sent as several lines in the requests behind the samples: API Gateway joins them.
REPEATED = {"x-forwarded-for": ["203.0.113.7", "10.0.0.1"], "accept": ["application/json", "text/plain"]}


def test_given_a_percent_encoded_path_when_it_is_routed_then_the_event_matches_the_sample(
    gateway: tuple[Gateway, CapturingFunctions],
) -> None:
    server, functions = gateway
    expected = sample("http_api_request.json")
    functions.invocations.clear()
    method, target, headers = request_of(expected)

    # sent encoded; an HTTP API hands the path on decoded (tests/contracts/apigateway)
    answer = send(server, method, target.replace("sales.team", "sales%2Eteam"), headers)

    assert answer.status == 200
    (authorizer, authorizer_event), (function, event) = functions.invocations
    assert (authorizer, function) == ("AuthorizerFunction", "CatalogFunction")
    assert without_volatile(event) == without_volatile(expected)
    assert event["pathParameters"] == {"name": "sales.team"}
    assert event["rawPath"] == event["requestContext"]["http"]["path"] == "/api/instances/sales.team"
    assert event["queryStringParameters"] == {"view": "full", "tag": "a,b"}
    assert event["headers"]["x-forwarded-for"] == "203.0.113.7,10.0.0.1"
    assert event["cookies"] == ["session=abc", "theme=dark"]
    assert without_volatile(authorizer_event) == without_volatile(sample("authorizer_request.json"))


def test_given_a_body_that_is_not_utf8_when_it_is_routed_then_it_arrives_base64_encoded(
    gateway: tuple[Gateway, CapturingFunctions],
) -> None:
    server, functions = gateway
    expected = sample("http_api_binary_body.json")
    functions.invocations.clear()
    method, target, headers = request_of(expected)

    send(server, method, target, headers, body=b"\xff\xfe\x00binary\x80")

    ((function, event),) = functions.invocations
    assert function == "WebhooksFunction"
    assert without_volatile(event) == without_volatile(expected)
    assert event["isBase64Encoded"] is True
    assert event["body"] == "//4AYmluYXJ5gA=="


def test_given_a_proxy_response_with_cookies_then_the_client_gets_one_set_cookie_line_each(
    gateway: tuple[Gateway, CapturingFunctions],
) -> None:
    server, _functions = gateway
    method, target, headers = request_of(sample("http_api_request.json"))

    answer = send(server, method, target, headers)

    assert answer.headers.get_all("set-cookie") == ["a=1", "b=2"]
    assert answer.headers["content-type"] == "text/plain"


def test_given_no_authorization_header_then_the_authorizer_is_not_called_and_the_answer_is_401(
    gateway: tuple[Gateway, CapturingFunctions],
) -> None:
    server, functions = gateway
    functions.invocations.clear()

    answer = send(server, "GET", "/api/instances/x", [("host", "127.0.0.1")])

    assert answer.status == 401
    assert functions.invocations == []


def test_given_a_chunked_body_then_the_function_gets_it_whole(gateway: tuple[Gateway, CapturingFunctions]) -> None:
    server, functions = gateway
    functions.invocations.clear()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("POST", "/webhooks/prv_01", body=iter([b'{"a":', b" 1}"]), encode_chunked=True)
    connection.getresponse().read()
    connection.close()

    ((_function, event),) = functions.invocations
    assert event["body"] == '{"a": 1}'


def test_given_a_body_over_the_payload_limit_then_413_and_no_invocation(
    gateway: tuple[Gateway, CapturingFunctions],
) -> None:
    server, functions = gateway
    functions.invocations.clear()

    answer = send(server, "POST", "/webhooks/prv_01", [("content-length", str(10 * 1024 * 1024 + 1))])

    assert answer.status == 413
    assert functions.invocations == []

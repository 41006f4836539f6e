"""The local gateway refuses what API Gateway refuses, the way it does, over a real socket: in
JSON (`{"message": ...}`), at once, and never with an HTML page or by waiting on the client.

- a body that stops short of its Content-Length: 408 after the gateway's body timeout;
- a header line over 64 KiB (the HTTP server's own limit) or more than 10,240 bytes of request
  line and header values (API Gateway's documented quota): 431;
- a path whose percent-decoding fails: 400, as a live HTTP API answered;
- HEAD: routed like any method, answered with the status and headers and without a body.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.apigw import HttpApi
from devstack.gateway import Gateway
from devstack.lambdas import Functions

BODY_TIMEOUT = 0.5


class AnsweringFunctions(Functions):
    """The template's functions, answering every invocation with its event's method and path."""

    def invoke(self, logical_id: str, event: Any) -> Any:
        if event.get("type") == "REQUEST":
            return {"isAuthorized": True, "context": {"tenant": "demo", "keyId": "key_1", "scopes": "admin"}}
        seen = {"function": logical_id, "rawPath": event["rawPath"], "path": event.get("pathParameters")}
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(seen)}


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    server = Gateway(HttpApi(AnsweringFunctions()), port=0, body_timeout=BODY_TIMEOUT).start()
    yield server
    server.stop()


def exchange(gateway: Gateway, request: bytes, *, timeout: float = 10) -> tuple[int, dict[str, str], bytes, float]:
    """Send raw bytes, read the whole answer: (status, headers, body, seconds until it came)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=timeout) as connection:
        connection.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            if not chunk:
                break
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length and not request.startswith(b"HEAD"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(lines[0].split()[1]), headers, body, time.monotonic() - started


def test_a_body_shorter_than_its_content_length_is_answered_408_in_json_after_the_body_timeout(
    gateway: Gateway,
) -> None:
    request = b'POST /api/numbers HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\ncontent-length: 100\r\n\r\n{"a"'

    status, headers, body, seconds = exchange(gateway, request)

    assert (status, json.loads(body)) == (408, {"message": "Request Timeout"})
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert BODY_TIMEOUT <= seconds < BODY_TIMEOUT + 3


def test_a_header_line_over_64_kib_is_a_json_431(gateway: Gateway) -> None:
    request = b"GET /api/numbers HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 65536 + b"\r\n\r\n"

    status, headers, body, _ = exchange(gateway, request)

    assert (status, headers["content-type"]) == (431, "application/json")
    assert json.loads(body) == {"message": "Request Header Fields Too Large"}


def test_over_10240_bytes_of_request_line_and_header_values_is_a_json_431(gateway: Gateway) -> None:
    within = b"GET /api/numbers HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\nx-a: " + b"a" * 9000 + b"\r\n\r\n"
    over = b"GET /api/numbers HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k\r\nx-a: " + b"a" * 10240 + b"\r\n\r\n"

    assert exchange(gateway, within)[0] == 200
    status, headers, body, _ = exchange(gateway, over)
    assert (status, headers["content-type"], json.loads(body)) == (
        431,
        "application/json",
        {"message": "Request Header Fields Too Large"},
    )


def test_a_path_is_decoded_before_it_is_routed_and_a_bad_escape_is_a_json_400(gateway: Gateway) -> None:
    head = b"\r\nhost: x\r\nauthorization: Bearer k\r\n\r\n"

    status, _, body, _ = exchange(gateway, b"GET /api/instances/sales%2Dteam HTTP/1.1" + head)
    assert status == 200
    assert json.loads(body) == {
        "function": "CatalogFunction",
        "rawPath": "/api/instances/sales-team",
        "path": {"name": "sales-team"},
    }
    status, headers, body, _ = exchange(gateway, b"GET /api/instances/sales%25team HTTP/1.1" + head)
    assert (status, headers["content-type"], json.loads(body)) == (400, "application/json", {"message": "Bad Request"})


def test_head_is_routed_like_any_method_and_answered_without_a_body(gateway: Gateway) -> None:
    """HEAD matches no GET route of an HTTP API: the `$default` route answers it (here the stub
    answers every function alike); the length of the body it leaves out is still told."""
    status, headers, body, _ = exchange(gateway, b"HEAD /api/numbers HTTP/1.1\r\nhost: x\r\n\r\n")

    assert status == 200
    assert body == b""
    assert int(headers["content-length"]) == len(
        json.dumps({"function": "DocsFunction", "rawPath": "/api/numbers", "path": None})
    )

"""The counting proxy of `python -m tools.bench proxy`: what it forwards is what came, it names each
request's operation as the wire does, and through the whole local stack it sees every request the
functions send."""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tools.bench import proxy
from tools.bench.proxy import FUNCTIONS, LOCAL_STACK, SEND_PATH, UNATTRIBUTED, CountingProxy, Seen

AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=local/20261202/us-east-1/sqs/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date, Signature=abc"
)


class Echo:
    """An upstream that keeps each request's header lines and body as they arrived."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, list[tuple[str, str]], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((self.requestline, list(self.headers.raw_items()), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def echo() -> Iterator[Echo]:
    upstream = Echo()
    yield upstream
    upstream.stop()


def _post(url: str, path: str, headers: list[tuple[str, str]], body: bytes) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port))
    try:
        connection.putrequest("POST", path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def test_the_proxy_forwards_the_request_line_headers_and_body_as_they_came_but_the_runs_label(echo: Echo) -> None:
    counting = CountingProxy()
    url = counting.in_front_of(echo.url)
    body = bytes(range(256)) * 3
    headers = [
        ("Host", url.removeprefix("http://")),
        ("X-Amz-Target", "AmazonSQS.SendMessage"),
        ("Content-Type", "application/x-amz-json-1.0"),
        ("User-Agent", "Boto3/1.0 Botocore/1.0"),
        ("X-Amz-Date", "20261202T120000Z"),
        ("Authorization", AUTHORIZATION),
        ("Content-Length", str(len(body))),
        (proxy.FUNCTION_HEADER, "SendWorkerFunction"),
    ]
    try:
        with counting.window() as seen:
            status, answer = _post(url, "/?keep=this%20query", headers, body)
    finally:
        counting.stop()

    assert (status, answer) == (200, b"{}")
    (requestline, forwarded, got), *_ = echo.requests
    assert requestline == "POST /?keep=this%20query HTTP/1.1"
    assert forwarded == headers[:-1]
    assert got == body
    assert seen == Counter({Seen(FUNCTIONS, "SendWorkerFunction", "sqs.SendMessage"): 1})


def test_an_operation_is_named_by_its_target_its_action_or_its_path() -> None:
    signed = {"Authorization": AUTHORIZATION.replace("/sqs/", "/dynamodb/")}

    assert proxy.operation_of("POST", "/", {**signed, "X-Amz-Target": "DynamoDB_20120810.GetItem"}, b"") == (
        "dynamodb.GetItem"
    )
    form = {**signed, "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    assert proxy.operation_of("POST", "/", form, b"Action=GetQueueUrl&Version=2012-11-05") == "dynamodb.GetQueueUrl"
    assert proxy.operation_of("GET", "/?Action=ListQueues", signed, b"") == "dynamodb.ListQueues"
    assert proxy.operation_of("POST", "/@connections/abc", signed, b"{}") == "dynamodb.POST /@connections/abc"
    assert proxy.whose("Boto3/1.0 Botocore/1.0 switchboard-devstack/event-source-mapping", "X") == (
        LOCAL_STACK,
        "event-source-mapping",
    )
    assert proxy.whose("Boto3/1.0 Botocore/1.0", None) == (FUNCTIONS, UNATTRIBUTED)


@pytest.mark.stack
def test_through_the_local_stack_the_proxy_sees_every_request_the_functions_send() -> None:
    rounds = proxy.run(messages=3)

    assert [each.name for each in rounds] == ["new recipient", "known recipient"]
    for each in rounds:
        functions = Counter({seen: n for seen, n in each.seen.items() if seen.group == FUNCTIONS})
        sent = Counter({seen: n for seen, n in each.sent.items() if seen.group == FUNCTIONS})
        # What botocore sent in the round, each attempt as its event fired, arrived at the proxy,
        # named there from the wire alone as botocore named it.
        assert functions == sent, each.name
        # The authorizer may have its key from the warm-up (its cache), the others may not.
        assert {seen.who for seen in functions} >= set(SEND_PATH) - {"AuthorizerFunction"}
        assert UNATTRIBUTED not in {seen.who for seen in functions}
        # Each message reached the worker through the event source mapping, which deleted it; the
        # bus's rule put each status change with a client webhook on its queue, as EventBridge does.
        machinery = {(seen.who, seen.operation) for seen in each.seen if seen.group == LOCAL_STACK}
        assert {operation for _, operation in machinery} <= {
            "sqs.ReceiveMessage",
            "sqs.DeleteMessageBatch",
            "sqs.SendMessage",
        }
        assert ("event-source-mapping", "sqs.DeleteMessageBatch") in machinery
        assert ("event-rules", "sqs.SendMessage") in machinery
        accepted = each.seen[Seen(FUNCTIONS, "MessagesFunction", "sqs.SendMessage")]
        assert accepted == 3, each.name

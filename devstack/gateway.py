"""The local gateway: a real HTTP server in front of the `HttpApi` emulator, and the web
console's static files at `/console/` on the same origin (devstack/console.py).

It hands the emulator what API Gateway itself sees: the path as sent (still percent-encoded),
the raw query string, every header line as received (repeated ones kept, in order) and the
raw body bytes. Building the event from those is the emulator's job.

Where the HTTP server itself refuses a request (a header line over 64 KiB, more than 100
headers, a malformed request line), or a body stops arriving before its Content-Length, the
answer is JSON in API Gateway's own shape (`{"message": "..."}`), never an HTML page or a wait
for the client to give up: a body that sends nothing for `body_timeout` seconds gets 408.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from werkzeug.serving import WSGIRequestHandler

from devstack.apigw import HttpApi, HttpResponse
from devstack.console import ConsoleFiles
from devstack.serving import Server

RAW_HEADERS = "devstack.raw_headers"
HANDLER = "devstack.handler"
MAX_PAYLOAD = 10 * 1024 * 1024  # API Gateway's request payload limit
TOO_LARGE = b'{"message":"Request Entity Too Large"}'
TIMED_OUT = b'{"message":"Request Timeout"}'
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}
# How long a body may send nothing before the request is answered 408 (API Gateway documents no
# figure; a client that stalls must not hold a connection until it gives up itself).
BODY_TIMEOUT_SECONDS = 5.0


class RawHeadersHandler(WSGIRequestHandler):
    """Keeps the header lines as received (WSGI folds repeats); no access log line per request;
    the server's own refusals in JSON."""

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        environ[RAW_HEADERS] = list(self.headers.items())
        environ[HANDLER] = self
        return environ

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's refusals (431 for a header line over 64 KiB or over 100 headers, 400 for a
        malformed request line, 414 for one over 64 KiB) in the gateway's JSON, then the connection
        closes: what follows on it cannot be read as a request."""
        phrase = _reason(code)
        body = json.dumps({"message": phrase}).encode()
        self.send_response(code, phrase)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        if getattr(self, "command", None) != "HEAD":
            self.wfile.write(body)
        self.close_connection = True


class GatewayApp:
    """WSGI app: one HTTP request -> the console's files, or `HttpApi.handle` -> the proxy response."""

    def __init__(
        self, api: HttpApi, console: ConsoleFiles | None = None, body_timeout: float = BODY_TIMEOUT_SECONDS
    ) -> None:
        self.api = api
        self.console = console or ConsoleFiles()
        self.body_timeout = body_timeout

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        raw_path, _, query = raw_uri.partition("?")
        page = self.console.handle(environ["REQUEST_METHOD"], raw_path, query)
        if page is not None:
            # A HEAD answer has no body but the length the GET's would have.
            return self._answer(start_response, page, length=page.headers.get("content-length"))
        try:
            body = _body(environ, self.body_timeout)
        except TimeoutError:
            # The rest of the body may still come: nothing more on this connection is a request.
            environ[HANDLER].close_connection = True
            timed_out = HttpResponse(408, {"content-type": "application/json"}, TIMED_OUT)
            return self._answer(start_response, timed_out, close=True)
        if body is None:
            return self._answer(start_response, HttpResponse(413, {"content-type": "application/json"}, TOO_LARGE))
        answer = self.api.handle(
            environ["REQUEST_METHOD"],
            raw_path,
            query=query,
            headers=environ.get(RAW_HEADERS) or [],
            body=body,
            source_ip=environ.get("REMOTE_ADDR", "127.0.0.1"),
        )
        # The emulator answers HEAD without a body but with the length the body would have.
        length = answer.headers.get("content-length") if environ["REQUEST_METHOD"] == "HEAD" else None
        return self._answer(start_response, answer, length=length)

    @staticmethod
    def _answer(
        start_response: Any, answer: HttpResponse, length: str | None = None, *, close: bool = False
    ) -> Iterable[bytes]:
        headers = [(name, value) for name, value in answer.headers.items() if name.lower() not in HOP_BY_HOP]
        headers += [("set-cookie", cookie) for cookie in answer.cookies]
        headers.append(("content-length", length or str(len(answer.body))))
        if close:
            headers.append(("connection", "close"))
        start_response(f"{answer.status} {_reason(answer.status)}", headers)
        return [answer.body]


def _body(environ: dict[str, Any], timeout: float) -> bytes | None:
    """The raw body (Content-Length bytes, or a chunked body the server de-chunks), or None
    when it is over API Gateway's payload limit. Raises TimeoutError when the client sends no
    byte of it for `timeout` seconds."""
    handler = environ.get(HANDLER)
    connection = handler.connection if handler is not None else None
    previous = connection.gettimeout() if connection is not None else None
    if connection is not None:
        connection.settimeout(timeout)
    try:
        if environ.get("wsgi.input_terminated"):
            body = bytes(environ["wsgi.input"].read(MAX_PAYLOAD + 1))
            return body if len(body) <= MAX_PAYLOAD else None
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length > MAX_PAYLOAD:
            return None
        return _read_exactly(environ["wsgi.input"], length)
    finally:
        if connection is not None:
            connection.settimeout(previous)


def _read_exactly(stream: Any, length: int) -> bytes:
    """`length` bytes; a body that ends early (the client closed its side) is what arrived."""
    chunks = []
    while length > 0:
        chunk = stream.read(length)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
    return b"".join(chunks)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class Gateway:
    """The local API on `host:port` (0 picks a free port), served by threads."""

    def __init__(
        self,
        api: HttpApi,
        host: str = "127.0.0.1",
        port: int = 3000,
        console: ConsoleFiles | None = None,
        body_timeout: float = BODY_TIMEOUT_SECONDS,
    ) -> None:
        app = GatewayApp(api, console, body_timeout)
        self._server = Server(app, name="gateway", host=host, port=port, handler=RawHeadersHandler)

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> Gateway:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

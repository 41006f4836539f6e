"""The local gateway: a real HTTP server in front of the `HttpApi` emulator, and the web
console's static files at `/console/` on the same origin (devstack/console.py).

It hands the emulator what API Gateway itself sees: the path as sent (still percent-encoded),
the raw query string, every header line as received (repeated ones kept, in order) and the
raw body bytes. Building the event from those is the emulator's job.
"""

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from werkzeug.serving import WSGIRequestHandler

from devstack.apigw import HttpApi, HttpResponse
from devstack.console import ConsoleFiles
from devstack.serving import Server

RAW_HEADERS = "devstack.raw_headers"
MAX_PAYLOAD = 10 * 1024 * 1024  # API Gateway's request payload limit
TOO_LARGE = b'{"message":"Request Entity Too Large"}'
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class RawHeadersHandler(WSGIRequestHandler):
    """Keeps the header lines as received (WSGI folds repeats); no access log line per request."""

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        environ[RAW_HEADERS] = list(self.headers.items())
        return environ

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return


class GatewayApp:
    """WSGI app: one HTTP request -> the console's files, or `HttpApi.handle` -> the proxy response."""

    def __init__(self, api: HttpApi, console: ConsoleFiles | None = None) -> None:
        self.api = api
        self.console = console or ConsoleFiles()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        raw_path, _, query = raw_uri.partition("?")
        page = self.console.handle(environ["REQUEST_METHOD"], raw_path, query)
        if page is not None:
            # A HEAD answer has no body but the length the GET's would have.
            return self._answer(start_response, page, length=page.headers.get("content-length"))
        body = _body(environ)
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
        return self._answer(start_response, answer)

    @staticmethod
    def _answer(start_response: Any, answer: HttpResponse, length: str | None = None) -> Iterable[bytes]:
        headers = [(name, value) for name, value in answer.headers.items() if name.lower() not in HOP_BY_HOP]
        headers += [("set-cookie", cookie) for cookie in answer.cookies]
        headers.append(("content-length", length or str(len(answer.body))))
        start_response(f"{answer.status} {_reason(answer.status)}", headers)
        return [answer.body]


def _body(environ: dict[str, Any]) -> bytes | None:
    """The raw body (Content-Length bytes, or a chunked body the server de-chunks), or None
    when it is over API Gateway's payload limit."""
    if environ.get("wsgi.input_terminated"):
        body = bytes(environ["wsgi.input"].read(MAX_PAYLOAD + 1))
        return body if len(body) <= MAX_PAYLOAD else None
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length > MAX_PAYLOAD:
        return None
    return bytes(environ["wsgi.input"].read(length)) if length else b""


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class Gateway:
    """The local API on `host:port` (0 picks a free port), served by threads."""

    def __init__(
        self, api: HttpApi, host: str = "127.0.0.1", port: int = 3000, console: ConsoleFiles | None = None
    ) -> None:
        self._server = Server(GatewayApp(api, console), name="gateway", host=host, port=port, handler=RawHeadersHandler)

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

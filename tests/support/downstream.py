"""A fake Chatwoot-style downstream that records every request, for routing tests.

The same in-memory core serves an httpx `MockTransport` (integration tests inject it in the
adapter) and a real HTTP server on 127.0.0.1 (end-to-end tests map a tenant to its URL).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

_ACCOUNT = re.compile(r"^/api/v1/accounts/(?P<account>[0-9]+)(?P<rest>/.*)$")


@dataclass
class Recorded:
    method: str
    path: str
    token: str | None
    body: dict[str, Any] | None
    origin: str = ""


@dataclass
class FakeDownstream:
    """Contacts, conversations and messages per origin (scheme://host:port), like separate helpdesks."""

    requests: list[Recorded] = field(default_factory=list)
    contacts: dict[tuple[str, str], int] = field(default_factory=dict)  # (origin, phone) -> id
    conversations: dict[int, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: int = 0

    def messages(self, origin: str | None = None) -> list[Recorded]:
        return [
            request
            for request in self.requests
            if request.method == "POST"
            and request.path.endswith("/messages")
            and (origin is None or request.origin == origin)
        ]

    def handle(
        self, origin: str, method: str, path: str, *, query: str, token: str | None, body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(Recorded(method, path, token, body, origin))
            found = _ACCOUNT.match(path)
            if not found:
                return 404, {"error": "not_found"}
            rest = found.group("rest")
            if method == "GET" and rest == "/contacts/search":
                # Like Chatwoot, a fuzzy search: every contact whose number contains the query.
                phone = parse_qs(query).get("q", [""])[0]
                found = [
                    {"id": contact, "phone_number": number}
                    for (where, number), contact in self.contacts.items()
                    if where == origin and phone.lstrip("+") in number
                ]
                return 200, {"payload": found}
            if method == "POST" and rest == "/contacts":
                contact_id = self._next()
                self.contacts[(origin, (body or {})["phone_number"])] = contact_id
                return 200, {"payload": {"contact": {"id": contact_id}}}
            listed = re.fullmatch(r"/contacts/([0-9]+)/conversations", rest)
            if method == "GET" and listed:
                contact_id = int(listed.group(1))
                mine = [c for c in self.conversations.values() if c["contact_id"] == contact_id]
                return 200, {"payload": mine}
            if method == "POST" and rest == "/conversations":
                conversation = {"id": self._next(), "status": "open", **(body or {})}
                self.conversations[conversation["id"]] = conversation
                return 200, {"id": conversation["id"]}
            if method == "POST" and re.fullmatch(r"/conversations/[0-9]+/messages", rest):
                return 200, {"id": self._next()}
            return 404, {"error": "not_found"}

    def _next(self) -> int:
        self._ids += 1
        return self._ids

    # --- transports ------------------------------------------------------------------------

    def transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            body = json.loads(request.content) if request.content else None
            origin = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
            status, payload = self.handle(
                origin,
                request.method,
                request.url.path,
                query=request.url.query.decode(),
                token=request.headers.get("api_access_token"),
                body=body,
            )
            return httpx.Response(status, json=payload)

        return httpx.MockTransport(handler)

    def serve(self) -> ServedDownstream:
        return ServedDownstream(self)


class ServedDownstream:
    """The fake on a real loopback port (`url`); `stop()` when done."""

    def __init__(self, fake: FakeDownstream) -> None:
        outer = fake

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                origin = f"http://127.0.0.1:{self.server.server_address[1]}"
                status, payload = outer.handle(
                    origin,
                    self.command,
                    parts.path,
                    query=parts.query,
                    token=self.headers.get("api_access_token"),
                    body=json.loads(raw) if raw else None,
                )
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

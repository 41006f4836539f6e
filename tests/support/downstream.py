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

_FIELDS = ("name", "phone_number", "identifier")
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
    """Contacts, conversations and messages per origin (scheme://host:port), like separate helpdesks.

    Contacts follow Chatwoot's `contacts_controller` and `Contact` model: a fuzzy search over
    name, phone number and identifier; `phone_number` in E.164 and, like `identifier`, unique
    (422 otherwise); `PUT /contacts/{id}` changes the fields it is given; notes per contact.
    `contacts` maps (origin, phone) to a contact id (a test may add one to stand for a contact
    made elsewhere); `people` holds every contact the API created, by id.
    """

    requests: list[Recorded] = field(default_factory=list)
    contacts: dict[tuple[str, str], int] = field(default_factory=dict)  # (origin, phone) -> id
    people: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> {origin, name, phone_number, identifier}
    notes: dict[int, list[str]] = field(default_factory=dict)  # contact id -> note contents
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

    def contact(self, contact_id: int) -> dict[str, Any]:
        """A contact as the API last left it."""
        with self._lock:
            return dict(self._view(contact_id))

    def handle(
        self, origin: str, method: str, path: str, *, query: str, token: str | None, body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        with self._lock:
            self.requests.append(Recorded(method, path, token, body, origin))
            found = _ACCOUNT.match(path)
            if not found:
                return 404, {"error": "not_found"}
            rest = found.group("rest")
            answer = self._contacts_api(origin, method, rest, query, body or {})
            return answer if answer is not None else self._conversations_api(method, rest, body or {})

    def _contacts_api(
        self, origin: str, method: str, rest: str, query: str, body: dict[str, Any]
    ) -> tuple[int, Any] | None:
        if method == "GET" and rest == "/contacts/search":
            query_text = parse_qs(query).get("q", [""])[0].strip()
            if not query_text:
                return 422, {"error": "Specify search string with parameter q"}
            return 200, {"payload": [self._view(contact) for contact in self._search(origin, query_text)]}
        if method == "POST" and rest == "/contacts":
            fields = {name: body.get(name) for name in _FIELDS}
            if refused := self._invalid(origin, fields, None):
                return 422, refused
            contact_id = self._next()
            self.people[contact_id] = {"origin": origin, **fields, "name": fields["name"] or ""}
            if fields["phone_number"]:
                self.contacts[(origin, fields["phone_number"])] = contact_id
            return 200, {"payload": {"contact": {"id": contact_id, **self._view(contact_id)}}}
        if method == "PUT" and (one := re.fullmatch(r"/contacts/([0-9]+)", rest)):
            return self._update_contact(origin, int(one.group(1)), body)
        if notes := re.fullmatch(r"/contacts/([0-9]+)/notes", rest):
            contact_id = int(notes.group(1))
            if method != "POST":
                return 200, [
                    {"id": index, "content": text} for index, text in enumerate(self.notes.get(contact_id, []))
                ]
            if not body.get("content"):
                return 422, {"message": "Content can't be blank", "attributes": ["content"]}
            self.notes.setdefault(contact_id, []).append(body["content"])
            return 200, {"id": self._next(), "content": body["content"], "contact_id": contact_id}
        return None

    def _update_contact(self, origin: str, contact_id: int, body: dict[str, Any]) -> tuple[int, Any]:
        if contact_id not in self.people:
            if contact_id not in self.contacts.values():
                return 404, {"error": "Resource could not be found"}
            view = self._view(contact_id)
            self.people[contact_id] = {"origin": origin, **{name: view[name] for name in _FIELDS}}
        changes = {name: value for name, value in body.items() if name in _FIELDS}
        if refused := self._invalid(origin, changes, contact_id):
            return 422, refused
        self.people[contact_id].update(changes)
        if changes.get("phone_number"):
            self.contacts[(origin, changes["phone_number"])] = contact_id
        return 200, {"payload": self._view(contact_id)}

    def _conversations_api(self, method: str, rest: str, body: dict[str, Any]) -> tuple[int, Any]:
        if method == "GET" and (listed := re.fullmatch(r"/contacts/([0-9]+)/conversations", rest)):
            mine = [c for c in self.conversations.values() if c["contact_id"] == int(listed.group(1))]
            return 200, {"payload": mine}
        if method == "POST" and rest == "/conversations":
            conversation = {"id": self._next(), "status": "open", **body}
            self.conversations[conversation["id"]] = conversation
            return 200, {"id": conversation["id"]}
        if method == "POST" and re.fullmatch(r"/conversations/[0-9]+/messages", rest):
            return 200, {"id": self._next()}
        return 404, {"error": "not_found"}

    def _search(self, origin: str, query: str) -> list[int]:
        """Chatwoot's `name ILIKE OR phone_number ILIKE OR identifier LIKE '%q%'`, and, fuzzier
        still, every number that contains the query's digits."""
        found = [
            contact
            for (where, number), contact in self.contacts.items()
            if where == origin and query.lstrip("+") in number
        ]
        for contact, person in self.people.items():
            if person["origin"] != origin or contact in found:
                continue
            if query.lower() in (person["name"] or "").lower() or query in (person["identifier"] or ""):
                found.append(contact)
        return found

    def _view(self, contact_id: int) -> dict[str, Any]:
        person = self.people.get(contact_id)
        if person is None:  # added by a test through `contacts`
            phone = next(number for (_, number), known in self.contacts.items() if known == contact_id)
            return {"id": contact_id, "name": phone, "phone_number": phone, "identifier": None}
        return {"id": contact_id, **{name: person[name] for name in _FIELDS}}

    def _invalid(self, origin: str, fields: dict[str, Any], contact_id: int | None) -> dict[str, Any] | None:
        phone, identifier = fields.get("phone_number"), fields.get("identifier")
        if phone and not re.fullmatch(r"\+[1-9]\d{1,14}", phone):
            return {"message": "Phone number should be in e164 format", "attributes": ["phone_number"]}
        if phone and self.contacts.get((origin, phone), contact_id) != contact_id:
            return {"message": "Phone number has already been taken", "attributes": ["phone_number"]}
        taken = any(
            other != contact_id and person["origin"] == origin and identifier and person["identifier"] == identifier
            for other, person in self.people.items()
        )
        if taken:
            return {"message": "Identifier has already been taken", "attributes": ["identifier"]}
        return None

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

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

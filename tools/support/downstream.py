"""A fake Chatwoot-style downstream that records every request, for routing tests and the soak.

The same in-memory core serves an httpx `MockTransport` (integration tests inject it in the
adapter) and a real HTTP server on 127.0.0.1 (end-to-end tests and the soak map a tenant to its
URL). It is as strict as Chatwoot where a lenient fake would hide a bug:

- a body that is not JSON is refused with Rails' 400 (`ActionDispatch::Http::Parameters::ParseError`)
  and applies nothing; on the served fake, a body shorter than its Content-Length (its sender died
  mid-request) is never answered nor applied, as Puma waits for the rest and drops the request;
- a conversation needs an existing contact and an inbox (`ConversationsController#contact_inbox`:
  `ContactInbox.find_by!` otherwise, a 404), a message an existing conversation, a note or a
  listing an existing contact (`find` / `find_by!`: 404 `Resource could not be found`);
- messages are kept per conversation with their `source_id` (Chatwoot stores it as given and
  does not make it unique), and `GET /conversations/{id}/messages` pages them as `MessageFinder`
  does: the latest 20, `before=<id>` the 20 before it, `after=<id>` up to 100 after it;
- `PATCH /conversations/{id}/messages/{id}` sets a message's `status` as `MessagesController#update`
  and `Messages::StatusUpdateService` do for an API-channel inbox: one of `sent`, `delivered`,
  `read`, `failed` (another is not applied, the message is answered all the same), never `read`
  back to `delivered`, `external_error` kept for `failed` only;
- an agent's attachment (`attach`) is served as ActiveStorage serves it: its `data_url` is the
  blob's redirect route on the helpdesk's host (`/rails/active_storage/blobs/redirect/<signed
  id>/<file name>`), answering 302 to the Disk service's route, which answers the bytes; a file
  made `gone` answers 404 there.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx

_FIELDS = ("name", "phone_number", "identifier")
_ACCOUNT = re.compile(r"^/api/v1/accounts/(?P<account>[0-9]+)(?P<rest>/.*)$")
NOT_FOUND = {"error": "Resource could not be found"}
BAD_REQUEST = {"status": 400, "error": "Bad Request"}
# `Message.message_types` as the API answers them (`message_type_before_type_cast`).
MESSAGE_TYPES = {"incoming": 0, "outgoing": 1, "activity": 2, "template": 3}
LATEST, BEFORE, AFTER = 20, 20, 100  # `MessageFinder`'s pages
STATUSES = ("sent", "delivered", "read", "failed")  # `Message.statuses`
_REDIRECT = re.compile(r"^/rails/active_storage/blobs/redirect/(?P<signed>[A-Za-z0-9_-]+)/(?P<name>[^/]+)$")
_DISK = re.compile(r"^/rails/active_storage/disk/(?P<signed>[A-Za-z0-9_-]+)/(?P<name>[^/]+)$")


@dataclass
class Recorded:
    method: str
    path: str
    token: str | None
    body: dict[str, Any] | None
    origin: str = ""
    status: int = 0


@dataclass
class FakeDownstream:
    """Contacts, conversations and messages per origin (scheme://host:port), like separate helpdesks.

    Contacts follow Chatwoot's `contacts_controller` and `Contact` model: a fuzzy search over
    name, phone number and identifier; `phone_number` in E.164 and, like `identifier`, unique
    (422 otherwise); `PUT /contacts/{id}` changes the fields it is given; notes per contact.
    `contacts` maps (origin, phone) to a contact id (a test may add one to stand for a contact
    made elsewhere); `people` holds every contact the API created, by id; `posted` every message
    by conversation id.
    """

    requests: list[Recorded] = field(default_factory=list)
    contacts: dict[tuple[str, str], int] = field(default_factory=dict)  # (origin, phone) -> id
    people: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> {origin, name, phone_number, identifier}
    notes: dict[int, list[str]] = field(default_factory=dict)  # contact id -> note contents
    conversations: dict[int, dict[str, Any]] = field(default_factory=dict)
    posted: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # conversation id -> messages
    clock: Callable[[], float] = time.time
    files: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # signed id -> (bytes, content type)
    gone: set[str] = field(default_factory=set)  # signed ids whose storage answers 404
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: int = 0

    def attach(self, origin: str, data: bytes, content_type: str, file_name: str) -> str:
        """An agent's uploaded file: its `data_url`, as `Attachment#file_url` gives it."""
        with self._lock:
            signed = f"blob{self._next()}"
            self.files[signed] = (data, content_type)
        return f"{origin}/rails/active_storage/blobs/redirect/{signed}/{quote(file_name)}"

    def file_answer(self, path: str) -> tuple[int, dict[str, str], bytes] | None:
        """ActiveStorage's answer to one of its routes, or None for a path of the API."""
        if found := _REDIRECT.match(path):
            with self._lock:
                known = found.group("signed") in self.files
            if not known:
                return 404, {"content-type": "text/plain"}, b"Not Found"
            location = f"/rails/active_storage/disk/{found.group('signed')}/{found.group('name')}"
            return 302, {"location": location, "content-type": "text/html"}, b""
        if found := _DISK.match(path):
            with self._lock:
                stored = None if found.group("signed") in self.gone else self.files.get(found.group("signed"))
            if stored is None:
                return 404, {"content-type": "text/plain"}, b"Not Found"
            return 200, {"content-type": stored[1]}, stored[0]
        return None

    def messages(self, origin: str | None = None) -> list[Recorded]:
        """The message POSTs the helpdesk took (created a message), in order."""
        return [
            request
            for request in self.requests
            if request.method == "POST"
            and request.path.endswith("/messages")
            and request.status == 200
            and (origin is None or request.origin == origin)
        ]

    def contact(self, contact_id: int) -> dict[str, Any]:
        """A contact as the API last left it."""
        with self._lock:
            return dict(self._view(contact_id))

    def _new_conversation(self, origin: str, inbox_id: int, contact_id: int) -> dict[str, Any]:
        """An open conversation of the contact in the inbox (lock held)."""
        now = int(self.clock())
        conversation: dict[str, Any] = {
            "id": self._next(),
            "origin": origin,
            "status": "open",
            "inbox_id": inbox_id,
            "contact_id": contact_id,
            "created_at": now,
            "last_activity_at": now,
        }
        self.conversations[conversation["id"]] = conversation
        return conversation

    def open_conversation(self, origin: str, phone: str, inbox_id: int) -> int:
        """A contact and its open conversation made in the helpdesk beforehand (the customer wrote
        first, or an agent started it): the conversation's id."""
        with self._lock:
            contact_id = self.contacts.get((origin, phone))
            if contact_id is None:
                contact_id = self._next()
                self.people[contact_id] = {"origin": origin, "name": phone, "phone_number": phone, "identifier": None}
                self.contacts[(origin, phone)] = contact_id
            return int(self._new_conversation(origin, inbox_id, contact_id)["id"])

    def handle(
        self, origin: str, method: str, path: str, *, query: str, token: str | None, raw: bytes
    ) -> tuple[int, Any]:
        with self._lock:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
                answer: tuple[int, Any] = (400, BAD_REQUEST)
            else:
                answer = self._answer(origin, method, path, query, body if isinstance(body, dict) else {})
            self.requests.append(Recorded(method, path, token, body, origin, answer[0]))
            return answer

    def _answer(self, origin: str, method: str, path: str, query: str, body: dict[str, Any]) -> tuple[int, Any]:
        found = _ACCOUNT.match(path)
        if not found:
            return 404, {"error": "not_found"}
        rest = found.group("rest")
        answer = self._contacts_api(origin, method, rest, query, body)
        return answer if answer is not None else self._conversations_api(origin, method, rest, query, body)

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
            if not self._exists(origin, contact_id):
                return 404, NOT_FOUND
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
        if not self._exists(origin, contact_id):
            return 404, NOT_FOUND
        if contact_id not in self.people:
            view = self._view(contact_id)
            self.people[contact_id] = {"origin": origin, **{name: view[name] for name in _FIELDS}}
        changes = {name: value for name, value in body.items() if name in _FIELDS}
        if refused := self._invalid(origin, changes, contact_id):
            return 422, refused
        self.people[contact_id].update(changes)
        if changes.get("phone_number"):
            self.contacts[(origin, changes["phone_number"])] = contact_id
        return 200, {"payload": self._view(contact_id)}

    def _conversations_api(
        self, origin: str, method: str, rest: str, query: str, body: dict[str, Any]
    ) -> tuple[int, Any]:
        if method == "GET" and (listed := re.fullmatch(r"/contacts/([0-9]+)/conversations", rest)):
            contact_id = int(listed.group(1))
            if not self._exists(origin, contact_id):
                return 404, NOT_FOUND
            mine = [c for c in self.conversations.values() if c["contact_id"] == contact_id and c["origin"] == origin]
            mine.sort(key=lambda c: c["last_activity_at"], reverse=True)
            return 200, {"payload": [self._conversation_view(c) for c in mine[:20]]}
        if method == "POST" and rest == "/conversations":
            asked, inbox_id = body.get("contact_id"), body.get("inbox_id")
            if not (isinstance(asked, int) and isinstance(inbox_id, int) and self._exists(origin, asked)):
                return 404, NOT_FOUND
            return 200, self._conversation_view(self._new_conversation(origin, inbox_id, asked))
        if method in ("PATCH", "PUT") and (one := re.fullmatch(r"/conversations/([0-9]+)/messages/([0-9]+)", rest)):
            found = self.conversations.get(int(one.group(1)))
            if found is None or found["origin"] != origin:
                return 404, NOT_FOUND
            return self._update_status(found, int(one.group(2)), body)
        if posted := re.fullmatch(r"/conversations/([0-9]+)/messages", rest):
            found = self.conversations.get(int(posted.group(1)))
            if found is None or found["origin"] != origin:
                return 404, NOT_FOUND
            if method == "GET":
                return 200, self._listing(found, parse_qs(query))
            if method == "POST":
                return self._post_message(found, body)
        return 404, {"error": "not_found"}

    def _post_message(self, conversation: dict[str, Any], body: dict[str, Any]) -> tuple[int, Any]:
        message_type = body.get("message_type") or "outgoing"
        if message_type not in MESSAGE_TYPES:
            return 422, {"error": f"'{message_type}' is not a valid message_type"}
        now = int(self.clock())
        message = {
            "id": self._next(),
            "content": body.get("content"),
            "inbox_id": conversation["inbox_id"],
            "conversation_id": conversation["id"],
            "message_type": MESSAGE_TYPES[message_type],
            "content_type": body.get("content_type") or "text",
            "status": "sent",
            "content_attributes": {},
            "created_at": now,
            "private": bool(body.get("private")),
            "source_id": body.get("source_id"),
        }
        self.posted.setdefault(conversation["id"], []).append(message)
        conversation["last_activity_at"] = now
        if message_type == "incoming" and conversation["status"] == "resolved":
            conversation["status"] = "open"  # `Message#reopen_conversation`
        return 200, message

    def _update_status(self, conversation: dict[str, Any], message_id: int, body: dict[str, Any]) -> tuple[int, Any]:
        message = next((m for m in self.posted.get(conversation["id"], []) if m["id"] == message_id), None)
        if message is None:
            return 404, NOT_FOUND
        status = body.get("status")
        if status in STATUSES and not (message["status"] == "read" and status == "delivered"):
            message["status"] = status
            attributes = dict(message["content_attributes"])
            attributes["external_error"] = body.get("external_error") if status == "failed" else None
            message["content_attributes"] = attributes
        return 200, message

    def agent_message(self, conversation_id: int, content: str | None = None) -> int:
        """An agent's reply written in the helpdesk (what its webhook then announces): its id."""
        with self._lock:
            found = self.conversations[conversation_id]
            _, message = self._post_message(found, {"content": content, "message_type": "outgoing"})
            return int(message["id"])

    def status_of(self, message_id: int) -> tuple[str, str | None]:
        """A message's status and `external_error`, as the helpdesk shows them."""
        with self._lock:
            for messages in self.posted.values():
                for message in messages:
                    if message["id"] == message_id:
                        return message["status"], message["content_attributes"].get("external_error")
        raise KeyError(message_id)

    def _listing(self, conversation: dict[str, Any], params: dict[str, list[str]]) -> dict[str, Any]:
        messages = self.posted.get(conversation["id"], [])
        before, after = (int(params[name][0]) if name in params else None for name in ("before", "after"))
        if before is not None and after is not None:
            page = [m for m in messages if after <= m["id"] < before][:1000]
        elif before is not None:
            page = [m for m in messages if m["id"] < before][-BEFORE:]
        elif after is not None:
            page = [m for m in messages if m["id"] > after][:AFTER]
        else:
            page = messages[-LATEST:]
        return {"meta": {"labels": [], "contact": self._view(conversation["contact_id"])}, "payload": page}

    def _conversation_view(self, conversation: dict[str, Any]) -> dict[str, Any]:
        """The conversation partial's fields a client reads (`meta.sender`, never a bare contact id)."""
        return {
            "meta": {"sender": self._view(conversation["contact_id"]), "channel": "Channel::Api"},
            "id": conversation["id"],
            "inbox_id": conversation["inbox_id"],
            "status": conversation["status"],
            "created_at": conversation["created_at"],
            "timestamp": conversation["last_activity_at"],
            "last_activity_at": conversation["last_activity_at"],
        }

    def _exists(self, origin: str, contact_id: int) -> bool:
        if contact_id in self.people:
            return bool(self.people[contact_id]["origin"] == origin)
        return (origin, contact_id) in {(where, known) for (where, _), known in self.contacts.items()}

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
            port = request.url.port or {"https": 443, "http": 80}[request.url.scheme]
            origin = f"{request.url.scheme}://{request.url.host}:{port}"
            if (served := self.file_answer(request.url.path)) is not None:
                return httpx.Response(served[0], headers=served[1], content=served[2])
            status, payload = self.handle(
                origin,
                request.method,
                request.url.path,
                query=request.url.query.decode(),
                token=request.headers.get("api_access_token"),
                raw=request.content,
            )
            return httpx.Response(status, json=payload)

        return httpx.MockTransport(handler)

    def serve(self) -> ServedDownstream:
        return ServedDownstream(self)


class ServedDownstream:
    """The fake on a real loopback port (`url`); `stop()` when done. It reads a request as a real
    HTTP server does: a body shorter than its Content-Length is never answered nor applied."""

    def __init__(self, fake: FakeDownstream) -> None:
        outer = fake
        served = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                if len(raw) < length:
                    self.close_connection = True
                    return  # the client is gone mid-body: nothing to answer, nothing applied
                parts = urlsplit(self.path)
                if (served_file := outer.file_answer(parts.path)) is not None:
                    with contextlib.suppress(OSError):
                        self.send_response(served_file[0])
                        for name, value in served_file[1].items():
                            self.send_header(name, value)
                        self.send_header("content-length", str(len(served_file[2])))
                        self.end_headers()
                        self.wfile.write(served_file[2])
                    return
                status, payload = outer.handle(
                    served.url,
                    self.command,
                    parts.path,
                    query=parts.query,
                    token=self.headers.get("api_access_token"),
                    raw=raw,
                )
                data = json.dumps(payload).encode()
                # Applied; a client killed meanwhile never reads the answer (the crash after the effect).
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = _answer

            def finish(self) -> None:
                try:
                    super().finish()
                finally:
                    served._connection_closed()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._closed = threading.Condition()
        self.connections_closed = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # `stop()` returns at the serving loop's next poll: half a second by default, per server.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-downstream", daemon=True
        )
        self._thread.start()

    def _connection_closed(self) -> None:
        with self._closed:
            self.connections_closed += 1
            self._closed.notify_all()

    def wait_closed(self, connections: int, timeout: float = 10.0) -> bool:
        """True once `connections` connections are over on the server's side (every request on
        them answered, or dropped unread): what they would apply is applied by then."""
        with self._closed:
            return self._closed.wait_for(lambda: self.connections_closed >= connections, timeout)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

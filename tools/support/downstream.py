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
- a message with files is a `multipart/form-data` body parsed byte for byte as Rack does (every
  part between the boundaries, its own headers, its bytes kept exactly: `uploads` holds each
  file as received); `attachments[]` parts without a file name are refused as `MessageBuilder`
  fails on them (a signed blob id it cannot find), a file over 40 MB is refused (422) as
  Chatwoot's `MAXIMUM_FILE_UPLOAD_SIZE` refuses it (Chatwoot checks it on web-widget inboxes; the
  fake on every inbox, so that a post over it fails loudly), the part's Content-Type gives the
  attachment's `file_type` (`FileTypeHelper#file_type`), `content_attributes` may be a JSON string
  (`MessageBuilder#content_attributes`), and `is_voice_message` tags an audio attachment's `meta`
  (kept in `voice`: the answer does not show it);
- a message's answer is the `_message` partial: an incoming one's `sender` is its contact, its
  `attachments` each `Attachment#push_event_data`;
- `content_attributes.in_reply_to` keeps its id only when it is a message of the same
  conversation, with that message's `source_id` as `in_reply_to_external_id`; otherwise both
  are null (`Messages::InReplyToMessageBuilder`).
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
import hashlib
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
MAX_FILE_BYTES = 40 * 1024 * 1024  # `MAXIMUM_FILE_UPLOAD_SIZE`'s default
_IMAGES = {"image/jpeg", "image/jpg", "image/png", "image/gif", "image/bmp", "image/webp", "image"}
_VIDEOS = {"video/ogg", "video/mp4", "video/webm", "video/quicktime", "video"}


@dataclass(frozen=True)
class Upload:
    """A file as a multipart part carried it: its name, its declared type, its bytes."""

    file_name: str
    content_type: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


class MalformedMultipart(ValueError):
    pass


def parse_multipart(raw: bytes, content_type: str) -> tuple[dict[str, str], list[tuple[str, Upload | str]]]:
    """The fields and the parts of a `multipart/form-data` body (RFC 7578), as Rack reads it:
    the fields by name (a repeated name keeps the last), every part in order as (name, file or
    text). A file's bytes are exactly those between its headers and the next boundary's CRLF.
    Raises MalformedMultipart."""
    found = re.search(r'boundary=(?:"([^"]+)"|([^;\s]+))', content_type)
    if not content_type.lower().startswith("multipart/form-data") or found is None:
        raise MalformedMultipart("not multipart/form-data with a boundary")
    delimiter = b"--" + (found.group(1) or found.group(2)).encode()
    sections = raw.split(delimiter)
    if len(sections) < 3 or sections[0] not in (b"", b"\r\n") or not sections[-1].startswith(b"--"):
        raise MalformedMultipart("no opening or closing boundary")
    fields: dict[str, str] = {}
    parts: list[tuple[str, Upload | str]] = []
    for section in sections[1:-1]:
        if not (section.startswith(b"\r\n") and section.endswith(b"\r\n")):
            raise MalformedMultipart("a part not framed by CRLF")
        head, separator, body = section[2:-2].partition(b"\r\n\r\n")
        if not separator:
            raise MalformedMultipart("a part without its blank line")
        headers = {}
        for line in head.decode("utf-8").split("\r\n"):
            name, colon, value = line.partition(":")
            if not colon:
                raise MalformedMultipart("a part header without a colon")
            headers[name.strip().lower()] = value.strip()
        disposition = headers.get("content-disposition", "")
        name_match = re.search(r'(?:^|;)\s*name="([^"]*)"', disposition)
        if not disposition.startswith("form-data") or name_match is None:
            raise MalformedMultipart("a part without its form-data name")
        file_match = re.search(r'filename="([^"]*)"', disposition)
        if file_match is not None:
            upload = Upload(file_match.group(1), headers.get("content-type", "application/octet-stream"), body)
            parts.append((name_match.group(1), upload))
        else:
            text = body.decode("utf-8")
            fields[name_match.group(1)] = text
            parts.append((name_match.group(1), text))
    return fields, parts


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
    uploads: list[Upload] = field(default_factory=list)  # a multipart message's files, as received


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
    uploads: dict[int, Upload] = field(default_factory=dict)  # attachment id -> the file as received
    voice: set[int] = field(default_factory=set)  # attachment ids tagged as voice messages
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
        self,
        origin: str,
        method: str,
        path: str,
        *,
        query: str,
        token: str | None,
        raw: bytes,
        content_type: str | None = None,
    ) -> tuple[int, Any]:
        with self._lock:
            uploads: list[Upload] = []
            answer: tuple[int, Any]
            if (content_type or "").lower().startswith("multipart/"):
                try:
                    fields, parts = parse_multipart(raw, content_type or "")
                except (MalformedMultipart, UnicodeDecodeError):
                    body = None
                    answer = (400, BAD_REQUEST)
                else:
                    body = dict(fields)
                    listed = [value for name, value in parts if name == "attachments[]"]
                    uploads = [value for value in listed if isinstance(value, Upload)]
                    if len(uploads) != len(listed):
                        answer = (422, {"error": "Couldn't find ActiveStorage::Blob with 'id'"})
                    else:
                        answer = self._answer(origin, method, path, query, body, uploads=uploads)
            else:
                try:
                    parsed = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                    answer = (400, BAD_REQUEST)
                else:
                    body = parsed if isinstance(parsed, dict) else None
                    answer = self._answer(origin, method, path, query, body or {}, uploads=[])
            self.requests.append(Recorded(method, path, token, body, origin, answer[0], uploads))
        if answer[0] == 200:
            self.applied(method, path, answer[1])
        return answer

    def applied(self, method: str, path: str, payload: Any) -> None:
        """Called with each request the helpdesk applied (answered 200) and its answer, the lock
        released: where a subclass watches what was posted (and may stop the sender then)."""

    def _answer(
        self, origin: str, method: str, path: str, query: str, body: dict[str, Any], *, uploads: list[Upload]
    ) -> tuple[int, Any]:
        found = _ACCOUNT.match(path)
        if not found:
            return 404, {"error": "not_found"}
        rest = found.group("rest")
        answer = self._contacts_api(origin, method, rest, query, body)
        return (
            answer
            if answer is not None
            else self._conversations_api(origin, method, rest, query, body, uploads=uploads)
        )

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
        self, origin: str, method: str, rest: str, query: str, body: dict[str, Any], *, uploads: list[Upload]
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
                return self._post_message(found, body, uploads)
        return 404, {"error": "not_found"}

    def _post_message(
        self, conversation: dict[str, Any], body: dict[str, Any], uploads: list[Upload]
    ) -> tuple[int, Any]:
        message_type = body.get("message_type") or "outgoing"
        if message_type not in MESSAGE_TYPES:
            return 422, {"error": f"'{message_type}' is not a valid message_type"}
        if any(len(upload.data) > MAX_FILE_BYTES for upload in uploads):
            return 422, {"error": "Validation failed: File size is too big"}
        now = int(self.clock())
        message_id = self._next()
        message = {
            "id": message_id,
            "content": body.get("content"),
            "inbox_id": conversation["inbox_id"],
            "conversation_id": conversation["id"],
            "message_type": MESSAGE_TYPES[message_type],
            "content_type": body.get("content_type") or "text",
            "status": "sent",
            "content_attributes": self._content_attributes(conversation, body.get("content_attributes")),
            "created_at": now,
            "private": _true(body.get("private")),
            "source_id": body.get("source_id"),
        }
        if message_type == "incoming":
            message["sender"] = {**self._view(conversation["contact_id"]), "type": "contact"}
        voice = _true(body.get("is_voice_message"))
        attachments = [self._attachment(conversation, message_id, upload, voice) for upload in uploads]
        if attachments:
            message["attachments"] = attachments
        self.posted.setdefault(conversation["id"], []).append(message)
        conversation["last_activity_at"] = now
        if message_type == "incoming" and conversation["status"] == "resolved":
            conversation["status"] = "open"  # `Message#reopen_conversation`
        return 200, message

    def _content_attributes(self, conversation: dict[str, Any], given: Any) -> dict[str, Any]:
        """`content_attributes` as `MessageBuilder` and `InReplyToMessageBuilder` leave them."""
        if isinstance(given, str):
            try:
                given = json.loads(given)
            except ValueError:
                given = {}
        attributes = dict(given) if isinstance(given, dict) else {}
        if "in_reply_to" in attributes or "in_reply_to_external_id" in attributes:
            wanted = attributes.get("in_reply_to")
            quoted = next(
                (
                    m
                    for m in self.posted.get(conversation["id"], [])
                    if wanted is not None and str(m["id"]) == str(wanted)
                ),
                None,
            )
            attributes["in_reply_to"] = quoted["id"] if quoted else None
            attributes["in_reply_to_external_id"] = quoted["source_id"] if quoted else None
        return attributes

    def _attachment(self, conversation: dict[str, Any], message_id: int, upload: Upload, voice: bool) -> dict[str, Any]:
        """`Attachment#push_event_data` of a file just attached (its bytes kept in `uploads`)."""
        attachment_id = self._next()
        self.uploads[attachment_id] = upload
        signed = f"blob{attachment_id}"
        self.files[signed] = (upload.data, upload.content_type)  # served as an agent's file is
        kind = _file_type(upload.content_type)
        extension = upload.file_name.rsplit(".", 1)[-1] if "." in upload.file_name else None
        url = f"{conversation['origin']}/rails/active_storage/blobs/redirect/{signed}/{quote(upload.file_name)}"
        data: dict[str, Any] = {
            "id": attachment_id,
            "message_id": message_id,
            "file_type": kind,
            "account_id": 1,
            "extension": extension,
            "content_type": upload.content_type,
            "data_url": url,
            "thumb_url": url if kind == "image" else "",
            "file_size": len(upload.data),
            "width": None,
            "height": None,
        }
        if kind == "audio":
            data["data_url"] = f"{url}?disposition=inline"
            data["transcribed_text"] = ""
            if voice:
                self.voice.add(attachment_id)
        return data

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
            _, message = self._post_message(found, {"content": content, "message_type": "outgoing"}, [])
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

    def message_uploads(self, message: dict[str, Any]) -> list[Upload]:
        """The files of a posted message, as they were received."""
        return [self.uploads[attachment["id"]] for attachment in message.get("attachments", [])]

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
                content_type=request.headers.get("content-type"),
            )
            return httpx.Response(status, json=payload)

        return httpx.MockTransport(handler)

    def serve(self) -> ServedDownstream:
        return ServedDownstream(self)


def _true(value: Any) -> bool:
    """A Rails boolean parameter: JSON's true, or a form's "true" / "1"."""
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))


def _file_type(content_type: str) -> str:
    """`FileTypeHelper#file_type`: previewable images, videos and audio, else a file."""
    if content_type in _IMAGES:
        return "image"
    if content_type in _VIDEOS:
        return "video"
    return "audio" if "audio/" in content_type else "file"


def agent_reply(message_id: int, content: str, *, conversation: int, phone: str, **fields: Any) -> dict[str, Any]:
    """Chatwoot's `message_created` webhook for an agent's public reply in `conversation` to the
    customer `phone` (digits), with the fields switchboard reads; `fields` add others."""
    return {
        "event": "message_created",
        "id": message_id,
        "content": content,
        "message_type": "outgoing",
        "private": False,
        "conversation": {"id": conversation, "meta": {"sender": {"phone_number": f"+{phone}"}}},
        **fields,
    }


def incoming(payload: dict[str, Any]) -> bool:
    """A message a customer sent (`message_type` 0), as the helpdesk answers its post."""
    return payload.get("message_type") == 0


@dataclass
class KillingDownstream(FakeDownstream):
    """Kills the sender (`kill`, the forwarder's container) right after applying the first message
    post `fatal` picks: the forward never records its success, and its job is never acknowledged."""

    fatal: Callable[[dict[str, Any]], bool] = incoming
    kill: Callable[[], bool] | None = None
    kills: int = 0

    def applied(self, method: str, path: str, payload: Any) -> None:
        picked = method == "POST" and isinstance(payload, dict) and self.fatal(payload)
        if picked and self.kill is not None and not self.kills:
            self.kills += int(self.kill())


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
                    content_type=self.headers.get("content-type"),
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

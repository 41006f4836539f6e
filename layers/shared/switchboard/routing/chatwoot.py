"""A Chatwoot-style downstream API client: contact, conversation and message in one inbox.

Every request re-checks the URL against the outbound policy (the mapping was checked when it
was saved, but DNS can change) and connects only to an address that check resolved
(`core/outbound.py`); it never follows a redirect, ignores proxy settings from the
environment and has short timeouts. The token goes in the `api_access_token` header only;
errors name the route template and status, never the host, the token or the answer's text.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, RootModel, ValidationError

from switchboard.core.api.body import read_answer
from switchboard.core.errors import DownstreamError
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.core.outbound import PinnedTransport, request_bounded
from switchboard.core.urls import OutboundPolicy, check_outbound_url
from switchboard.routing.domain import DownstreamPost, DownstreamTarget, FileToPost, IncomingMessage, PostedIncoming

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0
# The most one answer may hold: a page of messages is 20 of up to 150,000 characters each (12 MB
# in 4-byte UTF-8); anything past this is not Chatwoot answering.
MAX_ANSWER_BYTES = 32 * 1024 * 1024


_Answer = TypeVar("_Answer", bound=BaseModel)


class _Id(Model):
    id: int


class _Contact(Model):
    id: int
    name: str | None = None
    phone_number: str | None = None
    identifier: str | None = None


class _ContactSearch(Model):
    payload: list[_Contact]


class _ContactCreated(Model):
    class _Payload(Model):
        contact: _Id

    payload: _Payload


class _Note(Model):
    content: str | None = None


class _Notes(RootModel[list[_Note]]):
    pass


class _Conversation(Model):
    id: int
    inbox_id: int | None = None
    status: str | None = None
    last_activity_at: int | None = None  # epoch seconds: the last message's creation


class _Conversations(Model):
    payload: list[_Conversation]


class _Posted(Model):
    id: int
    source_id: str | None = None
    created_at: int | None = None  # epoch seconds
    private: bool = False
    content_attributes: dict[str, Any] | None = None


class _Messages(Model):
    payload: list[_Posted]


# A message posted by an earlier attempt is looked for among the messages created since that
# attempt started, less this much: the helpdesk's clock and ours may disagree.
CLOCK_SKEW_SECONDS = 600
# Chatwoot pages a conversation's messages by 20 (`MessageFinder`: the latest, or `before` an id)
# and has no filter by `source_id`: the search walks back at most this many pages.
LOOKUP_PAGES = 10
PAGE_SIZE = 20


# The first words of the note on a contact that WhatsApp gave us by LID alone (found again by them).
LID_NOTE = "WhatsApp did not share this contact's phone number"


def lid_note(lid: str) -> str:
    return (
        f"{LID_NOTE}: the chat came from its LID {lid} (WhatsApp's address for a user whose number it "
        "hides), and replies are sent to that LID. The contact gets the number once a message carries it."
    )


def _default_name(name: str | None, phone: str | None, lid: str | None) -> bool:
    """A name nobody chose: empty, or the number or LID the contact was created with."""
    value = (name or "").strip()
    defaults = {phone, (phone or "").lstrip("+"), lid, (lid or "").removesuffix("@lid")} - {None, ""}
    return not value or value in defaults


class ChatwootClient:
    def __init__(
        self,
        *,
        local_mode: bool,
        read_timeout: float = READ_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._policy = OutboundPolicy.configured(local_mode=local_mode)
        self._client = httpx.Client(
            timeout=httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT_SECONDS),
            follow_redirects=False,
            trust_env=False,
            transport=transport or PinnedTransport(self._policy),
        )

    def close(self) -> None:
        self._client.close()

    def post_incoming(
        self,
        target: DownstreamTarget,
        message: IncomingMessage,
        post: DownstreamPost,
        *,
        earlier_attempt: datetime | None = None,
    ) -> PostedIncoming:
        contact_id = self._contact(target, message)
        conversations = self._conversations(target, contact_id)
        if earlier_attempt is not None:
            found = self._posted_in(target, conversations, message.provider_message_id, earlier_attempt)
            if found is not None:
                logger.info(
                    "message already in the downstream: not posted again", extra={"conversation": found.conversation_id}
                )
                return found
        conversation_id = self._conversation(target, contact_id, conversations)
        refers_to = post.refers_to
        threaded = refers_to is not None and refers_to.conversation_id == conversation_id
        note = post.change_note is not None and not threaded
        fields: dict[str, Any] = {
            "content": post.change_note if note else post.content,
            "message_type": "outgoing" if note else "incoming",
            "source_id": message.provider_message_id,
        }
        if note:
            fields["private"] = True
        if threaded and refers_to is not None:
            # Chatwoot keeps the reply's link only to a message of the same conversation.
            fields["content_attributes"] = {"in_reply_to": refers_to.downstream_message_id}
        if post.voice:
            fields["is_voice_message"] = True
        posted = self._post_message(target, conversation_id, fields, post.files)
        return PostedIncoming(conversation_id=conversation_id, message_id=posted, threaded=threaded, note=note)

    def _post_message(
        self, target: DownstreamTarget, conversation_id: int, fields: dict[str, Any], files: list[FileToPost]
    ) -> int:
        """One message: JSON, or multipart with its files as `attachments[]` (Chatwoot's
        `MessageBuilder` reads `content_attributes` from a JSON string there)."""
        route = "/conversations/{id}/messages"
        path = f"/conversations/{conversation_id}/messages"
        if not files:
            body = {name: value for name, value in fields.items() if value is not None}
            return self._parse(self._call(target, "POST", path, route=route, body=body), _Id, route).id
        form: dict[str, str] = {}
        for name, value in fields.items():
            if value is None:
                continue
            if isinstance(value, dict):
                form[name] = json.dumps(value)
            elif isinstance(value, bool):
                form[name] = "true" if value else "false"
            else:
                form[name] = str(value)
        parts = [("attachments[]", (file.file_name, file.data, file.mime_type)) for file in files]
        answer = self._call(target, "POST", path, route=route, form=form, files=parts)
        return self._parse(answer, _Id, route).id

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        self._call(
            target,
            "POST",
            f"/conversations/{conversation_id}/messages",
            route="/conversations/{id}/messages",
            body={"content": text, "message_type": "outgoing", "private": True},
        )

    # --- steps ---------------------------------------------------------------------------

    def _contact(self, target: DownstreamTarget, message: IncomingMessage) -> int:
        """The sender's contact: by phone number, else by LID (the contact's `identifier`), else new.

        A LID-only contact found once the number is known gets the number; a contact still named
        by its number (or LID) gets the profile name. Nothing is renamed that a person named."""
        phone = f"+{message.sender}" if message.sender else None
        lid = message.sender_lid
        contact = None
        # The search is fuzzy (names, emails, partial numbers): only an exact match is ours.
        if phone is not None:
            contact = next((c for c in self._search(target, phone) if c.phone_number == phone), None)
        if contact is None and lid is not None:
            by_lid = (c for c in self._search(target, lid) if c.identifier == lid)
            contact = next((c for c in by_lid if phone is None or not c.phone_number), None)
        if contact is None:
            return self._create_contact(target, message, phone, lid)
        self._complete(target, contact, message, phone, lid)
        if phone is None and lid is not None and not contact.phone_number:
            self._ensure_lid_note(target, contact.id, lid)
        return contact.id

    def _search(self, target: DownstreamTarget, query: str) -> list[_Contact]:
        found = self._parse(
            self._call(target, "GET", "/contacts/search", route="/contacts/search", params={"q": query}),
            _ContactSearch,
            "/contacts/search",
        )
        contacts: list[_Contact] = found.payload
        return contacts

    def _create_contact(
        self, target: DownstreamTarget, message: IncomingMessage, phone: str | None, lid: str | None
    ) -> int:
        body: dict[str, Any] = {"inbox_id": target.inbox_id, "name": message.sender_name or phone or lid}
        if phone is not None:
            body["phone_number"] = phone
        if lid is not None:
            body["identifier"] = lid
        try:
            created = self._call(target, "POST", "/contacts", route="/contacts", body=body)
        except DownstreamError as exc:
            # The LID may already name another contact (the same person under an older number):
            # the message still needs its contact, by number alone.
            if exc.details.get("status") != 422 or phone is None or lid is None:
                raise
            del body["identifier"]
            created = self._call(target, "POST", "/contacts", route="/contacts", body=body)
            lid = None
        contact_id: int = self._parse(created, _ContactCreated, "/contacts").payload.contact.id
        if phone is None and lid is not None:
            self._post_lid_note(target, contact_id, lid)
        return contact_id

    def _complete(
        self, target: DownstreamTarget, contact: _Contact, message: IncomingMessage, phone: str | None, lid: str | None
    ) -> None:
        """Fill in what the contact lacks: its number, its LID, the profile name over a default one."""
        changes: dict[str, str] = {}
        if phone is not None and not contact.phone_number:
            changes["phone_number"] = phone
        if lid is not None and not contact.identifier:
            changes["identifier"] = lid
        name = message.sender_name
        if name and name != contact.name and _default_name(contact.name, contact.phone_number or phone, lid):
            changes["name"] = name
        if not changes:
            return
        route = "/contacts/{id}"
        try:
            self._call(target, "PUT", f"/contacts/{contact.id}", route=route, body=changes)
        except DownstreamError as exc:
            if exc.details.get("status") != 422:
                raise
            # A number or LID another contact holds: the message is posted all the same.
            logger.info("contact not completed", extra={"contact": contact.id, "fields": sorted(changes)})

    def _ensure_lid_note(self, target: DownstreamTarget, contact_id: int, lid: str) -> None:
        route = "/contacts/{id}/notes"
        notes = self._parse(self._call(target, "GET", f"/contacts/{contact_id}/notes", route=route), _Notes, route)
        if not any((note.content or "").startswith(LID_NOTE) for note in notes.root):
            self._post_lid_note(target, contact_id, lid)

    def _post_lid_note(self, target: DownstreamTarget, contact_id: int, lid: str) -> None:
        route = "/contacts/{id}/notes"
        self._call(target, "POST", f"/contacts/{contact_id}/notes", route=route, body={"content": lid_note(lid)})

    def _conversations(self, target: DownstreamTarget, contact_id: int) -> list[_Conversation]:
        """The contact's conversations, the most recently active first (Chatwoot lists 20)."""
        route = "/contacts/{id}/conversations"
        listed = self._parse(
            self._call(target, "GET", f"/contacts/{contact_id}/conversations", route=route), _Conversations, route
        )
        conversations: list[_Conversation] = listed.payload
        return conversations

    def _posted_in(
        self, target: DownstreamTarget, conversations: list[_Conversation], source_id: str, since: datetime
    ) -> PostedIncoming | None:
        """The message with this `source_id` in a conversation of the inbox, among those active
        since `since` (a post makes its conversation active), or None.

        Chatwoot neither refuses nor merges a repeated `source_id` and cannot filter a listing
        by it, so the messages are read, newest first, back to `since`."""
        oldest = int(since.timestamp()) - CLOCK_SKEW_SECONDS
        for conversation in conversations:
            if conversation.inbox_id != target.inbox_id:
                continue
            if conversation.last_activity_at is not None and conversation.last_activity_at < oldest:
                continue
            found = self._holds(target, conversation.id, source_id, oldest)
            if found is not None:
                return PostedIncoming(
                    conversation_id=conversation.id,
                    message_id=found.id,
                    threaded=bool((found.content_attributes or {}).get("in_reply_to")),
                    note=found.private,
                )
        return None

    def _holds(self, target: DownstreamTarget, conversation_id: int, source_id: str, oldest: int) -> _Posted | None:
        route = "/conversations/{id}/messages"
        path = f"/conversations/{conversation_id}/messages"
        params: dict[str, str] | None = None
        for _ in range(LOOKUP_PAGES):
            page = self._parse(self._call(target, "GET", path, route=route, params=params), _Messages, route)
            messages: list[_Posted] = page.payload
            found = next((message for message in messages if message.source_id == source_id), None)
            if found is not None:
                return found
            if len(messages) < PAGE_SIZE:
                return None  # the conversation's first message is on this page
            earliest = min(messages, key=lambda message: message.id)
            if earliest.created_at is not None and earliest.created_at < oldest:
                return None  # older than the earlier attempt: it cannot be there
            params = {"before": str(earliest.id)}
        logger.warning("helpdesk search stopped before the earlier attempt", extra={"conversation": conversation_id})
        return None

    def _conversation(self, target: DownstreamTarget, contact_id: int, conversations: list[_Conversation]) -> int:
        for conversation in conversations:
            if conversation.inbox_id == target.inbox_id and conversation.status != "resolved":
                return conversation.id
        created = self._call(
            target,
            "POST",
            "/conversations",
            route="/conversations",
            body={"inbox_id": target.inbox_id, "contact_id": contact_id},
        )
        return self._parse(created, _Id, "/conversations").id

    def _call(
        self,
        target: DownstreamTarget,
        method: str,
        path: str,
        *,
        route: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        form: dict[str, str] | None = None,
        files: list[tuple[str, tuple[str, bytes, str]]] | None = None,
    ) -> httpx.Response:
        label = f"downstream {method} {route}"
        url = f"{target.base_url.rstrip('/')}/api/v1/accounts/{target.account_id}{path}"
        # What the URL itself shows; the transport resolves the host and checks its addresses.
        check_outbound_url(url, resolve=False, policy=self._policy)
        try:
            response, over = request_bounded(
                self._client,
                method,
                url,
                max_bytes=MAX_ANSWER_BYTES,
                json=body,
                params=params,
                data=form,
                files=files,
                headers={"api_access_token": target.api_token},
            )
        except httpx.DecodingError as exc:  # sent compressed though asked as it is
            raise DownstreamError(f"{label}: unreadable answer") from exc
        except httpx.HTTPError as exc:
            raise DownstreamError(f"{label}: no answer ({type(exc).__name__})") from exc
        if over:
            raise DownstreamError(f"{label}: unreadable answer (over {MAX_ANSWER_BYTES} bytes)")
        if not response.is_success:
            raise DownstreamError(f"{label}: refused ({response.status_code})", status=response.status_code)
        return response

    @staticmethod
    def _parse(response: httpx.Response, model: type[_Answer], route: str) -> _Answer:
        try:
            return model.model_validate(read_answer(response.content))
        except (ValueError, ValidationError) as exc:
            raise DownstreamError(f"downstream {route}: unreadable answer") from exc

    # --- the status of replies (API-channel inboxes) -------------------------------------------

    def update_status(
        self,
        target: DownstreamTarget,
        conversation_id: int,
        message_id: int,
        status: str,
        external_error: str | None = None,
    ) -> None:
        """A reply's delivery status as WhatsApp reported it: `PATCH .../messages/{id}` with
        `status` (`delivered`, `read`, `failed`) and, for `failed`, `external_error`, shown beside
        the message (`MessagesController#update`, API-channel inboxes only;
        `Messages::StatusUpdateService` keeps `read` over a later `delivered`)."""
        body: dict[str, Any] = {"status": status}
        if status == "failed" and external_error:
            body["external_error"] = external_error
        route = "/conversations/{id}/messages/{id}"
        path = f"/conversations/{conversation_id}/messages/{message_id}"
        self._call(target, "PATCH", path, route=route, body=body)

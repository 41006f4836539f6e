"""A Chatwoot-style downstream API client: contact, conversation and message in one inbox.

Every request re-checks the URL against the outbound policy (the mapping was checked when it
was saved, but DNS can change) and connects only to an address that check resolved
(`core/outbound.py`); it never follows a redirect, ignores proxy settings from the
environment and has short timeouts. The token goes in the `api_access_token` header only;
errors name the route template and status, never the host, the token or the answer's text.
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import ValidationError

from switchboard.core.api.body import read_answer
from switchboard.core.errors import DownstreamError
from switchboard.core.model import Model
from switchboard.core.outbound import PinnedTransport
from switchboard.core.urls import OutboundPolicy, check_outbound_url
from switchboard.routing.domain import DownstreamTarget, IncomingMessage

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0


class _Id(Model):
    id: int


class _Contact(Model):
    id: int
    phone_number: str | None = None


class _ContactSearch(Model):
    payload: list[_Contact]


class _ContactCreated(Model):
    class _Payload(Model):
        contact: _Id

    payload: _Payload


class _Conversation(Model):
    id: int
    inbox_id: int | None = None
    status: str | None = None


class _Conversations(Model):
    payload: list[_Conversation]


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

    def post_incoming(self, target: DownstreamTarget, message: IncomingMessage) -> int:
        phone = f"+{message.sender}"
        contact_id = self._contact(target, phone)
        conversation_id = self._conversation(target, contact_id)
        self._call(
            target,
            "POST",
            f"/conversations/{conversation_id}/messages",
            route="/conversations/{id}/messages",
            body={"content": message.text, "message_type": "incoming", "source_id": message.provider_message_id},
        )
        return conversation_id

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        self._call(
            target,
            "POST",
            f"/conversations/{conversation_id}/messages",
            route="/conversations/{id}/messages",
            body={"content": text, "message_type": "outgoing", "private": True},
        )

    # --- steps ---------------------------------------------------------------------------

    def _contact(self, target: DownstreamTarget, phone: str) -> int:
        found = self._parse(
            self._call(target, "GET", "/contacts/search", route="/contacts/search", params={"q": phone}),
            _ContactSearch,
            "/contacts/search",
        )
        # The search is fuzzy (names, emails, partial numbers): only an exact phone match is ours.
        for contact in found.payload:
            if contact.phone_number == phone:
                return contact.id
        created = self._call(
            target,
            "POST",
            "/contacts",
            route="/contacts",
            body={"inbox_id": target.inbox_id, "name": phone, "phone_number": phone},
        )
        return self._parse(created, _ContactCreated, "/contacts").payload.contact.id

    def _conversation(self, target: DownstreamTarget, contact_id: int) -> int:
        route = "/contacts/{id}/conversations"
        listed = self._parse(
            self._call(target, "GET", f"/contacts/{contact_id}/conversations", route=route), _Conversations, route
        )
        for conversation in listed.payload:
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
    ) -> httpx.Response:
        label = f"downstream {method} {route}"
        url = f"{target.base_url.rstrip('/')}/api/v1/accounts/{target.account_id}{path}"
        # What the URL itself shows; the transport resolves the host and checks its addresses.
        check_outbound_url(url, resolve=False, policy=self._policy)
        try:
            response = self._client.request(
                method, url, json=body, params=params, headers={"api_access_token": target.api_token}
            )
        except httpx.HTTPError as exc:
            raise DownstreamError(f"{label}: no answer ({type(exc).__name__})") from exc
        if not response.is_success:
            raise DownstreamError(f"{label}: refused ({response.status_code})", status=response.status_code)
        return response

    @staticmethod
    def _parse(response: httpx.Response, model: type[Any], route: str) -> Any:
        try:
            return model.model_validate(read_answer(response.content))
        except (ValueError, ValidationError) as exc:
            raise DownstreamError(f"downstream {route}: unreadable answer") from exc

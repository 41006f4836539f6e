"""What the downstream answers is read with limits: a hostile server is a failed forward, not a crash."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchboard.core.errors import DownstreamError
from switchboard.routing.chatwoot import ChatwootClient, lid_note
from switchboard.routing.domain import DownstreamPost, DownstreamTarget, IncomingMessage

TARGET = DownstreamTarget(
    base_url="https://chatwoot.example", account_id=1, inbox_id=2, api_token="cw-token", source="tenant"
)
MESSAGE = IncomingMessage(
    event_id="evt-1", instance="main", owner_tag="acme", provider_message_id="3EB0AA", sender="5511988887777", text="hi"
)


@pytest.mark.parametrize(
    "content", [b"[" * 100_000, b'{"payload": ' * 5_000 + b"1" + b"}" * 5_000, b"\xff\xfe"], ids=str
)
def test_a_contact_search_answered_with_garbage_fails_the_forward_so_it_is_retried(content: bytes) -> None:
    client = ChatwootClient(
        local_mode=True, transport=httpx.MockTransport(lambda request: httpx.Response(200, content=content))
    )

    with pytest.raises(DownstreamError) as refused:
        client.post_incoming(TARGET, MESSAGE, DownstreamPost(content=MESSAGE.text))

    assert "unreadable" in str(refused.value)
    assert "cw-token" not in str(refused.value)


# --- Chatwoot's own answers, replayed ---------------------------------------------------------

CONTRACT = Path(__file__).resolve().parents[1] / "contracts" / "chatwoot"


class Chatwoot:
    """Answers each route with a fixture of tests/contracts/chatwoot (its exact bytes); records requests."""

    def __init__(self, answers: dict[tuple[str, str], str]) -> None:
        self.answers = answers
        self.requests: list[tuple[str, str, Any]] = []

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            route = re.sub(r"/[0-9]+", "/{id}", request.url.path.removeprefix("/api/v1/accounts/1"))
            try:
                body = json.loads(request.content) if request.content else None
            except ValueError:
                body = request.content  # a multipart body
            self.requests.append((request.method, route, body))
            name = self.answers[(request.method, route)]
            return httpx.Response(200, content=(CONTRACT / name).read_bytes())

        return httpx.MockTransport(handle)


ACCOUNT_1 = TARGET.model_copy(update={"account_id": 1, "inbox_id": 7})
LID_ONLY = IncomingMessage(
    event_id="evt-2",
    instance="main",
    owner_tag="acme",
    provider_message_id="B7E3",
    sender_lid="204857600054321@lid",
    sender_name="Carlos Pereira",
    text="Boa tarde",
)
CONVERSATION_ROUTES = {
    ("GET", "/contacts/{id}/conversations"): "api_contact_conversations.json",
    ("POST", "/conversations/{id}/messages"): "api_messages_create_incoming.json",
}


def test_against_chatwoots_answers_a_new_lid_only_contact_is_created_with_its_note() -> None:
    chatwoot = Chatwoot(
        {
            ("GET", "/contacts/search"): "api_contacts_search_empty.json",
            ("POST", "/contacts"): "api_contacts_create.json",
            ("POST", "/contacts/{id}/notes"): "api_contact_notes_create.json",
            **CONVERSATION_ROUTES,
        }
    )
    client = ChatwootClient(local_mode=True, transport=chatwoot.transport())

    assert client.post_incoming(ACCOUNT_1, LID_ONLY, DownstreamPost(content=LID_ONLY.text)).conversation_id == 12

    assert [(method, route) for method, route, _ in chatwoot.requests] == [
        ("GET", "/contacts/search"),
        ("POST", "/contacts"),
        ("POST", "/contacts/{id}/notes"),
        ("GET", "/contacts/{id}/conversations"),
        ("POST", "/conversations/{id}/messages"),
    ]
    assert chatwoot.requests[1][2] == {"inbox_id": 7, "name": "Carlos Pereira", "identifier": "204857600054321@lid"}
    assert chatwoot.requests[2][2]["content"] == lid_note("204857600054321@lid")


def test_against_chatwoots_answers_a_lid_contact_with_its_note_gets_no_second_one() -> None:
    chatwoot = Chatwoot(
        {
            ("GET", "/contacts/search"): "api_contacts_search.json",
            ("GET", "/contacts/{id}/notes"): "api_contact_notes_index.json",
            ("PUT", "/contacts/{id}"): "api_contacts_update.json",
            **CONVERSATION_ROUTES,
        }
    )
    # The recorded search finds contact 42, a phone contact: make the message's LID its identifier.
    searched = json.loads((CONTRACT / "api_contacts_search.json").read_bytes())
    lid = "204857600054321@lid"
    searched["payload"][0] |= {"phone_number": None, "identifier": lid, "name": lid}
    client = ChatwootClient(local_mode=True, transport=with_search(chatwoot, searched))

    client.post_incoming(ACCOUNT_1, LID_ONLY, DownstreamPost(content=LID_ONLY.text))

    assert [(method, route, body) for method, route, body in chatwoot.requests if method != "GET"] == [
        ("PUT", "/contacts/{id}", {"name": "Carlos Pereira"}),
        (
            "POST",
            "/conversations/{id}/messages",
            {"content": "Boa tarde", "message_type": "incoming", "source_id": "B7E3"},
        ),
    ]
    assert ("GET", "/contacts/{id}/notes", None) in chatwoot.requests


def with_search(chatwoot: Chatwoot, answer: dict[str, Any]) -> httpx.MockTransport:
    replay = chatwoot.transport()

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/contacts/search"):
            chatwoot.requests.append(("GET", "/contacts/search", None))
            return httpx.Response(200, json=answer)
        return replay.handle_request(request)

    return httpx.MockTransport(handle)


def test_against_chatwoots_answers_a_contact_named_by_its_number_is_renamed_with_one_put() -> None:
    searched = json.loads((CONTRACT / "api_contacts_search.json").read_bytes())
    searched["payload"][0]["name"] = "+16505551234"
    chatwoot = Chatwoot({("PUT", "/contacts/{id}"): "api_contacts_update.json", **CONVERSATION_ROUTES})
    message = MESSAGE.model_copy(update={"sender": "16505551234", "sender_name": "Sheena Nelson"})

    ChatwootClient(local_mode=True, transport=with_search(chatwoot, searched)).post_incoming(
        ACCOUNT_1, message, DownstreamPost(content=message.text)
    )

    assert [(method, body) for method, _, body in chatwoot.requests if method == "PUT"] == [
        ("PUT", {"name": "Sheena Nelson"})
    ]

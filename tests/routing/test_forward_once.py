"""A customer's message reaches the helpdesk once, even when the forward that posted it died before
recording it (a crash, a timeout, an answer lost): the redelivery finds it by its `source_id`
among the contact's conversations instead of posting it again. The real Chatwoot client against
the Chatwoot-shaped fake, and against Chatwoot's own answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from switchboard import bootstrap
from switchboard.core.errors import DownstreamError
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import DownstreamPost, DownstreamTarget, IncomingMessage
from switchboard.routing.dynamo import ForwardAttemptsRepository
from switchboard.routing.forwarder import DownstreamForwarder
from tests.routing.test_downstream_answers import Chatwoot
from tools.support.aws import AwsResources
from tools.support.downstream import FakeDownstream
from tools.support.fakes import FakeDownstreams, FakeForwardAttempts

ORIGIN = "https://cw.example:443"
TARGET = DownstreamTarget(base_url="https://cw.example", account_id=1, inbox_id=2, api_token="t", source="tenant")
MESSAGE = IncomingMessage(
    event_id="evt-7",
    instance="acme:acme-main",
    owner_tag="acme",
    provider_message_id="3EB0C7A1F49E2D86B53A0F",
    sender="5511988887777",
    sender_name="Carla",
    text="quero um orçamento",
)


def losing(fake: FakeDownstream, *, applied: bool) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """The fake behind a network that loses the first message POST: after the helpdesk applied it
    (`applied`: the answer is what is lost) or before it reached it."""
    inner = fake.transport()
    lost: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/messages") and not lost:
            lost.append(request)
            if applied:
                inner.handle_request(request)
            raise httpx.ReadTimeout("no answer", request=request)
        return inner.handle_request(request)

    return httpx.MockTransport(handle), lost


def copies(fake: FakeDownstream, source_id: str) -> list[dict[str, Any]]:
    return [m for messages in fake.posted.values() for m in messages if m["source_id"] == source_id]


def forwarder(transport: httpx.BaseTransport, attempts: FakeForwardAttempts) -> DownstreamForwarder:
    client = ChatwootClient(local_mode=True, transport=transport)
    return DownstreamForwarder(FakeDownstreams(TARGET), client, attempts)


@pytest.mark.parametrize("applied", [True, False], ids=["answer-lost", "never-arrived"])
def test_given_a_forward_lost_on_its_post_then_the_redelivery_leaves_exactly_one_copy(applied: bool) -> None:
    fake = FakeDownstream()
    transport, lost = losing(fake, applied=applied)
    attempts = FakeForwardAttempts()

    with pytest.raises(DownstreamError):
        forwarder(transport, attempts).forward(MESSAGE)
    conversation = forwarder(transport, attempts).forward(MESSAGE)  # SQS delivers the job again

    assert lost and len(copies(fake, MESSAGE.provider_message_id)) == 1
    [copy] = copies(fake, MESSAGE.provider_message_id)
    assert (copy["conversation_id"], copy["content"], copy["message_type"]) == (conversation, MESSAGE.text, 0)


def test_a_first_forward_reads_no_messages_of_the_conversation() -> None:
    fake = FakeDownstream()

    forwarder(fake.transport(), FakeForwardAttempts()).forward(MESSAGE)

    assert [r.path for r in fake.requests if r.method == "GET" and r.path.endswith("/messages")] == []
    assert len(copies(fake, MESSAGE.provider_message_id)) == 1


def test_given_more_than_a_page_of_messages_since_the_lost_post_then_it_is_found_on_an_older_page() -> None:
    fake = FakeDownstream()
    transport, _ = losing(fake, applied=True)
    attempts = FakeForwardAttempts()
    with pytest.raises(DownstreamError):
        forwarder(transport, attempts).forward(MESSAGE)
    [conversation] = fake.posted
    agent = ChatwootClient(local_mode=True, transport=fake.transport())
    for index in range(45):  # the conversation went on before the job came back
        agent.post_note(TARGET, conversation, f"note {index}")

    forwarder(transport, attempts).forward(MESSAGE)

    assert len(copies(fake, MESSAGE.provider_message_id)) == 1
    pages = [
        r for r in fake.requests if r.method == "GET" and r.path.endswith(f"/conversations/{conversation}/messages")
    ]
    assert len(pages) == 3  # the latest 20, then `before` twice


def test_given_a_redelivery_of_a_message_never_posted_to_a_busy_conversation_then_it_is_posted_once() -> None:
    fake = FakeDownstream()
    conversation = fake.open_conversation(ORIGIN, "+5511988887777", inbox_id=2)
    agent = ChatwootClient(local_mode=True, transport=fake.transport())
    for index in range(30):
        agent.post_note(TARGET, conversation, f"note {index}")
    attempts = FakeForwardAttempts()
    attempts.started[MESSAGE.event_id] = datetime.now(UTC) - timedelta(minutes=1)  # a start that died before its post

    assert forwarder(fake.transport(), attempts).forward(MESSAGE) == conversation

    assert len(copies(fake, MESSAGE.provider_message_id)) == 1


# --- against Chatwoot's own answers ----------------------------------------------------------

ACCOUNT_1 = TARGET.model_copy(update={"inbox_id": 7})
SHEENA = MESSAGE.model_copy(
    update={
        "sender": "16505551234",
        "sender_name": "Sheena Nelson",
        "provider_message_id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
    }
)


@pytest.mark.parametrize(("source_id", "posted"), [(SHEENA.provider_message_id, False), ("wamid.OTHER", True)])
def test_against_chatwoots_answers_a_redelivery_posts_only_what_the_conversation_lacks(
    source_id: str, posted: bool
) -> None:
    chatwoot = Chatwoot(
        {
            ("GET", "/contacts/search"): "api_contacts_search.json",
            ("GET", "/contacts/{id}/conversations"): "api_contact_conversations.json",
            ("GET", "/conversations/{id}/messages"): "api_conversation_messages_index.json",
            ("POST", "/conversations/{id}/messages"): "api_messages_create_incoming.json",
        }
    )
    client = ChatwootClient(local_mode=True, transport=chatwoot.transport())
    earlier = datetime.fromtimestamp(1781950500, UTC)  # the fixture's message was posted 2 s later

    message = SHEENA.model_copy(update={"provider_message_id": source_id})
    found = client.post_incoming(ACCOUNT_1, message, DownstreamPost(content=message.text), earlier_attempt=earlier)
    assert found.conversation_id == 12 and found.message_id == 9000  # the fixtures' message, found or posted

    routes = [(method, route) for method, route, _ in chatwoot.requests]
    assert ("GET", "/conversations/{id}/messages") in routes
    assert (("POST", "/conversations/{id}/messages") in routes) is posted


# --- the record of a forward's start ---------------------------------------------------------


def test_the_first_start_of_a_forward_is_recorded_once_and_returned_to_every_later_one(aws: AwsResources) -> None:
    attempts = ForwardAttemptsRepository(bootstrap.table())
    first = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)

    assert attempts.begin(MESSAGE, first) is None
    assert attempts.begin(MESSAGE, first + timedelta(minutes=3)) == first
    assert attempts.begin(MESSAGE, first + timedelta(minutes=9)) == first
    assert attempts.begin(MESSAGE.model_copy(update={"event_id": "evt-8"}), first) is None

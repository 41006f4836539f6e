"""The shared fake helpdesk answers as Chatwoot does where a lenient fake would hide a bug: a body
that is not JSON, or cut short, applies nothing; a conversation needs an existing contact."""

from __future__ import annotations

import socket

from tools.support.downstream import FakeDownstream

ORIGIN = "http://127.0.0.1:9303"
ACCOUNT = "/api/v1/accounts/4"


def call(fake: FakeDownstream, method: str, path: str, raw: bytes = b"") -> tuple[int, object]:
    return fake.handle(ORIGIN, method, f"{ACCOUNT}{path}", query="", token="t", raw=raw)


def test_a_body_that_is_not_json_is_a_400_and_creates_nothing() -> None:
    fake = FakeDownstream()

    status, answer = call(fake, "POST", "/contacts", b'{"name": "Ana", "phone_number": "+5511')

    assert (status, answer) == (400, {"status": 400, "error": "Bad Request"})
    assert fake.people == {} and fake.requests[0].status == 400


def test_a_conversation_for_a_contact_that_does_not_exist_is_a_404_and_the_listing_still_answers() -> None:
    fake = FakeDownstream()

    status, _ = call(fake, "POST", "/conversations", b'{"inbox_id": 2, "contact_id": 999}')
    missing, _ = call(fake, "POST", "/conversations", b'{"inbox_id": 2}')

    assert (status, missing) == (404, 404) and fake.conversations == {}
    assert call(fake, "GET", "/contacts/999/conversations")[0] == 404


def test_a_message_to_a_conversation_that_does_not_exist_is_a_404_and_is_not_recorded() -> None:
    fake = FakeDownstream()

    status, _ = call(fake, "POST", "/conversations/77/messages", b'{"content": "oi", "message_type": "incoming"}')

    assert status == 404 and fake.messages() == [] and fake.posted == {}


def test_a_served_request_whose_sender_died_before_its_body_is_never_applied() -> None:
    fake = FakeDownstream()
    served = fake.serve()
    try:
        port = int(served.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sender:
            # The headers announce a body; the sender dies before any of it leaves.
            sender.sendall(f"POST {ACCOUNT}/contacts HTTP/1.1\r\nHost: x\r\nContent-Length: 48\r\n\r\n".encode())

        assert served.wait_closed(1)
        assert fake.people == {} and fake.requests == []
    finally:
        served.stop()

"""What the downstream answers is read with limits: a hostile server is a failed forward, not a crash."""

from __future__ import annotations

import httpx
import pytest

from switchboard.core.errors import DownstreamError
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import DownstreamTarget, IncomingMessage

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
        client.post_incoming(TARGET, MESSAGE)

    assert "unreadable" in str(refused.value)
    assert "cw-token" not in str(refused.value)

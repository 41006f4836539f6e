"""A client webhook URL the outbound policy refuses at delivery time is dropped, not retried."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from switchboard.core.errors import InvalidInput, RetryLater
from switchboard.messages.client_webhooks import ClientWebhookDeliverer
from switchboard.messages.domain import ClientWebhookJob
from tools.support.fakes import FakeAudit, FakeKeys, FakeSecrets

JOB = ClientWebhookJob(
    id="whk_1",
    tenant="acme",
    api_key_id="key_1",
    event="message.sent",
    timestamp=datetime(2026, 11, 30, tzinfo=UTC),
    data={"id": "msg_1"},
)


class Poster:
    """The transport's answer: here, what its single resolution of the host decided."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        self.calls += 1
        raise self.error


def deliverer(poster: Poster) -> ClientWebhookDeliverer:
    secrets = FakeSecrets(default=lambda name: "whsec_" + "a" * 32)
    return ClientWebhookDeliverer(FakeKeys(), secrets, poster, FakeAudit(), local_mode=False)


def test_a_host_that_resolves_to_a_refused_address_drops_the_webhook() -> None:
    poster = Poster(InvalidInput("the address 127.0.0.1 is not allowed"))

    assert deliverer(poster).deliver(JOB, attempt=1) is False
    assert poster.calls == 1


def test_an_unreachable_host_is_retried_later() -> None:
    poster = Poster(httpx.ConnectError("refused"))

    with pytest.raises(RetryLater):
        deliverer(poster).deliver(JOB, attempt=1)

"""Failures in the provider's own words: the code and message a provider answered are kept on the
message, in its trace and in the message log, from the real answers under tests/contracts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from switchboard.core.errors import MAX_PROVIDER_MESSAGE_CHARS, ProviderRejected, ProviderThrottled
from switchboard.messages.receipts import ReceiptData
from switchboard.providers.meta import KIND
from tests.providers.test_meta import CONTRACTS, INDEX, SCHEME, raw, replay, send, signed
from tools.support.api import Client
from tools.support.fakes import FakeProvider
from tools.support.pool import NUMBERS, PoolWorld, build_world

RECIPIENT = "5511988880001"
HEALTHY_ECOSYSTEM = "This message was not delivered to maintain healthy ecosystem engagement."


def test_a_meta_refusal_keeps_metas_code_and_message() -> None:
    meta_error = json.loads(raw("send_error_131056.json"))["error"]

    with pytest.raises(ProviderThrottled) as raised:
        send(replay(INDEX["send"]["send_error_131056.json"]["status"], raw("send_error_131056.json")))

    assert raised.value.provider_code == "131056"
    assert (
        raised.value.provider_message
        == (f"{meta_error['message']} — {meta_error['error_data']['details']}"[:MAX_PROVIDER_MESSAGE_CHARS])
    )
    assert meta_error["message"] not in str(raised.value)  # our own message stays ours


def test_a_failed_receipt_of_131049_carries_metas_code_and_title() -> None:
    (event,) = KIND.events(signed((CONTRACTS / "webhook_status_failed_131049.json").read_bytes()), SCHEME)

    words = ReceiptData.model_validate(event.data).provider_words()

    assert words == {"providerCode": "131049", "providerMessage": HEALTHY_ECOSYSTEM}


@pytest.fixture
def world(client: Client, make_tenant: Any, provider: FakeProvider) -> PoolWorld:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key(default_number=NUMBERS[2])
    return world


def test_a_refused_message_shows_the_providers_words_on_the_message_its_trace_and_the_log(
    world: PoolWorld, provider: FakeProvider, run_worker: Callable[[], list[Any]]
) -> None:
    refusal = ProviderRejected(
        "meta POST /messages: request refused (400 131049)",
        status=400,
        provider_code="131049",
        provider_message=HEALTHY_ECOSYSTEM,
    )
    provider.failures["promo"] = [refusal]
    message_id = world.send(RECIPIENT, "promo")

    run_worker()

    message = world.message(message_id)
    assert (message["status"], message["providerCode"], message["providerMessage"]) == (
        "FAILED",
        "131049",
        HEALTHY_ECOSYSTEM,
    )
    skipped = next(event for event in message["trace"] if event["stage"] == "pool.instance.skipped")
    assert (skipped["data"]["providerCode"], skipped["data"]["providerMessage"]) == ("131049", HEALTHY_ECOSYSTEM)
    (row,) = world.client.get("/api/messages?status=FAILED", key=world.tenant.admin).json()["items"]
    assert (row["id"], row["providerCode"], row["providerMessage"]) == (message_id, "131049", HEALTHY_ECOSYSTEM)

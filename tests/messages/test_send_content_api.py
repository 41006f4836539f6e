"""The send API with contents other than text, through the gateway emulator on moto."""

from __future__ import annotations

from typing import Any

import pytest

from tools.support.api import Client
from tools.support.fakes import FakeProvider
from tools.support.pool import NUMBERS, PoolWorld, build_world

RECIPIENT = "5511988880001"


@pytest.fixture
def world(client: Client, make_tenant: Any, provider: FakeProvider) -> PoolWorld:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key(default_number=NUMBERS[2])
    return world


def post(world: PoolWorld, body: dict[str, Any], key: str | None = None) -> Any:
    headers = {"Idempotency-Key": key} if key else None
    return world.client.post("/api/messages", key=world.send_key, json_body={"to": RECIPIENT, **body}, headers=headers)


def test_a_location_is_stored_with_its_content_and_read_back_with_its_type(world: PoolWorld) -> None:
    answer = post(
        world, {"location": {"latitude": -23.5505, "longitude": -46.6333, "name": "Office"}, "replyTo": "3EB0X"}
    )

    assert answer.status == 202, answer.body
    view = world.client.get(f"/api/messages/{answer.json()['id']}", key=world.send_key).json()
    assert (view["type"], view["replyTo"], view["status"]) == ("location", "3EB0X", "QUEUED")


def test_two_contents_at_once_are_a_422_naming_the_rule(world: PoolWorld) -> None:
    answer = post(world, {"text": "hi", "reaction": {"messageId": "3EB0X", "emoji": "👍"}})

    assert answer.status == 422, answer.body
    assert b"exactly one of" in answer.body


def test_an_idempotency_key_binds_the_content(world: PoolWorld) -> None:
    first = post(world, {"reaction": {"messageId": "3EB0X", "emoji": "👍"}}, key="react-1")
    again = post(world, {"reaction": {"messageId": "3EB0X", "emoji": "👍"}}, key="react-1")
    other = post(world, {"reaction": {"messageId": "3EB0X", "emoji": "🎉"}}, key="react-1")

    assert (first.status, again.status, other.status) == (202, 202, 422)
    assert first.json()["id"] == again.json()["id"]


def test_a_media_message_without_a_media_bucket_is_refused_clearly(world: PoolWorld) -> None:
    answer = post(world, {"media": {"mediaId": "med_0123456789abcdef", "type": "image"}})

    assert 400 <= answer.status < 500, answer.body

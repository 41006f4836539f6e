"""The forwarder's rules for a sender known by a LID alone, with in-memory fakes: the number is asked
of the instance's provider where it keeps that map; when it cannot say, the message is not held."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.core.errors import InvalidInput, NotFound, ProviderTimeout, ProviderUnavailable
from switchboard.providers.base import ProviderTarget
from switchboard.routing.domain import DownstreamPost, DownstreamTarget, IncomingMessage, PostedIncoming
from switchboard.routing.forwarder import DownstreamForwarder, ProviderPhones
from tools.support.builders import instance
from tools.support.fakes import FakeCatalog, FakeDownstreams, FakeForwardAttempts, FakeProvider, FakeTargets

LID = "204857600054321@lid"
TARGET = DownstreamTarget(base_url="https://cw.example", account_id=1, inbox_id=2, api_token="t", source="tenant")
INSTANCE = instance("acme-evo", owner_tag="acme")


def message(**fields: Any) -> IncomingMessage:
    base: dict[str, Any] = {
        "event_id": "e1",
        "instance": INSTANCE.key,
        "owner_tag": "acme",
        "provider_message_id": "B7E3",
        "sender_lid": LID,
        "text": "oi",
    }
    return IncomingMessage(**(base | fields))


class Directory(FakeProvider):
    """A provider client that keeps a LID map (`ContactDirectory`), or fails to answer from it."""

    def __init__(self, answers: dict[str, str] | None = None, error: Exception | None = None) -> None:
        super().__init__()
        self.answers = answers or {}
        self.error = error
        self.asked: list[tuple[str, str]] = []

    def phone_for_lid(self, target: ProviderTarget, lid: str) -> str | None:
        self.asked.append((target.provider_instance_id, lid))
        if self.error is not None:
            raise self.error
        return self.answers.get(lid)


class Posted:
    """A `DownstreamClient` that records the messages it was given."""

    def __init__(self) -> None:
        self.messages: list[IncomingMessage] = []

    def post_incoming(
        self,
        target: DownstreamTarget,
        incoming: IncomingMessage,
        post: DownstreamPost,
        *,
        earlier_attempt: object = None,
    ) -> PostedIncoming:
        self.messages.append(incoming)
        return PostedIncoming(conversation_id=77, message_id=1)

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        raise AssertionError("not used")


def forward(client: Any, incoming: IncomingMessage) -> list[IncomingMessage]:
    posted = Posted()
    phones = ProviderPhones(FakeCatalog([INSTANCE]), FakeTargets(client, kind="evolution"))
    assert DownstreamForwarder(FakeDownstreams(TARGET), posted, FakeForwardAttempts(), phones).forward(incoming) == 77
    return posted.messages


def test_a_lid_the_provider_knows_is_posted_with_its_phone_number_and_keeps_the_lid() -> None:
    directory = Directory({LID: "5521977776666"})

    [posted] = forward(directory, message())

    assert (posted.sender, posted.sender_lid) == ("5521977776666", LID)
    assert directory.asked == [(INSTANCE.provider_instance_id, LID)]


@pytest.mark.parametrize(
    "client",
    [
        Directory(),  # it never saw the LID with a number
        Directory(error=ProviderUnavailable("down")),
        Directory(error=ProviderTimeout("slow")),
        Directory(error=InvalidInput("no api key")),
        FakeProvider(),  # a kind that keeps no such map
    ],
    ids=["unknown", "unavailable", "timeout", "no key", "no directory"],
)
def test_a_lid_the_provider_cannot_resolve_now_is_posted_by_the_lid_alone(client: Any) -> None:
    [posted] = forward(client, message())

    assert (posted.sender, posted.sender_lid, posted.text) == (None, LID, "oi")


def test_a_sender_with_a_phone_number_is_never_looked_up() -> None:
    directory = Directory({LID: "5500000000000"})

    [posted] = forward(directory, message(sender="5521977776666"))

    assert (posted.sender, directory.asked) == ("5521977776666", [])


def test_an_instance_deleted_meanwhile_leaves_the_number_unknown() -> None:
    phones = ProviderPhones(FakeCatalog([]), FakeTargets(Directory({LID: "5521977776666"})))

    assert phones.phone_for_lid(INSTANCE.key, LID) is None


def test_a_provider_the_catalog_lost_leaves_the_number_unknown() -> None:
    class Lost(FakeTargets):
        def target_for(self, instance: Any) -> Any:
            raise NotFound("the instance's provider server is not registered")

    assert ProviderPhones(FakeCatalog([INSTANCE]), Lost(Directory())).phone_for_lid(INSTANCE.key, LID) is None


def test_a_message_with_neither_a_number_nor_a_lid_is_refused() -> None:
    with pytest.raises(ValueError, match="phone number or LID"):
        message(sender_lid=None)


def test_a_number_found_is_asked_once_an_hour_and_one_not_found_with_every_message() -> None:
    directory = Directory({LID: "5521977776666"})
    now = [0.0]
    phones = ProviderPhones(FakeCatalog([INSTANCE]), FakeTargets(directory), monotonic=lambda: now[0])
    unknown = "999999999999999@lid"

    answers = [phones.phone_for_lid(INSTANCE.key, LID) for _ in range(3)]
    misses = [phones.phone_for_lid(INSTANCE.key, unknown) for _ in range(2)]
    now[0] = 3601.0
    later = phones.phone_for_lid(INSTANCE.key, LID)

    assert answers == ["5521977776666"] * 3 and misses == [None, None] and later == "5521977776666"
    assert [lid for _, lid in directory.asked] == [LID, unknown, unknown, LID]

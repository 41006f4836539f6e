"""The map of WhatsApp ids to downstream ids: both keys in one transaction, under today's stored
names, found either way; a link recorded again changes nothing, the first link of a key stands,
and an expired link is not found."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from switchboard import bootstrap
from switchboard.routing.domain import MessageLink
from switchboard.routing.links_dynamo import LINK_DAYS
from tools.support.aws import AwsResources

INCOMING = MessageLink(
    instance="acme:acme-evo",
    provider_message_id="3EB0A1B2C3",
    conversation_id=44,
    downstream_message_id=901,
    direction="in",
)


def raw(pk: str) -> dict[str, Any]:
    item: dict[str, Any] = bootstrap.table().get_item(Key={"pk": pk, "sk": "#META"}, ConsistentRead=True)["Item"]
    return item


def test_a_link_is_stored_under_both_keys_and_found_either_way(aws: AwsResources) -> None:
    links = bootstrap.message_links()
    before = datetime.now(UTC)

    links.link(INCOMING)

    by_provider = raw("WALINK#acme:acme-evo#3EB0A1B2C3")
    by_downstream = raw("CWLINK#acme:acme-evo#901")
    expires = int(by_provider.pop("expiresAt"))
    assert by_provider == {
        "pk": "WALINK#acme:acme-evo#3EB0A1B2C3",
        "sk": "#META",
        "tenant": "acme",
        "instance": "acme:acme-evo",
        "provider_message_id": "3EB0A1B2C3",
        "conversation_id": 44,
        "downstream_message_id": 901,
        "direction": "in",
    }
    assert int(by_downstream.pop("expiresAt")) == expires
    assert {key: value for key, value in by_downstream.items() if key != "pk"} == {
        key: value for key, value in by_provider.items() if key != "pk"
    }
    assert abs(expires - (before + timedelta(days=LINK_DAYS)).timestamp()) < 60
    assert links.by_provider_id("acme:acme-evo", "3EB0A1B2C3") == INCOMING
    assert links.by_downstream_id("acme:acme-evo", 901) == INCOMING


def test_another_instance_finds_nothing(aws: AwsResources) -> None:
    links = bootstrap.message_links()
    links.link(INCOMING)

    assert links.by_provider_id("other:acme-evo", "3EB0A1B2C3") is None
    assert links.by_downstream_id("other:acme-evo", 901) is None
    assert links.by_provider_id("acme:acme-evo", "3EB0FFFF") is None


def test_a_second_link_changes_nothing_and_each_key_keeps_its_first(aws: AwsResources) -> None:
    links = bootstrap.message_links()
    outgoing = MessageLink(
        instance="acme:acme-evo",
        provider_message_id="3EB0PART1",
        conversation_id=44,
        downstream_message_id=902,
        direction="out",
        message_id="msg_1",
    )
    links.link(outgoing)
    links.link(outgoing)
    # The reply's second part: its own WhatsApp id, the same downstream message.
    links.link(outgoing.model_copy(update={"provider_message_id": "3EB0PART2"}))

    assert links.by_provider_id("acme:acme-evo", "3EB0PART1") == outgoing
    assert links.by_provider_id("acme:acme-evo", "3EB0PART2") == outgoing.model_copy(
        update={"provider_message_id": "3EB0PART2"}
    )
    assert links.by_downstream_id("acme:acme-evo", 902) == outgoing


def test_an_expired_link_is_not_found_before_the_sweep(aws: AwsResources) -> None:
    links = bootstrap.message_links()
    links.link(INCOMING)
    past = int((datetime.now(UTC) - timedelta(minutes=1)).timestamp())
    for pk in ("WALINK#acme:acme-evo#3EB0A1B2C3", "CWLINK#acme:acme-evo#901"):
        bootstrap.table().update_item(
            Key={"pk": pk, "sk": "#META"},
            UpdateExpression="SET expiresAt = :past",
            ExpressionAttributeValues={":past": past},
        )

    assert links.by_provider_id("acme:acme-evo", "3EB0A1B2C3") is None
    assert links.by_downstream_id("acme:acme-evo", 901) is None

"""The routing items as PynamoDB models keep today's stored names and types, and each refused
condition answers as the repositories promise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.core.errors import InvalidInput, NotFound
from switchboard.core.store import unit_of_work
from switchboard.routing.domain import DownstreamMapping, IncomingMessage
from switchboard.routing.dynamo import ForwardAttemptsRepository, RoutingRepository
from switchboard.routing.outbox_dynamo import OutboxRepository
from switchboard.routing.records import OutboxEntry
from tools.support.aws import AwsResources

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ENTRY = OutboxEntry(
    instance="acme:acme-evo",
    message_id="901",
    phone="5511988887777",
    text="oi",
    conversation_id=44,
    owner_tag="acme",
    enqueued_at=NOW,
)
MAPPING = DownstreamMapping(
    owner_tag="acme", base_url="https://cw.example", account_id=7, inbox_id=12, token_hint="…wxyz", updated_at=NOW
)


def raw(pk: str, sk: str = "#META") -> dict[str, Any]:
    item: dict[str, Any] = bootstrap.table().get_item(Key={"pk": pk, "sk": sk}, ConsistentRead=True)["Item"]
    return item


def put_mapping(mapping: DownstreamMapping, *, token_replaced: bool) -> None:
    uow = unit_of_work()
    bootstrap.catalog_repository().record_tenant_exists(uow, mapping.owner_tag, refused=NotFound("tenant not found"))
    RoutingRepository(bootstrap.table()).record_mapping(uow, mapping, token_replaced=token_replaced)
    uow.commit()


def test_a_mapping_and_the_version_are_stored_under_todays_names(aws: AwsResources) -> None:
    bootstrap.table().put_item(Item={"pk": "TENANT#acme", "sk": "#META", "tenant": "acme", "owner_tag": "acme"})
    routing = RoutingRepository(bootstrap.table())
    assert routing.version() == 0

    put_mapping(MAPPING, token_replaced=True)

    assert raw("DOWNSTREAM#acme") == {
        "pk": "DOWNSTREAM#acme",
        "sk": "#META",
        "owner_tag": "acme",
        "tenant": "acme",
        "base_url": "https://cw.example",
        "account_id": 7,
        "inbox_id": 12,
        "token_hint": "…wxyz",
        "updated_at": NOW.isoformat(),
        "gsi1pk": "DOWNSTREAMS",
        "gsi1sk": "acme",
    }
    assert raw("ROUTING#VERSION")["version"] == 1
    assert routing.version() == 1
    assert routing.get_mapping("acme") == MAPPING
    assert routing.list_mappings() == [MAPPING]

    routing.delete_mapping("acme")
    assert routing.get_mapping("acme") is None and routing.version() == 2


def test_a_mapping_refuses_an_unknown_tenant_a_missing_token_and_a_delete_of_nothing(aws: AwsResources) -> None:
    routing = RoutingRepository(bootstrap.table())
    with pytest.raises(NotFound, match="tenant not found"):
        put_mapping(MAPPING, token_replaced=True)

    bootstrap.table().put_item(Item={"pk": "TENANT#acme", "sk": "#META", "tenant": "acme", "owner_tag": "acme"})
    with pytest.raises(InvalidInput) as refused:
        put_mapping(MAPPING, token_replaced=False)
    assert refused.value.code == "token_required"

    with pytest.raises(NotFound, match="no downstream mapping"):
        routing.delete_mapping("acme")
    assert routing.version() == 0  # nothing refused was written


def test_a_forward_attempt_is_stored_once_and_answers_when_the_first_started(aws: AwsResources) -> None:
    attempts = ForwardAttemptsRepository(bootstrap.table())
    message = IncomingMessage(
        event_id="evt-1",
        instance="acme:acme-main",
        owner_tag="acme",
        provider_message_id="p1",
        sender="5511988887777",
        text="oi",
    )
    assert attempts.begin(message, NOW) is None
    assert attempts.begin(message, NOW + timedelta(minutes=5)) == NOW
    assert raw("FORWARD#evt-1") == {
        "pk": "FORWARD#evt-1",
        "sk": "#META",
        "tenant": "acme",
        "instance": "acme:acme-main",
        "started_at": NOW.isoformat(),
        "expiresAt": int((NOW + timedelta(days=14)).timestamp()),
    }


def test_an_outbox_entry_its_outcome_and_the_webhook_digest_are_stored_under_todays_names(aws: AwsResources) -> None:
    outbox = OutboxRepository(bootstrap.table())
    assert outbox.enqueue(ENTRY)
    assert not outbox.enqueue(ENTRY)  # the same message id again: refused by its outcome

    sort = f"{NOW.isoformat()}#901"
    assert raw("OUTBOX#acme:acme-evo", sort) == {
        "pk": "OUTBOX#acme:acme-evo",
        "sk": sort,
        "instance": "acme:acme-evo",
        "message_id": "901",
        "phone": "5511988887777",
        "text": "oi",
        "conversation_id": 44,
        "owner_tag": "acme",
        "enqueued_at": NOW.isoformat(),
        "parts_sent": 0,
        "status": "PENDING",
        "lease_until": 0,
        "gsi1pk": "OUTBOX#WAITING",
        "gsi1sk": f"acme:acme-evo#{sort}",
    }
    outcome_key = "OUTBOXMSG#acme:acme-evo#901"
    assert raw(outcome_key) == {
        "pk": outcome_key,
        "sk": "#META",
        "status": "PENDING",
        "expiresAt": int((NOW + timedelta(days=8)).timestamp()),
    }
    assert outbox.instances_waiting() == ["acme:acme-evo"]
    assert outbox.waiting(ENTRY.instance, 10) == [ENTRY]

    claimed = outbox.claim(ENTRY, NOW, 60)
    assert claimed == ENTRY
    assert raw("OUTBOX#acme:acme-evo", sort)["lease_until"] == int(NOW.timestamp()) + 60
    assert raw("OUTBOX#acme:acme-evo", sort)["status"] == "SENDING"

    assert outbox.finish(ENTRY, "SENT", None, "wamid.1")
    assert not outbox.finish(ENTRY, "FAILED", "late", None)  # finished already: refused
    assert raw(outcome_key)["status"] == "SENT" and raw(outcome_key)["provider_message_id"] == "wamid.1"
    assert outbox.waiting(ENTRY.instance, 10) == [] and outbox.instances_waiting() == []

    outbox.set_webhook_digest("acme", "acme:acme-evo", "d" * 64, "…abcd", NOW)
    assert raw("OUTHOOK#acme:acme-evo") == {
        "pk": "OUTHOOK#acme:acme-evo",
        "sk": "#META",
        "tenant": "acme",
        "digest": "d" * 64,
        "hint": "…abcd",
        "created_at": NOW.isoformat(),
    }
    assert outbox.webhook_digest("acme", "acme:acme-evo") == "d" * 64
    assert outbox.webhook_digest("globex", "acme:acme-evo") is None

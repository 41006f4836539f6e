"""The event store's items under their stored names, and a record written before the lease and
the provider were stored as `lease_until` / `provider_id`: read, claimed and released as any."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from switchboard import bootstrap
from switchboard.core import store
from switchboard.webhooks.dynamo import EventRecord, EventStore
from switchboard.webhooks.events import NotAccepted, StoredEvent
from tools.support.aws import REGION, AwsResources

NOW = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)


def _event() -> StoredEvent:
    return StoredEvent(
        provider_id="prv_1",
        provider_instance_id="p1",
        instance_key="acme:main",
        name="message",
        event_id="ev-1",
        data={"from": "5511988887777", "text": "oi"},
        received_at=NOW,
        body_sha256="ab" * 32,
    )


def _main_table(aws: AwsResources) -> Any:
    return boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])


def _record_key() -> dict[str, str]:
    return {"pk": EventRecord.pk_for("prv_1#p1#ev-1"), "sk": EventRecord.sk_for()}


def test_an_accepted_event_is_stored_under_the_names_it_is_read_by(aws: AwsResources) -> None:
    events = EventStore(bootstrap.table())
    uow = store.unit_of_work()
    events.record_accepted(uow, _event(), 20)
    uow.commit()

    record = _main_table(aws).get_item(Key=_record_key())["Item"]
    assert (record["provider_id"], record["providerInstanceId"], record["instanceKey"]) == ("prv_1", "p1", "acme:main")
    assert int(record["lease_until"]) == int((NOW + timedelta(seconds=20)).timestamp())
    assert "leaseUntil" not in record and "providerId" not in record
    assert (record["status"], record["receivedAt"]) == ("pending", NOW.isoformat())
    assert int(record["expiresAt"]) == int((NOW + timedelta(days=8)).timestamp())

    again = store.unit_of_work()
    events.record_accepted(again, _event(), 20)
    try:
        again.commit()
    except NotAccepted as refused:
        assert refused.acceptance in {"in_flight", "duplicate"}  # moto may not return the stored record
    else:
        raise AssertionError("a redelivery was accepted twice")


def test_a_record_stored_under_the_old_names_is_read_claimed_and_released(aws: AwsResources) -> None:
    events = EventStore(bootstrap.table())
    table = _main_table(aws)
    old = {
        **_record_key(),
        "providerId": "prv_1",
        "providerInstanceId": "p1",
        "instanceKey": "acme:main",
        "name": "message",
        "eventId": "ev-1",
        "receivedAt": NOW.isoformat(),
        "payload": '{"seq":null,"data":{"text":"oi"},"instance":null}',
        "status": "pending",
        "leaseUntil": int(NOW.timestamp()) - 1,
        "expiresAt": int((NOW + timedelta(days=8)).timestamp()),
        "gsi1pk": "WHEVENTS#PENDING#0",
        "gsi1sk": f"{NOW.isoformat()}#ev-1",
    }
    table.put_item(Item=old)

    [pending] = events.pending(NOW + timedelta(minutes=1), 10)
    assert (pending.provider_id, pending.data) == ("prv_1", {"text": "oi"})
    claimed = events.claim(pending, NOW, 20)
    assert isinstance(claimed, StoredEvent) and claimed.provider_id == "prv_1"
    assert events.claim(pending, NOW, 20) == "pending"  # leased now, under the one name
    item = table.get_item(Key=_record_key())["Item"]
    assert "leaseUntil" not in item and int(item["lease_until"]) == int(NOW.timestamp()) + 20

    events.release(claimed)
    assert isinstance(events.claim(pending, NOW, 20), StoredEvent)
    events.mark_applied(claimed, NOW)
    assert events.claim(pending, NOW, 20) == "applied"

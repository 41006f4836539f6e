"""The outbox's DynamoDB store keeps a part in flight across a dead drain: the drain that claims the
entry after the lease ran out reads it, so a send in doubt is never repeated blindly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from switchboard import bootstrap
from switchboard.providers.base import Quote
from switchboard.providers.content import Content, Location, Media, MediaMessage, MediaRef
from switchboard.routing.outbox_dynamo import OutboxItem, OutboxRepository
from switchboard.routing.records import OutboxEntry
from tools.support.aws import AwsResources

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ENTRY = OutboxEntry(instance="acme:acme-evo", message_id="901", phone="5511988887777", text="oi", enqueued_at=NOW)


def test_a_part_in_flight_outlives_its_drain_and_a_release_clears_it(aws: AwsResources) -> None:
    store = OutboxRepository(bootstrap.table())
    assert store.enqueue(ENTRY)
    claimed = store.claim(ENTRY, NOW, 60)
    assert claimed is not None and claimed.in_flight is None
    assert store.begin_part(claimed)  # then the drain dies, its send's outcome unknown

    assert store.claim(ENTRY, NOW + timedelta(seconds=30), 60) is None  # its lease still holds
    taken_over = store.claim(ENTRY, NOW + timedelta(seconds=61), 60)

    assert taken_over is not None and taken_over.in_flight == 0
    store.release(taken_over)
    assert store.waiting(ENTRY.instance, 10)[0].in_flight is None


def test_a_part_is_put_in_flight_only_from_the_count_the_store_holds(aws: AwsResources) -> None:
    store = OutboxRepository(bootstrap.table())
    store.enqueue(ENTRY)
    claimed = store.claim(ENTRY, NOW, 60)
    assert claimed is not None and store.advance(claimed, 1, 4096, NOW, 60)

    assert not store.begin_part(claimed)  # a drain that read 0 parts sent is behind: not its part
    assert store.begin_part(claimed.model_copy(update={"parts_sent": 1}))
    assert store.waiting(ENTRY.instance, 10)[0].in_flight == 1


def test_an_entry_with_attachments_keeps_their_references_its_quote_and_every_part_id(aws: AwsResources) -> None:
    digest = "ab" * 32
    stored = MediaRef(key=f"acme/outgoing/url_{digest}", sha256=digest, mime_type="application/pdf", size=1804)
    items: list[Content] = [
        MediaMessage(media=Media(kind="document", file_name="Pedido 1.pdf", stored=stored)),
        Location(latitude=-23.5613, longitude=-46.6565, name="Loja"),
    ]
    entry = ENTRY.model_copy(
        update={
            "message_id": "902",
            "items": items,
            "quote": Quote(id="3EB0AA", from_me=False, author="5511988887777"),
            "media_valid_until": NOW + timedelta(days=14),
        }
    )
    store = OutboxRepository(bootstrap.table())
    assert store.enqueue(entry)
    key = OutboxItem.of(entry)
    raw_entry = bootstrap.table().get_item(Key={"pk": key.pk, "sk": key.sk}, ConsistentRead=True)["Item"]

    [waiting] = store.waiting(entry.instance, 10)
    claimed = store.claim(waiting, NOW, 60)
    assert claimed is not None and store.advance(claimed, 1, 4096, NOW, 60, provider_message_id="wamid-1")
    [advanced] = store.waiting(entry.instance, 10)
    assert store.finish(advanced, "SENT", None, "wamid-2")

    assert (waiting.items, waiting.quote, waiting.media_valid_until) == (items, entry.quote, entry.media_valid_until)
    assert advanced.sent_ids == ["wamid-1"]
    outcome = store.outcome(entry.instance, "902")
    assert outcome is not None and outcome.provider_message_ids == ["wamid-1", "wamid-2"]
    raw = bootstrap.table().get_item(Key={"pk": f"OUTBOXMSG#{entry.instance}#902", "sk": "#META"})["Item"]
    assert raw["provider_message_ids"] == ["wamid-1", "wamid-2"]
    # A reference, never the bytes: the stored items are the contents' own fields.
    assert json.loads(str(raw_entry["items"]))[0]["media"]["stored"]["key"] == stored.key
    assert raw_entry["media_valid_until"] == (NOW + timedelta(days=14)).isoformat()


def test_a_revocation_is_recorded_once_and_only_for_a_known_reply(aws: AwsResources) -> None:
    store = OutboxRepository(bootstrap.table())
    store.enqueue(ENTRY.model_copy(update={"message_id": "903"}))

    assert store.mark_revoked(ENTRY.instance, "903", NOW)
    assert not store.mark_revoked(ENTRY.instance, "903", NOW)
    assert not store.mark_revoked(ENTRY.instance, "unknown", NOW)
    outcome = store.outcome(ENTRY.instance, "903")
    assert outcome is not None and outcome.revoked

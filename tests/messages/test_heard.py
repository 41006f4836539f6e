"""A person who writes to a number is heard by it: the mark joins the incoming message's
acceptance (no request of its own), survives the sends that follow, and is keyed as the send API
keys the same person, whichever provider kind delivered the message."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from switchboard import bootstrap
from switchboard.catalog.domain import Instance
from switchboard.catalog.events import ProviderEvent
from switchboard.core import store
from switchboard.core.clock import new_id
from switchboard.core.store import UnitOfWork
from switchboard.messages.domain import Message, MessageStatus, body_hash
from switchboard.messages.dynamo import AffinityItem, MessageRepository
from switchboard.messages.heard import HeardFrom, written_at
from switchboard.messages.schemas import SendMessage
from switchboard.pool.domain import NumberRoutes, SendingConfig, plan_numbers, usable_affinity
from switchboard.providers.base import WebhookRequest
from switchboard.providers.kinds import WebhookScheme, spec_for
from tools.support.api import Client
from tools.support.aws import REGION, AwsResources
from tools.support.fakes import FakeTickets
from tools.support.provider_webhooks import Catalog, deliver, envelope, message_data, stored

CONTRACTS = Path(__file__).resolve().parents[1] / "contracts"
SENDER = "5511988887777"


def main_table(aws: AwsResources) -> Any:
    return boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])


class DynamoCalls:
    """Every DynamoDB request the shared client makes (the handlers' own), with its parameters."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        # The item models send through the session's low-level client, the rest through the table's.
        for dynamodb in (bootstrap.table().meta.client, bootstrap.current().client("dynamodb")):
            dynamodb.meta.events.register("before-call.dynamodb", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        body = params.get("body") or b"{}"
        self.calls.append((model.name, json.loads(body)))

    def names(self) -> Counter[str]:
        return Counter(name for name, _ in self.calls)


def test_an_incoming_message_marks_its_sender_heard_in_the_transaction_that_accepts_it(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    # A first delivery warms the container (its view of the provider is read once).
    warm = deliver(client, catalog.provider_id, envelope("message", catalog.provider_instance_id, message_data()))
    assert warm.json()["outcome"] == "applied"
    calls = DynamoCalls()

    body = envelope("message", catalog.provider_instance_id, message_data("oi", sender=f"+{SENDER}"))
    answer = deliver(client, catalog.provider_id, body)

    assert answer.json()["outcome"] == "applied", answer.body
    # What a message event cost before the mark: the acceptance, then the record marked applied.
    assert calls.names() == Counter({"TransactWriteItems": 1, "UpdateItem": 1})
    [(_, transaction)] = [(name, params) for name, params in calls.calls if name == "TransactWriteItems"]
    entries = transaction["TransactItems"]
    keys = [next(iter(entry.values()))["Key"]["pk"]["S"] for entry in entries if "Put" not in entry]
    puts = [entry["Put"]["Item"]["pk"]["S"] for entry in entries if "Put" in entry]
    [affinity] = [key for key in keys if key.startswith("AFFINITY#")]
    assert any(put.startswith("WHEVENT#") for put in puts)  # one transaction with the event's record
    assert affinity.endswith(f"#{SENDER}")  # the + dropped, as the send API drops it
    [item] = stored(aws, "AFFINITY#")
    assert item["pk"] == affinity
    assert abs(int(item[f"heard_{catalog.number_id}"]) - datetime.now(UTC).timestamp()) < 60
    assert "number_id" not in item  # nobody sent them anything yet


def test_an_item_only_heard_reads_as_no_affinity_and_a_send_keeps_what_was_heard(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(sender=SENDER))
    assert deliver(client, catalog.provider_id, body).json()["outcome"] == "applied"
    [item] = stored(aws, "AFFINITY#")
    tenant = str(item["tenant"])
    repository = MessageRepository(main_table(aws))

    heard_only = repository.affinity(tenant, SENDER)

    assert heard_only is not None and heard_only.number_id is None
    assert set(heard_only.heard) == {catalog.number_id}
    other = NumberRoutes(number_id="num_other", digits="5511999990002", added_at=datetime.now(UTC) - timedelta(days=1))
    config = SendingConfig(tenant=tenant, api_key_id="key_1", mode="pool", pool=(other,))
    tickets = FakeTickets()
    plan = plan_numbers(config, heard_only, tickets)
    assert usable_affinity(config, heard_only) is None
    assert (tickets.value, plan.resolved["affinityNumber"]) == (1, None)  # the round robin decides

    message = Message(
        tenant=tenant, id=new_id("msg"), api_key_id="key_1", to=SENDER, text="hi", body_hash=body_hash(SENDER, "hi")
    )
    repository.create(message)
    claimed = repository.claim(message.id, tenant, "lease-1", 60)
    assert claimed is not None
    repository.record_sent(
        claimed,
        number_id="num_other",
        source_number=other.digits,
        instance="other",
        provider_id="prv_1",
        provider_message_id="wamid-1",
        events=[],
        remember_affinity=True,
    )

    both = repository.affinity(tenant, SENDER)
    assert both is not None
    assert (both.number_id, both.number) == ("num_other", other.digits)
    assert both.heard == heard_only.heard


def test_an_older_message_accepted_after_a_newer_one_leaves_the_window_where_the_newer_put_it(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    newer = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)
    older = newer - timedelta(hours=20)  # redelivered late by its provider
    for written in (newer, older):
        body = envelope("message", catalog.provider_instance_id, message_data(sender=SENDER, written=written))
        assert deliver(client, catalog.provider_id, body).json()["outcome"] == "applied"

    [item] = stored(aws, "AFFINITY#")
    assert int(item[f"heard_{catalog.number_id}"]) == int(newer.timestamp())
    # The older message was accepted all the same: logged, counted and queued for the helpdesk.
    assert len(stored(aws, "INCOMING#")) == 2


def test_a_heard_mark_only_moves_forward(aws: AwsResources) -> None:
    repository = MessageRepository(main_table(aws))
    newer = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def heard(at: datetime) -> dict[str, datetime]:
        uow = store.unit_of_work()
        repository.record_heard(uow, "acme", SENDER, "num_main", at)
        uow.commit()
        affinity = repository.affinity("acme", SENDER)
        assert affinity is not None
        return affinity.heard

    assert heard(newer) == {"num_main": newer}
    assert heard(newer - timedelta(minutes=5)) == {"num_main": newer}  # a late older one
    assert heard(newer) == {"num_main": newer}  # the same second again
    assert heard(newer + timedelta(seconds=1)) == {"num_main": newer + timedelta(seconds=1)}


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-12-01T06:00:00Z", datetime(2026, 12, 1, 6, 0, tzinfo=UTC)),  # the provider's own time
        ("2026-12-01T09:00:00+00:00", datetime(2026, 12, 1, 7, 0, tzinfo=UTC)),  # ahead: the arrival
        ("2026-12-01T06:00:00", datetime(2026, 12, 1, 7, 0, tzinfo=UTC)),  # no zone: the arrival
        ("yesterday", datetime(2026, 12, 1, 7, 0, tzinfo=UTC)),
        (None, datetime(2026, 12, 1, 7, 0, tzinfo=UTC)),
    ],
)
def test_the_mark_is_when_the_person_wrote_never_after_it_arrived(stamp: str | None, expected: datetime) -> None:
    instance = Instance(
        tenant="acme", name="main", provider_id="prv_1", provider_instance_id="p1", number_id="num_main", token_hint="…"
    )
    data = {"id": "m1", "from": SENDER} | ({} if stamp is None else {"timestamp": stamp})
    arrived = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    event = ProviderEvent(
        provider_id="prv_1", instance=instance, name="message", event_id="m1", data=data, received_at=arrived
    )

    assert written_at(event) == expected


class ConflictOnce:
    """A low-level client whose first transaction is cancelled as DynamoDB cancels one that met
    another transaction on the same item (the acceptance of the recipient's incoming message)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _make_api_call(self, operation: str, request: dict[str, Any]) -> Any:
        if operation == "TransactWriteItems":
            self.transactions += 1
            if self.transactions == 1:
                reasons = [{"Code": "None"}, {"Code": "None"}, {"Code": "TransactionConflict"}]
                error = {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"}
                raise ClientError({"Error": error, "CancellationReasons": reasons}, "TransactWriteItems")
        return self._client._make_api_call(operation, request)


def test_a_send_recorded_while_the_recipient_writes_in_is_recorded_on_the_next_try(aws: AwsResources) -> None:
    repository = MessageRepository(main_table(aws))
    message = Message(
        tenant="acme", id="msg_1", api_key_id="key_1", to=SENDER, text="hi", body_hash=body_hash(SENDER, "hi")
    )
    repository.create(message)
    claimed = repository.claim(message.id, "acme", "lease-1", 60)
    assert claimed is not None
    table = main_table(aws)
    conflicting = ConflictOnce(boto3.client("dynamodb", region_name=REGION))
    store.bind(table.name, conflicting)

    repository.record_sent(
        claimed,
        number_id="num_main",
        source_number="5511999990001",
        instance="main",
        provider_id="prv_1",
        provider_message_id="wamid-1",
        events=[],
        remember_affinity=True,
    )

    assert conflicting.transactions == 2
    assert repository.get("acme", message.id).status is MessageStatus.SENT
    affinity = repository.affinity("acme", SENDER)
    assert affinity is not None and affinity.number_id == "num_main"


# --- every kind's incoming text names the person as the send API does ----------------------------

CONTRACT_MESSAGES = [
    ("wuzapi", "wuzapi-hmac", "wuzapi/webhook_json_message_text.json", "application/json"),
    ("wuzapi", "wuzapi-hmac", "wuzapi/webhook_form_message_text.txt", "application/x-www-form-urlencoded"),
    ("evolution", "evolution-jwt", "evolution/webhook_messages_upsert_conversation.json", "application/json"),
    ("meta", "meta-signature", "meta/webhook_text_message.json", "application/json"),
]


@pytest.mark.parametrize(("kind", "scheme", "fixture", "content_type"), CONTRACT_MESSAGES)
def test_the_heard_mark_of_each_kinds_incoming_text_is_the_affinity_key_a_send_to_the_sender_reads(
    kind: str, scheme: WebhookScheme, fixture: str, content_type: str, offline_unit_of_work: UnitOfWork
) -> None:
    request = WebhookRequest(headers={"content-type": content_type}, body=(CONTRACTS / fixture).read_bytes())
    [inbound] = spec_for(kind).events(request, scheme)
    assert inbound.name == "message" and inbound.ignored is None
    instance = Instance(
        tenant="acme", name="main", provider_id="prv_1", provider_instance_id="p1", number_id="num_main", token_hint="…"
    )
    received = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    event = ProviderEvent(
        provider_id="prv_1",
        instance=instance,
        name="message",
        event_id=inbound.event_id,
        data=inbound.data,
        received_at=received,
    )

    uow = offline_unit_of_work
    HeardFrom(MessageRepository(_offline_table())).record(uow, event)

    [update] = _joined_updates(uow)
    to = SendMessage.model_validate({"to": f"+{inbound.data['from']}", "text": "reply"}).to
    assert update["Key"] == {"pk": {"S": AffinityItem.pk_for("acme", to)}, "sk": {"S": AffinityItem.sk_for()}}
    # When the person wrote (each fixture's message is older than its arrival here), not when it arrived.
    written = datetime.fromisoformat(inbound.data["timestamp"])
    assert written < received
    assert _assignments(update) == {"heard_num_main": {"N": str(int(written.timestamp()))}, "tenant": {"S": "acme"}}
    # Only forward, and giving way when refused: an older message must not cancel its own acceptance.
    names = update["ExpressionAttributeNames"]
    assert [names[name] for name in re.findall(r"#\w+", update["ConditionExpression"])] == ["heard_num_main"] * 2
    assert uow._joined[0].optional


@pytest.mark.parametrize("sender", [None, "", "status@broadcast", "0123", "+55 11 98888-7777"])
def test_an_event_naming_no_phone_number_marks_nobody(sender: str | None, offline_unit_of_work: UnitOfWork) -> None:
    instance = Instance(
        tenant="acme", name="main", provider_id="prv_1", provider_instance_id="p1", number_id="num_main", token_hint="…"
    )
    data = {"id": "m1", "text": "hi"} | ({} if sender is None else {"from": sender})
    event = ProviderEvent(
        provider_id="prv_1", instance=instance, name="message", event_id="m1", data=data, received_at=datetime.now(UTC)
    )

    uow = offline_unit_of_work
    HeardFrom(MessageRepository(_offline_table())).record(uow, event)

    assert len(uow) == 0


def _offline_table() -> Any:
    """What the repository keeps of its table: no request is made."""
    return SimpleNamespace(name="main", meta=SimpleNamespace(client=None))


@pytest.fixture
def offline_unit_of_work(monkeypatch: pytest.MonkeyPatch) -> UnitOfWork:
    """A unit of work on a table of no endpoint: it is inspected, never committed (the binding
    of the tests around it is restored afterwards)."""
    monkeypatch.setattr(store._Bound, "current", None)
    monkeypatch.setattr(store.TableItem.Meta, "table_name", store.TableItem.Meta.table_name)
    store.bind("main", SimpleNamespace())
    return store.unit_of_work()


def _joined_updates(uow: UnitOfWork) -> list[dict[str, Any]]:
    """The Update entries the operations joining `uow` would send, as DynamoDB receives them."""
    updates: list[dict[str, Any]] = uow._transaction._update_items
    return updates


def _assignments(update: dict[str, Any]) -> dict[str, Any]:
    """attribute name -> value of each `SET #name = :value` of an update entry."""
    names, values = update["ExpressionAttributeNames"], update["ExpressionAttributeValues"]
    pairs = re.findall(r"(#\w+) = (:\w+)", update["UpdateExpression"])
    return {names[name]: values[value] for name, value in pairs}

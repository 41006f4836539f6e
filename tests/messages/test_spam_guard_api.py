"""The spam guard through the API and the send worker, on moto: turned on by the instance's own
configuration, it fails a repeated text with `spam_guard` and keeps hashes only; a guarded send
reads the history once and writes it with the send's record, never without it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from switchboard import bootstrap
from switchboard.catalog.domain import instance_key
from switchboard.core.clock import new_id
from switchboard.core.errors import AlreadyFinal
from switchboard.core.text import text_hash
from switchboard.messages.domain import Message, body_hash
from switchboard.messages.dynamo import MessageRepository
from switchboard.messages.spam_guard import WINDOW, KeptTexts, SentText
from tools.support.api import Client
from tools.support.aws import REGION, AwsResources
from tools.support.fakes import FakeProvider
from tools.support.pool import NUMBERS, PoolWorld, build_world

RECIPIENT = "5511988880001"


def guarded_world(client: Client, tenant: Any) -> tuple[PoolWorld, str]:
    """A tenant with one number, a send key on it, and its instance's spam guard on."""
    world = build_world(client, tenant, NUMBERS[0])
    world.create_send_key(default_number=NUMBERS[0])
    name = world.instances[NUMBERS[0]]
    guarded = client.put(
        f"/api/instances/{name}",
        key=world.tenant.admin,
        json_body={
            "providerId": world.provider_id,
            "providerInstanceId": name,
            "numberId": world.numbers[NUMBERS[0]],
            "spamguardEnabled": True,
        },
    )
    assert guarded.status == 200, guarded.body
    return world, name


def test_given_an_instance_with_its_spam_guard_on_then_a_repeated_text_fails_spam_guard(
    client: Client, make_tenant: Any, provider: FakeProvider, run_worker: Any, aws: AwsResources
) -> None:
    world, name = guarded_world(client, make_tenant("acme"))

    first = world.send(RECIPIENT, "Promoção de hoje")
    run_worker()
    repeat = world.send(RECIPIENT, "  promoção   DE hoje ")
    run_worker()

    assert world.message(first)["status"] == "SENT"
    failed = world.message(repeat)
    assert (failed["status"], failed["failureReason"]) == ("FAILED", "spam_guard")
    skipped = [event["data"] for event in failed["trace"] if event["stage"] == "pool.instance.skipped"]
    assert [(data["instance"], data["reason"]) for data in skipped] == [(name, "spam_guard")]
    assert provider.bodies == ["Promoção de hoje"]
    table = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    item = table.get_item(Key={"pk": f"SPAMGUARD#{instance_key('acme', name)}#{RECIPIENT}", "sk": "#META"})["Item"]
    assert [text["hash"] for text in item["texts"]] == [text_hash("Promoção de hoje")]
    assert "Promoção" not in str(item)


class SpamHistoryRequests:
    """The DynamoDB requests the handlers' shared client makes that touch spam guard history items."""

    def __init__(self) -> None:
        self.reads = 0
        self.puts = 0
        self.in_transactions: list[dict[str, Any]] = []
        # The item models send through the session's low-level client, the rest through the table's.
        for dynamodb in (bootstrap.table().meta.client, bootstrap.current().client("dynamodb")):
            dynamodb.meta.events.register("before-call.dynamodb", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        request = json.loads(params.get("body") or b"{}")
        if model.name == "GetItem" and request["Key"]["pk"]["S"].startswith("SPAMGUARD#"):
            self.reads += 1
        elif model.name == "PutItem" and request["Item"]["pk"]["S"].startswith("SPAMGUARD#"):
            self.puts += 1
        elif model.name == "TransactWriteItems":
            entries = [entry["Put"]["Item"] for entry in request["TransactItems"] if "Put" in entry]
            self.in_transactions += [item for item in entries if item["pk"]["S"].startswith("SPAMGUARD#")]


def test_a_guarded_send_reads_the_history_once_and_writes_it_in_the_transaction_that_records_the_send(
    client: Client, make_tenant: Any, provider: FakeProvider, run_worker: Any, aws: AwsResources
) -> None:
    world, name = guarded_world(client, make_tenant("acme"))
    first = world.send(RECIPIENT, "primeira")
    run_worker()
    requests = SpamHistoryRequests()

    second = world.send(RECIPIENT, "segunda")
    run_worker()

    assert [world.message(sent)["status"] for sent in (first, second)] == ["SENT", "SENT"]
    assert (requests.reads, requests.puts) == (1, 0)
    [written] = requests.in_transactions
    assert [text["M"]["hash"]["S"] for text in written["texts"]["L"]] == [text_hash("segunda"), text_hash("primeira")]
    table = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    item = table.get_item(Key={"pk": f"SPAMGUARD#{instance_key('acme', name)}#{RECIPIENT}", "sk": "#META"})["Item"]
    newest = datetime.fromisoformat(str(item["texts"][0]["at"]))
    assert int(item["expiresAt"]) == int((newest + WINDOW).timestamp())


def test_a_send_that_is_no_longer_ours_to_record_leaves_no_history(aws: AwsResources) -> None:
    table = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    repository = MessageRepository(table)
    message = Message(
        tenant="acme",
        id=new_id("msg"),
        api_key_id="key_1",
        to=RECIPIENT,
        text="oi",
        body_hash=body_hash(RECIPIENT, "oi"),
    )
    repository.create(message)
    claimed = repository.claim(message.id, "acme", "lease-1", 60)
    assert claimed is not None
    repository.record_failed(claimed, "internal_error", [])  # another delivery finished it meanwhile
    now = datetime.now(UTC)
    kept = KeptTexts(
        instance="acme:main",
        recipient=RECIPIENT,
        texts=(SentText(hash=text_hash("oi"), at=now),),
        expires_at=now + WINDOW,
    )

    with pytest.raises(AlreadyFinal):
        repository.record_sent(
            claimed,
            number_id="num_1",
            source_number=NUMBERS[0],
            instance="main",
            provider_id="prv_1",
            provider_message_id="wamid-1",
            events=[],
            remember_affinity=True,
            spam_history=kept,
        )

    assert "Item" not in table.get_item(Key={"pk": f"SPAMGUARD#acme:main#{RECIPIENT}", "sk": "#META"})

"""The spam guard through the API and the send worker, on moto: turned on by the instance's own
configuration, it fails a repeated text with `spam_guard` and keeps hashes only."""

from __future__ import annotations

from typing import Any

import boto3

from switchboard.catalog.domain import instance_key
from switchboard.messages.spam_guard import text_hash
from tests.support.api import Client
from tests.support.aws import REGION, AwsResources
from tests.support.fakes import FakeProvider
from tests.support.pool import NUMBERS, build_world

RECIPIENT = "5511988880001"


def test_given_an_instance_with_its_spam_guard_on_then_a_repeated_text_fails_spam_guard(
    client: Client, make_tenant: Any, provider: FakeProvider, run_worker: Any, aws: AwsResources
) -> None:
    world = build_world(client, make_tenant("acme"), NUMBERS[0])
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

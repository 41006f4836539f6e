"""The container's view of a provider (record, secrets, bindings) kept between webhooks, checked by
the provider's stamp in the transaction that stores each event: a catalog change is seen by the
very next delivery in the same container, and a warm container reads nothing it kept."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from switchboard import bootstrap
from tools.support.api import SECRET_WATCH, Client
from tools.support.aws import AwsResources
from tools.support.provider_webhooks import (
    Catalog,
    deliver,
    envelope,
    forwarded,
    message_data,
    signed_headers,
    stored,
    usage_in,
)

ROTATED_SECRET = "whsec-routing-test-secret-2"


def message(catalog: Catalog, binding: str | None = None) -> bytes:
    return envelope("message", binding or catalog.provider_instance_id, message_data(), seq=1)


@pytest.fixture
def aws_requests(aws: AwsResources) -> Iterator[Counter[str]]:
    """Every DynamoDB, SQS and SSM request the ingest's clients make, by operation."""
    requests: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        requests[f"{model.service_model.service_name}.{model.name}"] += 1

    # The table resource's client and the item models' low-level one (core/store.py).
    clients = [
        bootstrap.table().meta.client,
        bootstrap.current().client("dynamodb"),
        bootstrap.current().client("sqs"),
        bootstrap.current().client("ssm"),
    ]
    for aws_client in clients:
        aws_client.meta.events.register("before-call", count)
    yield requests
    for aws_client in clients:
        aws_client.meta.events.unregister("before-call", count)


# --- requests ------------------------------------------------------------------------------


def test_given_a_warm_container_then_a_first_delivery_costs_3_requests_and_a_duplicate_1(
    client: Client, aws: AwsResources, catalog: Catalog, aws_requests: Counter[str]
) -> None:
    assert deliver(client, catalog.provider_id, message(catalog)).status == 200  # the view is read here
    body = message(catalog)

    aws_requests.clear()
    first = deliver(client, catalog.provider_id, body)
    first_requests = dict(aws_requests)
    aws_requests.clear()
    duplicate = deliver(client, catalog.provider_id, body)

    assert first.json()["outcome"] == "applied" and duplicate.json()["outcome"] == "duplicate"
    assert first_requests == {"dynamodb.TransactWriteItems": 1, "sqs.SendMessage": 1, "dynamodb.UpdateItem": 1}
    assert dict(aws_requests) == {"dynamodb.TransactWriteItems": 1}
    assert usage_in(aws, "acme:acme-main") == 2
    assert stored(aws, "USAGEMARK#") == []  # the event's own marker keeps the count exact


def test_given_events_of_an_instance_never_bound_then_404_and_the_kept_view_stays(
    client: Client, aws: AwsResources, catalog: Catalog, aws_requests: Counter[str]
) -> None:
    """A provider server with users we never registered: each such event checks the stamp and
    looks the binding up, and reads no secret."""
    assert deliver(client, catalog.provider_id, message(catalog)).status == 200

    aws_requests.clear()
    answers = [deliver(client, catalog.provider_id, message(catalog, binding="inst-other")).status for _ in range(3)]
    unbound_requests = dict(aws_requests)
    aws_requests.clear()
    known = deliver(client, catalog.provider_id, message(catalog))

    assert answers == [404, 404, 404]
    assert unbound_requests == {"dynamodb.GetItem": 3, "dynamodb.TransactGetItems": 3}
    assert known.json()["outcome"] == "applied" and sum(aws_requests.values()) == 3


# --- secrets -------------------------------------------------------------------------------


def test_given_the_webhook_secret_rotated_when_the_old_one_signs_the_next_delivery_then_401(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    SECRET_WATCH.secrets.add(ROTATED_SECRET)
    assert deliver(client, catalog.provider_id, message(catalog)).status == 200  # the old secret is kept now
    patched = client.patch(
        f"/api/providers/{catalog.provider_id}", key=catalog.tenant.admin, json_body={"webhookSecret": ROTATED_SECRET}
    )
    assert patched.status == 200, patched.body
    before = len(stored(aws, "WHEVENT#"))
    old = message(catalog)
    ignored = envelope("presence", catalog.provider_instance_id, {}, seq=2)
    unbound = message(catalog, binding="inst-unknown")

    answers = [deliver(client, catalog.provider_id, body) for body in (old, ignored, unbound)]
    rotated = deliver(client, catalog.provider_id, old, signed_headers(old, secret=ROTATED_SECRET))

    assert [answer.status for answer in answers] == [401, 401, 401]  # 401 before 404 for an unknown binding
    assert len(stored(aws, "WHEVENT#")) == before + 1  # only the delivery signed with the new secret
    assert (rotated.status, rotated.json()["outcome"]) == (200, "applied")


def test_given_a_provider_without_a_stamp_yet_then_it_is_checked_as_revision_0_until_its_first_write(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    """A provider created before stamps existed has none until a write bumps it."""
    SECRET_WATCH.secrets.add(ROTATED_SECRET)
    bootstrap.table().delete_item(Key={"pk": f"PROVIDER#{catalog.provider_id}", "sk": "STAMP"})
    bootstrap.reset()  # a new container: nothing kept

    assert deliver(client, catalog.provider_id, message(catalog)).json()["outcome"] == "applied"
    client.patch(
        f"/api/providers/{catalog.provider_id}", key=catalog.tenant.admin, json_body={"webhookSecret": ROTATED_SECRET}
    )
    body = message(catalog)

    assert deliver(client, catalog.provider_id, body).status == 401
    assert deliver(client, catalog.provider_id, body, signed_headers(body, secret=ROTATED_SECRET)).status == 200


# --- bindings ------------------------------------------------------------------------------


def test_given_an_instance_deleted_when_its_next_event_arrives_then_404_and_nothing_stored(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    assert deliver(client, catalog.provider_id, message(catalog)).status == 200  # the binding is kept now
    assert client.delete(f"/api/instances/{catalog.instance}", key=catalog.tenant.admin).status == 204
    assert len(forwarded(aws)) == 1  # (receiving them takes them off the queue)

    answer = deliver(client, catalog.provider_id, message(catalog))

    assert answer.status == 404 and answer.json()["error"] == "unknown_instance"
    assert (len(stored(aws, "WHEVENT#")), forwarded(aws)) == (1, [])
    assert usage_in(aws, "acme:acme-main") == 1


def test_given_a_binding_re_pointed_to_another_instance_then_the_next_event_goes_to_the_new_one(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    assert deliver(client, catalog.provider_id, message(catalog)).json()["instance"] == "acme-main"
    moved = {"providerId": catalog.provider_id, "numberId": catalog.number_id, "providerInstanceId": "inst-9"}
    assert client.put("/api/instances/acme-main", key=catalog.tenant.admin, json_body=moved).status == 200
    created = client.put(
        "/api/instances/acme-new",
        key=catalog.tenant.admin,
        json_body={**moved, "providerInstanceId": catalog.provider_instance_id, "token": "instance-token-new-0001"},
    )
    assert created.status == 201, created.body

    answer = deliver(client, catalog.provider_id, message(catalog))

    assert (answer.status, answer.json()["instance"]) == (200, "acme-new")
    assert (usage_in(aws, "acme:acme-main"), usage_in(aws, "acme:acme-new")) == (1, 1)
    assert [job["instance"] for job in forwarded(aws)] == ["acme:acme-main", "acme:acme-new"]


# --- Meta phone number ids -----------------------------------------------------------------

APP_SECRET = "meta-app-secret-for-tests"


def meta_message(phone_id: str, wamid: str) -> bytes:
    text = {"from": "16505551234", "id": wamid, "timestamp": "1749416383", "type": "text", "text": {"body": "hi"}}
    metadata = {"display_phone_number": "15550783881", "phone_number_id": phone_id}
    value = {"messaging_product": "whatsapp", "metadata": metadata, "messages": [text]}
    change = {"field": "messages", "value": value}
    return json.dumps({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [change]}]}).encode()


def meta_signed(body: bytes) -> dict[str, str]:
    return {"X-Hub-Signature-256": "sha256=" + hmac.new(APP_SECRET.encode(), body, hashlib.sha256).hexdigest()}


def test_given_a_numbers_meta_phone_id_changed_then_the_next_event_binds_by_the_new_one(
    client: Client, aws: AwsResources, make_tenant: Any
) -> None:
    tenant = make_tenant("acme")
    SECRET_WATCH.secrets.add(APP_SECRET)
    number = client.post(
        "/api/numbers",
        key=tenant.admin,
        json_body={"number": "15550783881", "displayName": "Cloud", "metaPhoneId": "1001"},
    ).json()
    provider = client.post(
        "/api/providers",
        key=tenant.admin,
        json_body={"name": "cloud", "kind": "meta", "baseUrl": "http://127.0.0.1:8081", "webhookSecret": APP_SECRET},
    ).json()
    instance = {"providerId": provider["id"], "providerInstanceId": "1001", "numberId": number["id"]}
    put = client.put("/api/instances/cloud", key=tenant.admin, json_body={**instance, "token": "meta-token-0001"})
    assert put.status == 201, put.body

    def send(phone_id: str, wamid: str) -> Any:
        body = meta_message(phone_id, wamid)
        return deliver(client, provider["id"], body, meta_signed(body))

    assert send("1001", "wamid.1").json()["instance"] == "cloud"  # kept: 1001 -> cloud
    patched = client.patch(f"/api/numbers/{number['id']}", key=tenant.admin, json_body={"metaPhoneId": "2002"})
    assert patched.status == 200, patched.body

    assert send("1001", "wamid.2").status == 404
    assert (send("2002", "wamid.3").status, usage_in(aws, "acme:cloud")) == (200, 2)

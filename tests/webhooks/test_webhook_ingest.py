"""Signed provider webhooks through the gateway and the real handler, on moto."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from switchboard import bootstrap
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.catalog.events import ProviderEvent
from switchboard.core.errors import SwitchboardError
from switchboard.core.secrets import SecretStore
from switchboard.core.store import UnitOfWork
from switchboard.providers.base import WebhookRequest
from switchboard.webhooks.dynamo import EventStore
from switchboard.webhooks.service import IngestService
from tests.support.samples import sample_event
from tools.support.api import Client, new_platform_key, new_tenant
from tools.support.aws import REGION, AwsResources
from tools.support.provider_webhooks import (
    WEBHOOK_SECRET,
    Catalog,
    build_catalog,
    deliver,
    envelope,
    forwarded,
    message_data,
    signed_headers,
    stored,
    usage_in,
)

# --- authentication ----------------------------------------------------------------------


def test_given_a_signed_message_when_delivered_then_applied_counted_and_queued_for_the_downstream(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data("olá"), seq=1)

    answer = deliver(client, catalog.provider_id, body)

    assert answer.status == 200, answer.body
    assert answer.json() == {"outcome": "applied", "instance": "acme-main", "event": "message", "reason": None}
    assert usage_in(aws, "acme:acme-main") == 1
    [job] = forwarded(aws)
    assert (job["instance"], job["owner_tag"], job["text"], job["sender"]) == (
        "acme:acme-main",
        "acme",
        "olá",
        "5511988887777",
    )
    [record] = stored(aws, "WHEVENT#")
    assert record["status"] == "applied"
    [marker] = stored(aws, "WHDEDUPE#")
    assert int(marker["expiresAt"]) >= time.time() + 3 * 24 * 3600


def test_given_one_byte_changed_after_signing_when_delivered_then_401_and_nothing_stored(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    headers = signed_headers(body)
    tampered = body.replace(b"hello", b"hellp")

    answer = deliver(client, catalog.provider_id, tampered, headers)

    assert answer.status == 401
    assert stored(aws, "WH") == [] and forwarded(aws) == []


def test_given_a_timestamp_outside_the_window_when_delivered_then_401_with_the_same_body(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    wrong_secret = deliver(client, catalog.provider_id, body, signed_headers(body, secret="another-secret-value"))
    # Read the clock for each delivery: a whole second past the window either way, whatever
    # fraction of a second `int()` drops and however long the delivery takes to be checked.
    stamps: list[Callable[[], str]] = [lambda: str(int(time.time()) - 301), lambda: str(int(time.time()) + 302)]
    stamps += [lambda: "1700000000.0", lambda: ""]

    for stamp in stamps:
        answer = deliver(client, catalog.provider_id, body, signed_headers(body, timestamp=stamp()))
        assert (answer.status, answer.body) == (401, wrong_secret.body), stamp()

    assert wrong_secret.status == 401
    assert stored(aws, "WH") == []


def test_given_an_unknown_provider_or_missing_headers_when_delivered_then_the_same_401(
    client: Client, catalog: Catalog
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    reference = deliver(client, catalog.provider_id, body, signed_headers(body, secret="wrong-secret-value"))

    answers = [
        deliver(client, "prv_unknown", body),
        deliver(client, catalog.provider_id, body, {"X-Webhook-Timestamp": str(int(time.time()))}),
        deliver(
            client, catalog.provider_id, body, {"X-Webhook-Signature": signed_headers(body)["X-Webhook-Signature"]}
        ),
    ]

    assert reference.status == 401
    assert [(a.status, a.body) for a in answers] == [(401, reference.body)] * 3


def test_given_a_body_over_six_megabytes_when_delivered_then_413(client: Client, catalog: Catalog) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data("x" * (6 * 1024 * 1024)), seq=1)

    assert deliver(client, catalog.provider_id, body).status == 413


def test_given_a_rotated_secret_written_by_another_container_when_signed_with_it_then_accepted(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    first = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    assert deliver(client, catalog.provider_id, first).status == 200  # the old secret is now cached
    name = f"/switchboard/test/providers/{catalog.provider_id}/webhook-secret"
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=name, Value="whsec-rotated-secret-2", Type="SecureString", Overwrite=True
    )
    second = envelope("message", catalog.provider_instance_id, message_data(), seq=2)

    answer = deliver(client, catalog.provider_id, second, signed_headers(second, secret="whsec-rotated-secret-2"))

    assert answer.status == 200, answer.body


# --- binding -----------------------------------------------------------------------------


def test_given_an_instance_id_not_bound_to_this_provider_when_delivered_then_404_and_nothing_stored(
    client: Client, aws: AwsResources, catalog: Catalog, make_tenant: Any
) -> None:
    other = build_catalog(client, make_tenant("globex"), instance="globex-main", provider_instance_id="inst-g")
    theirs = envelope("message", other.provider_instance_id, message_data(), seq=1)
    unknown = envelope("message", "inst-unknown", message_data(), seq=1)

    assert deliver(client, catalog.provider_id, theirs).status == 404
    assert deliver(client, catalog.provider_id, unknown).status == 404
    assert stored(aws, "WH") == [] and usage_in(aws, "globex:globex-main") == 0


def test_given_a_signed_body_that_is_not_an_envelope_when_delivered_then_400(client: Client, catalog: Catalog) -> None:
    for body in (b"not json", b'{"event": "message"}', b"[]"):
        assert deliver(client, catalog.provider_id, body).status == 400


# --- dedupe and order --------------------------------------------------------------------


def test_given_the_same_event_redelivered_when_applied_then_duplicate_and_one_effect(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)

    answers = [deliver(client, catalog.provider_id, body) for _ in range(3)]

    assert [a.json()["outcome"] for a in answers] == ["applied", "duplicate", "duplicate"]
    assert usage_in(aws, "acme:acme-main") == 1
    assert len(forwarded(aws)) == 1


def instance_item(aws: AwsResources, key: str) -> dict[str, Any]:
    [item] = stored(aws, f"INSTANCE#{key}")
    return item


def test_given_connection_events_seq_3_1_2_when_delivered_then_the_state_is_that_of_seq_3(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    states = {1: True, 2: True, 3: False}
    for seq in (3, 1, 2):
        body = envelope("connection", catalog.provider_instance_id, {"connected": states[seq]}, seq=seq)
        assert deliver(client, catalog.provider_id, body).status == 200

    item = instance_item(aws, "acme:acme-main")
    assert (item["state"], int(item["state_seq"])) == ("DISCONNECTED", 3)
    answer = client.get("/api/instances/acme-main", key=catalog.tenant.admin).json()
    assert answer["state"] == "DISCONNECTED"


def test_given_connection_events_in_order_when_delivered_then_each_newer_one_wins(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    for seq, connected in ((1, True), (2, False), (3, True)):
        body = envelope("connection", catalog.provider_instance_id, {"connected": connected}, seq=seq)
        deliver(client, catalog.provider_id, body)
        assert instance_item(aws, "acme:acme-main")["state"] == ("CONNECTED" if connected else "DISCONNECTED")


def test_given_connection_webhooks_then_each_state_change_is_published_once_after_its_write(
    client: Client, aws: AwsResources, catalog: Catalog, published: list[tuple[str, dict[str, Any]]]
) -> None:
    for seq, connected in ((1, True), (1, True), (2, True), (4, False), (3, True)):
        body = envelope("connection", catalog.provider_instance_id, {"connected": connected}, seq=seq)
        assert deliver(client, catalog.provider_id, body).status == 200

    changes = [detail for kind, detail in published if kind == "instance.connection.changed"]
    assert [(change["tenant"], change["instance"], change["state"]) for change in changes] == [
        ("acme", "acme-main", "CONNECTED"),
        ("acme", "acme-main", "DISCONNECTED"),
    ]


# --- durability --------------------------------------------------------------------------


def throttled(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}}, operation)


def test_given_dynamodb_fails_after_the_commit_when_redelivered_then_applied_exactly_once(
    client: Client, aws: AwsResources, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    real = EventStore.mark_applied
    failures = iter([throttled("UpdateItem")])

    def failing_once(self: EventStore, event: Any, now: datetime) -> None:
        error = next(failures, None)
        if error:
            raise error
        real(self, event, now)

    monkeypatch.setattr(EventStore, "mark_applied", failing_once)

    first = deliver(client, catalog.provider_id, body)
    [record] = stored(aws, "WHEVENT#")
    second = deliver(client, catalog.provider_id, body)
    third = deliver(client, catalog.provider_id, body)

    assert first.status >= 500 and first.json()["error"] == "event_not_applied"
    assert record["status"] == "pending"
    assert (second.json()["outcome"], third.json()["outcome"]) == ("applied", "duplicate")
    assert usage_in(aws, "acme:acme-main") == 1
    assert len({job["event_id"] for job in forwarded(aws)}) == 1  # a second copy is dropped by the forwarder


def test_given_dynamodb_fails_before_the_commit_when_delivered_then_5xx_nothing_stored_and_redelivery_applies(
    client: Client, aws: AwsResources, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    real = UnitOfWork.commit
    failures = iter([throttled("TransactWriteItems")])

    def failing_once(self: UnitOfWork, *args: Any, **kwargs: Any) -> Any:
        error = next(failures, None)
        if error:
            raise error
        return real(self, *args, **kwargs)

    monkeypatch.setattr(UnitOfWork, "commit", failing_once)

    first = deliver(client, catalog.provider_id, body)
    nothing = stored(aws, "WH")
    second = deliver(client, catalog.provider_id, body)

    assert first.status >= 500 and nothing == []
    assert second.json()["outcome"] == "applied"
    assert usage_in(aws, "acme:acme-main") == 1


def test_given_an_effect_failed_and_the_provider_gave_up_when_the_sweep_runs_then_it_is_applied_once(
    client: Client, aws: AwsResources, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = envelope("connection", catalog.provider_instance_id, {"connected": True}, seq=7)
    handlers = bootstrap.event_handlers()
    failures = iter([RuntimeError("effect failed")])

    def flaky(event: ProviderEvent) -> None:
        error = next(failures, None)
        if error:
            raise error

    monkeypatch.setitem(handlers, "connection", [flaky, *handlers["connection"]])
    assert deliver(client, catalog.provider_id, body).status >= 500

    applied = bootstrap.ingest_service().reapply_pending(older_than=timedelta(0))

    assert applied == 1
    assert bootstrap.ingest_service().reapply_pending(older_than=timedelta(0)) == 0
    assert instance_item(aws, "acme:acme-main")["state"] == "CONNECTED"
    assert deliver(client, catalog.provider_id, body).json()["outcome"] == "duplicate"


def test_given_a_redelivery_while_the_first_delivery_applies_the_event_then_200_in_flight_and_one_effect(
    client: Client, aws: AwsResources, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = envelope("connection", catalog.provider_instance_id, {"connected": True}, seq=7)
    handlers = bootstrap.event_handlers()
    meanwhile: list[Any] = []

    def redelivered_meanwhile(event: ProviderEvent) -> None:
        if not meanwhile:  # the provider retries while our first answer is still on its way
            meanwhile.append(deliver(client, catalog.provider_id, body))

    monkeypatch.setitem(handlers, "connection", [redelivered_meanwhile, *handlers["connection"]])

    first = deliver(client, catalog.provider_id, body)

    [duplicate] = meanwhile
    assert (duplicate.status, duplicate.json()["outcome"]) == (200, "in_flight")
    assert (first.status, first.json()["outcome"]) == (200, "applied")
    assert instance_item(aws, "acme:acme-main")["state"] == "CONNECTED"
    assert deliver(client, catalog.provider_id, body).json()["outcome"] == "duplicate"


def test_given_an_in_flight_answer_and_the_first_delivery_then_fails_then_the_sweep_applies_it_once(
    client: Client, aws: AwsResources, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why `in_flight` may be acknowledged: the event is durable before either answer."""
    body = envelope("connection", catalog.provider_instance_id, {"connected": True}, seq=7)
    handlers = bootstrap.event_handlers()
    meanwhile: list[Any] = []

    def redelivered_then_failing(event: ProviderEvent) -> None:
        if not meanwhile:
            meanwhile.append(deliver(client, catalog.provider_id, body))
            raise RuntimeError("effect failed")

    monkeypatch.setitem(handlers, "connection", [redelivered_then_failing, *handlers["connection"]])

    first = deliver(client, catalog.provider_id, body)

    assert meanwhile[0].json()["outcome"] == "in_flight"
    assert first.status >= 500
    [record] = stored(aws, "WHEVENT#")
    assert record["status"] == "pending"
    assert bootstrap.ingest_service().reapply_pending(older_than=timedelta(0)) == 1
    assert instance_item(aws, "acme:acme-main")["state"] == "CONNECTED"


# --- concurrency -------------------------------------------------------------------------


def test_given_the_same_event_delivered_10_times_concurrently_then_one_effect(
    served_aws: AwsResources, http_api: Any, make_served_tenant: Any
) -> None:
    catalog = make_served_tenant()
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    outcomes: list[str] = []
    barrier = threading.Barrier(10)

    def one_container() -> None:
        # Each thread is its own "container": its own boto3 resources and service.
        table = boto3.resource("dynamodb", region_name=REGION).Table(served_aws.tables["MainTable"])
        ssm = boto3.client("ssm", region_name=REGION)

        def effect(event: ProviderEvent) -> None:
            table.update_item(
                Key={"pk": "TEST#EFFECTS", "sk": event.event_id},
                UpdateExpression="ADD applied :one",
                ExpressionAttributeValues={":one": 1},
            )

        service = IngestService(
            CatalogRepository(table),
            SecretStore(ssm, "/switchboard/test", 60),
            EventStore(table),
            {"message": [effect]},
        )
        headers = signed_headers(body)
        barrier.wait()
        try:
            request = WebhookRequest(headers={name.lower(): value for name, value in headers.items()}, body=body)
            result = service.receive(catalog.provider_id, request)
            outcomes.append(result.outcome)
        except SwitchboardError as error:
            outcomes.append(error.code)

    threads = [threading.Thread(target=one_container) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    table = boto3.resource("dynamodb", region_name=REGION).Table(served_aws.tables["MainTable"])
    effects = [item for item in table.scan()["Items"] if item["pk"] == "TEST#EFFECTS"]
    assert [int(item["applied"]) for item in effects] == [1]
    assert outcomes.count("applied") == 1
    assert set(outcomes) <= {"applied", "duplicate", "in_flight"}  # every copy acknowledged: none retried
    print(f"\n10 concurrent deliveries: {sorted(outcomes)}")


@pytest.fixture
def make_served_tenant(served_aws: AwsResources, http_api: Any) -> Any:
    def make() -> Catalog:
        served_client = Client(http_api)
        return build_catalog(served_client, new_tenant(served_client, new_platform_key(), "acme"))

    return make


def test_a_webhook_secret_never_appears_in_answers(client: Client, catalog: Catalog) -> None:
    body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)
    for answer in (deliver(client, catalog.provider_id, body), deliver(client, catalog.provider_id, b"x")):
        assert WEBHOOK_SECRET not in answer.body.decode()


def test_the_sample_event_for_sam_local_invoke_is_what_the_handler_accepts(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    """events/webhook_provider_message.json, re-signed for now and pointed at this test's provider."""
    event = sample_event("webhook_provider_message.json")
    body = json.loads(event["body"])
    body["instanceId"] = catalog.provider_instance_id
    event["body"] = json.dumps(body, separators=(",", ":"))
    event["pathParameters"]["provider_id"] = catalog.provider_id
    event["rawPath"] = event["requestContext"]["http"]["path"] = f"/webhooks/{catalog.provider_id}"
    signed = signed_headers(event["body"].encode())
    event["headers"].update({name.lower(): value for name, value in signed.items()})

    answer = client._api.functions.invoke("WebhooksFunction", event)

    assert answer["statusCode"] == 200, answer
    assert json.loads(answer["body"])["outcome"] == "applied"

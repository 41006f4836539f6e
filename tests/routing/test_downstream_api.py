"""Incoming messages reach each tenant's downstream: mappings, fallback, forwarder, SSRF policy."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import boto3
import httpx
import pytest

from switchboard import bootstrap
from switchboard.core.secrets import SecretStore
from switchboard.routing.chatwoot import ChatwootClient
from switchboard.routing.domain import IncomingMessage
from switchboard.routing.dynamo import RoutingRepository
from switchboard.routing.forward_queue import message_group
from switchboard.routing.service import DownstreamResolver, GlobalDownstream
from tests.support.samples import sample_event
from tools.support.api import SECRET_WATCH, Client
from tools.support.aws import AwsResources
from tools.support.builders import platform
from tools.support.downstream import FakeDownstream
from tools.support.provider_webhooks import Catalog, deliver, envelope, message_data
from tools.support.sqs import received_record

ACME_TOKEN = "cw-token-acme-very-secret-1"
ACME_URL = "http://127.0.0.1:9101"
OTHER_URL = "http://127.0.0.1:9102"


def put_mapping(client: Client, key: str, owner_tag: str = "acme", **changes: Any) -> Any:
    body = {
        "downstreamBaseUrl": ACME_URL,
        "downstreamApiToken": ACME_TOKEN,
        "downstreamAccountId": 7,
        "downstreamInboxId": 12,
        **changes,
    }
    body = {name: value for name, value in body.items() if value is not None}
    SECRET_WATCH.secrets.add(ACME_TOKEN)
    if "downstreamApiToken" in body:
        SECRET_WATCH.secrets.add(body["downstreamApiToken"])
    return client.put(f"/api/tenants/{owner_tag}", key=key, json_body=body)


def run_forwarder(client: Client, aws: AwsResources) -> dict[str, Any]:
    """Feed every message waiting on the forward queue to the forwarder function, as SQS would,
    and delete those it took (the queue is FIFO: a conversation's next message waits for them)."""
    arn = "arn:aws:sqs:us-east-1:123456789012:ForwardQueue.fifo"
    received = aws.queue_messages("ForwardQueue")
    if not received:
        return {"batchItemFailures": []}  # Lambda never invokes with no records
    records = [received_record(message, arn, attributes={"ApproximateReceiveCount": "1"}) for message in received]
    answer: dict[str, Any] = client._api.functions.invoke("ForwarderFunction", {"Records": records})
    failed = {failure["itemIdentifier"] for failure in answer.get("batchItemFailures", [])}
    sqs = boto3.client("sqs", region_name="us-east-1")
    for message in received:
        if message["MessageId"] not in failed:
            sqs.delete_message(QueueUrl=aws.queues["ForwardQueue"], ReceiptHandle=message["ReceiptHandle"])
    return answer


def incoming(client: Client, aws: AwsResources, catalog: Catalog, text: str) -> dict[str, Any]:
    body = envelope("message", catalog.provider_instance_id, message_data(text))
    assert deliver(client, catalog.provider_id, body).status == 200
    return run_forwarder(client, aws)


# --- forwarding ----------------------------------------------------------------------------


def test_given_a_tenant_mapping_when_a_message_arrives_then_it_reaches_that_inbox_with_its_token(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    assert put_mapping(client, catalog.tenant.admin).status == 200

    result = incoming(client, aws, catalog, "quero um orçamento")

    assert result == {"batchItemFailures": []}
    paths = [(r.method, r.path) for r in fake.requests]
    assert paths == [
        ("GET", "/api/v1/accounts/7/contacts/search"),
        ("POST", "/api/v1/accounts/7/contacts"),
        ("GET", "/api/v1/accounts/7/contacts/1/conversations"),
        ("POST", "/api/v1/accounts/7/conversations"),
        ("POST", "/api/v1/accounts/7/conversations/2/messages"),
    ]
    assert {r.token for r in fake.requests} == {ACME_TOKEN}
    assert {r.origin for r in fake.requests} == {ACME_URL}
    assert fake.requests[1].body == {"inbox_id": 12, "name": "+5511988887777", "phone_number": "+5511988887777"}
    assert fake.requests[3].body == {"inbox_id": 12, "contact_id": 1}
    [message] = fake.messages()
    assert message.body is not None and message.body["content"] == "quero um orçamento"
    assert message.body["message_type"] == "incoming"


def test_given_a_known_contact_when_a_second_message_arrives_then_the_same_conversation_is_used(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    put_mapping(client, catalog.tenant.admin)
    incoming(client, aws, catalog, "one")

    incoming(client, aws, catalog, "two")

    assert [r.path for r in fake.messages()] == ["/api/v1/accounts/7/conversations/2/messages"] * 2
    assert len(fake.conversations) == 1


def test_given_a_mapping_change_when_the_very_next_message_arrives_then_it_goes_to_the_new_downstream(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    put_mapping(client, catalog.tenant.admin)
    incoming(client, aws, catalog, "before")

    changed = put_mapping(client, catalog.tenant.admin, downstreamBaseUrl=OTHER_URL, downstreamInboxId=13)
    incoming(client, aws, catalog, "after")

    assert changed.status == 200
    assert [r.origin for r in fake.messages()] == [ACME_URL, OTHER_URL]
    conversation = next(r for r in fake.requests if r.origin == OTHER_URL and r.path.endswith("/7/conversations"))
    assert conversation.body == {"inbox_id": 13, "contact_id": fake.contacts[(OTHER_URL, "+5511988887777")]}


def test_given_an_instance_with_its_own_inbox_when_a_message_arrives_then_it_reaches_that_inbox_of_the_account(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    put_mapping(client, catalog.tenant.admin)
    binding = {
        "providerId": catalog.provider_id,
        "providerInstanceId": catalog.provider_instance_id,
        "numberId": catalog.number_id,
    }
    own_inbox = client.put(
        f"/api/instances/{catalog.instance}", key=catalog.tenant.admin, json_body={**binding, "inboxId": 31}
    )
    assert own_inbox.status == 200, own_inbox.body

    incoming(client, aws, catalog, "para a caixa da instância")

    assert {(r.origin, r.token) for r in fake.requests} == {(ACME_URL, ACME_TOKEN)}
    assert fake.requests[1].body == {"inbox_id": 31, "name": "+5511988887777", "phone_number": "+5511988887777"}
    assert fake.requests[3].body == {"inbox_id": 31, "contact_id": 1}
    assert [r.path for r in fake.messages()] == ["/api/v1/accounts/7/conversations/2/messages"]


def test_given_no_mapping_when_a_message_arrives_then_the_global_fallback_receives_it(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOWNSTREAM_BASE_URL", "http://127.0.0.1:9200")
    monkeypatch.setenv("DOWNSTREAM_ACCOUNT_ID", "1")
    monkeypatch.setenv("DOWNSTREAM_INBOX_ID", "3")
    monkeypatch.setenv("DOWNSTREAM_API_TOKEN_PARAMETER", "/switchboard/test/downstream/global-token")
    bootstrap.reset()
    bootstrap.secrets().put("/switchboard/test/downstream/global-token", "global-cw-token-very-secret")
    SECRET_WATCH.secrets.add("global-cw-token-very-secret")
    put_mapping(client, catalog.tenant.admin)
    assert client.delete("/api/tenants/acme", key=catalog.tenant.admin).status == 204

    incoming(client, aws, catalog, "to the global inbox")

    [message] = fake.messages()
    assert (message.origin, message.path, message.token) == (
        "http://127.0.0.1:9200",
        "/api/v1/accounts/1/conversations/2/messages",
        "global-cw-token-very-secret",
    )
    assert client.get("/api/tenants/acme", key=catalog.tenant.admin).json()["downstream"] is None


def test_given_no_downstream_at_all_when_a_message_arrives_then_it_is_dropped_without_retry(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    assert incoming(client, aws, catalog, "nowhere") == {"batchItemFailures": []}
    assert fake.requests == []


def test_given_the_same_forward_delivered_twice_by_sqs_then_the_downstream_gets_one_message(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    put_mapping(client, catalog.tenant.admin)
    body = envelope("message", catalog.provider_instance_id, message_data("once"))
    deliver(client, catalog.provider_id, body)
    [job] = aws.queue_messages("ForwardQueue")
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = aws.queues["ForwardQueue"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=job["ReceiptHandle"], VisibilityTimeout=0)
    # The same job queued again after SQS's deduplication window: both reach the same batch.
    message = IncomingMessage.model_validate_json(job["Body"])
    sqs.send_message(
        QueueUrl=url, MessageBody=job["Body"], MessageGroupId=message_group(message), MessageDeduplicationId="later"
    )

    run_forwarder(client, aws)

    assert len(fake.messages()) == 1


def test_given_the_downstream_fails_for_one_message_when_forwarding_then_only_that_record_is_retried(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream, override: Callable[..., object]
) -> None:
    put_mapping(client, catalog.tenant.admin)
    healthy = fake.transport()

    def flaky(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("q") == "+5511911112222":
            return httpx.Response(503, json={"error": "down"})
        return healthy.handle_request(request)

    failing = ChatwootClient(local_mode=True, transport=httpx.MockTransport(flaky))
    override(downstream_client=failing)
    for sender in ("5511911112222", "5511933334444"):
        deliver(
            client, catalog.provider_id, envelope("message", catalog.provider_instance_id, message_data(sender=sender))
        )

    result = run_forwarder(client, aws)

    assert len(result["batchItemFailures"]) == 1
    assert [r.body["content"] for r in fake.messages() if r.body] == ["hello"]


# --- the mapping API -----------------------------------------------------------------------


def test_given_a_mapping_when_read_then_no_token_only_a_hint_and_that_it_is_set(
    client: Client, catalog: Catalog, platform_key: str, fake: FakeDownstream
) -> None:
    saved = put_mapping(client, catalog.tenant.admin)

    own = client.get("/api/tenants/acme", key=catalog.tenant.admin).json()
    listed = client.get("/api/tenants", key=platform_key).json()

    assert saved.json()["downstream"] == own["downstream"]
    assert own["downstream"]["downstreamApiTokenSet"] is True
    assert own["downstream"]["downstreamApiTokenHint"] == "…et-1"
    assert (own["downstream"]["downstreamAccountId"], own["downstream"]["downstreamInboxId"]) == (7, 12)
    assert [tenant["downstream"]["downstreamBaseUrl"] for tenant in listed] == [ACME_URL]
    for answer in (saved.body.decode(), json.dumps(own), json.dumps(listed)):
        assert ACME_TOKEN not in answer


def test_given_a_mapping_without_a_new_token_when_updated_then_the_token_is_kept(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    put_mapping(client, catalog.tenant.admin)

    kept = put_mapping(client, catalog.tenant.admin, downstreamApiToken=None, downstreamInboxId=99)
    incoming(client, aws, catalog, "hi")

    assert kept.status == 200 and kept.json()["downstream"]["downstreamInboxId"] == 99
    assert {r.token for r in fake.requests} == {ACME_TOKEN}


def test_given_no_mapping_yet_when_put_without_a_token_then_400(client: Client, catalog: Catalog) -> None:
    answer = put_mapping(client, catalog.tenant.admin, downstreamApiToken=None)

    assert (answer.status, answer.json()["error"]) == (400, "token_required")


UNSAFE_URLS = [
    "http://example.com",
    "https://169.254.169.254",
    "https://10.0.0.8",
    "https://192.168.1.10:8443",
    "https://metadata.google.internal",
    "https://[fd00::1]",
    "https://100.64.0.1",
    "http://user:pass@127.0.0.1:9000",
    "https://\u008b",
    "https://exa mple.com",
]


def test_given_an_unsafe_downstream_url_when_saved_then_400_and_nothing_saved(client: Client, catalog: Catalog) -> None:
    for url in UNSAFE_URLS:
        answer = put_mapping(client, catalog.tenant.admin, downstreamBaseUrl=url)
        assert answer.status in (400, 422), url

    assert client.get("/api/tenants/acme", key=catalog.tenant.admin).json()["downstream"] is None


def test_given_another_tenants_admin_when_managing_the_mapping_then_404(
    client: Client, catalog: Catalog, make_tenant: Any, platform_key: str
) -> None:
    globex = make_tenant("globex")

    assert put_mapping(client, globex.admin, owner_tag="acme").status == 404
    assert client.delete("/api/tenants/acme", key=globex.admin).status == 404
    assert put_mapping(client, platform_key, owner_tag="acme").status == 200
    assert put_mapping(client, platform_key, owner_tag="nobody").status == 404
    assert client.delete("/api/tenants/globex", key=globex.admin).status == 404  # no mapping to delete


def test_given_two_containers_when_one_changes_a_mapping_then_the_other_sees_it_on_its_next_resolution(
    aws: AwsResources, client: Client, catalog: Catalog
) -> None:
    def container() -> DownstreamResolver:
        table = bootstrap.current().session.resource("dynamodb").Table(aws.tables["MainTable"])
        secrets = SecretStore(bootstrap.current().session.client("ssm"), "/switchboard/test", 60)
        return DownstreamResolver(RoutingRepository(table), secrets, GlobalDownstream(), ttl=3600)

    first, second = container(), container()
    operator = platform()
    service = bootstrap.routing_service()
    service.put_mapping(operator, "acme", base_url=ACME_URL, account_id=7, inbox_id=12, api_token=ACME_TOKEN)
    SECRET_WATCH.secrets.add(ACME_TOKEN)
    target = first.target_for("acme")
    assert target is not None
    assert target.inbox_id == 12

    new_token = f"cw-token-{uuid.uuid4().hex}"
    SECRET_WATCH.secrets.add(new_token)
    service.put_mapping(operator, "acme", base_url=OTHER_URL, account_id=8, inbox_id=13, api_token=new_token)

    seen = first.target_for("acme")
    assert seen is not None and (seen.base_url, seen.inbox_id, seen.api_token) == (OTHER_URL, 13, new_token)
    assert second.target_for("acme") == seen
    service.delete_mapping(operator, "acme")
    assert first.target_for("acme") is None


def test_the_sample_forward_batch_for_sam_local_invoke_reaches_the_downstream(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    """events/webhook_forward_batch.json, pointed at this test's tenant."""
    event = sample_event("webhook_forward_batch.json")
    for record in event["Records"]:
        job = json.loads(record["body"])
        record["body"] = json.dumps({**job, "instance": catalog.instance, "owner_tag": "acme"})
    put_mapping(client, catalog.tenant.admin)

    answer = client._api.functions.invoke("ForwarderFunction", event)

    assert answer == {"batchItemFailures": []}
    assert [r.body["content"] for r in fake.messages() if r.body] == ["hello"]


def test_given_a_contact_whose_number_only_contains_the_senders_then_a_new_contact_is_created(
    client: Client, aws: AwsResources, catalog: Catalog, fake: FakeDownstream
) -> None:
    put_mapping(client, catalog.tenant.admin)
    fake.contacts[(ACME_URL, "+155119888877770")] = 900  # a fuzzy search hit, not the sender

    incoming(client, aws, catalog, "exact match only")

    assert fake.contacts[(ACME_URL, "+5511988887777")] != 900
    conversation = next(r for r in fake.requests if r.method == "POST" and r.path.endswith("/7/conversations"))
    assert conversation.body is not None and conversation.body["contact_id"] != 900

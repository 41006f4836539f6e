"""The message log through the gateway emulator and the template's functions, on moto: a tenant's
messages both ways, filtered, newest first, a page at a time, from its indexes alone (no Scan), and
no other tenant's; incoming messages with what became of them downstream."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devstack.apigw import HttpApi
from switchboard import bootstrap
from switchboard.core.errors import ProviderRejected
from switchboard.routing.chatwoot import ChatwootClient
from tools.support.api import SECRET_WATCH, Client
from tools.support.aws import AwsResources
from tools.support.downstream import FakeDownstream
from tools.support.fakes import FakeProvider
from tools.support.pool import NUMBERS, PoolWorld, build_world
from tools.support.provider_webhooks import build_catalog, deliver, envelope, message_data
from tools.support.sqs import drain_queue

RECIPIENTS = ("5511988880001", "5511988880002", "5511988880003")


@pytest.fixture
def world(client: Client, make_tenant: Any, provider: FakeProvider) -> PoolWorld:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key(default_number=NUMBERS[2])
    return world


def listing(world: PoolWorld, query: str = "", key: str | None = None) -> dict[str, Any]:
    answer = world.client.get(f"/api/messages{query}", key=key or world.tenant.admin)
    assert answer.status == 200, answer.body
    return dict(answer.json())


def send_three(world: PoolWorld, provider: FakeProvider, run_worker: Callable[[], list[Any]]) -> list[str]:
    """Three messages to three customers; the second refused by the provider."""
    ids = []
    for n, recipient in enumerate(RECIPIENTS):
        if n == 1:
            provider.failures[f"text {n}"] = [ProviderRejected("refused", provider_code="131026")]
        ids.append(world.send(recipient, f"text {n}"))
    run_worker()
    return ids


def test_the_log_lists_the_tenants_messages_newest_first_with_their_status(
    world: PoolWorld, provider: FakeProvider, run_worker: Callable[[], list[Any]], dynamo_calls: list[str]
) -> None:
    ids = send_three(world, provider, run_worker)
    dynamo_calls.clear()

    page = listing(world)

    assert [item["id"] for item in page["items"]] == ids[::-1]
    assert [item["status"] for item in page["items"]] == ["SENT", "FAILED", "SENT"]
    first = page["items"][-1]
    assert (first["direction"], first["contact"], first["number"], first["preview"], first["apiKeyId"]) == (
        "out",
        RECIPIENTS[0],
        NUMBERS[2],
        "text 0",
        world.send_key_id,
    )
    assert page["cursor"] is None
    assert "scan" not in dynamo_calls
    assert dynamo_calls.count("query") == 1


def test_filters_narrow_the_log(world: PoolWorld, provider: FakeProvider, run_worker: Callable[[], list[Any]]) -> None:
    ids = send_three(world, provider, run_worker)

    assert [item["id"] for item in listing(world, "?status=FAILED")["items"]] == [ids[1]]
    assert [item["id"] for item in listing(world, "?status=sent,delivered")["items"]] == [ids[2], ids[0]]
    assert [item["id"] for item in listing(world, f"?to=%2B{RECIPIENTS[2]}")["items"]] == [ids[2]]
    assert [item["id"] for item in listing(world, f"?apiKey={world.send_key_id}&direction=out")["items"]] == ids[::-1]
    assert listing(world, "?direction=in")["items"] == []
    assert listing(world, "?apiKey=key_other")["items"] == []
    assert listing(world, "?type=image")["items"] == []
    assert listing(world, "?since=2999-01-01T00:00:00Z")["items"] == []
    assert [item["id"] for item in listing(world, "?until=2999-01-01T00:00:00Z")["items"]] == ids[::-1]
    assert [item["id"] for item in listing(world, f"?number={NUMBERS[2]}")["items"]] == [ids[2], ids[0]]


def test_the_cursor_walks_every_page_once(
    world: PoolWorld, provider: FakeProvider, run_worker: Callable[[], list[Any]]
) -> None:
    ids = [world.send(RECIPIENTS[0], f"text {n}") for n in range(5)]

    seen: list[str] = []
    page = listing(world, "?limit=2")
    seen += [item["id"] for item in page["items"]]
    while page["cursor"]:
        page = listing(world, f"?limit=2&cursor={page['cursor']}")
        seen += [item["id"] for item in page["items"]]

    assert seen == ids[::-1]


def test_another_tenant_sees_nothing_and_cannot_use_a_cursor_it_was_not_given(
    world: PoolWorld, provider: FakeProvider, run_worker: Callable[[], list[Any]], make_tenant: Any
) -> None:
    send_three(world, provider, run_worker)
    cursor = listing(world, "?limit=1")["cursor"]
    other = make_tenant("globex")

    assert listing(world, key=other.admin)["items"] == []
    answer = world.client.get(f"/api/messages?cursor={cursor}", key=other.admin)
    assert answer.status == 400, answer.body
    assert answer.json()["error"] == "invalid_cursor"
    contact = world.client.get(f"/api/contacts/{RECIPIENTS[0]}/messages", key=other.admin)
    assert contact.json()["items"] == []


@pytest.mark.parametrize(
    "query",
    ["?cursor=not-a-cursor", "?status=LOST", "?limit=0", "?limit=101", "?to=12", "?direction=sideways"],
)
def test_bad_filters_are_a_4xx(world: PoolWorld, query: str) -> None:
    answer = world.client.get(f"/api/messages{query}", key=world.tenant.admin)

    assert answer.status in (400, 422), answer.body
    assert "error" in answer.json()


def test_the_log_is_for_admins(world: PoolWorld) -> None:
    assert world.client.get("/api/messages", key=world.send_key).status == 403


# --- incoming messages ----------------------------------------------------------------------------


@pytest.fixture
def catalog(client: Client, make_tenant: Any, aws: AwsResources) -> Any:
    return build_catalog(client, make_tenant("acme"))


@pytest.fixture
def fake(aws: AwsResources) -> Iterator[FakeDownstream]:
    """Every downstream is this fake, behind the real Chatwoot client."""
    downstream = FakeDownstream()
    with bootstrap.overridden(downstream_client=ChatwootClient(local_mode=True, transport=downstream.transport())):
        yield downstream


def forward_all(aws: AwsResources, http_api: HttpApi) -> None:
    drain_queue(aws, http_api.functions, "ForwardQueue", "ForwarderFunction")


def test_an_incoming_message_with_no_downstream_is_in_the_log_and_says_so(
    client: Client, catalog: Any, aws: AwsResources, http_api: HttpApi
) -> None:
    data = message_data("quero um orçamento", sender="5511988887777")
    assert deliver(client, catalog.provider_id, envelope("message", catalog.provider_instance_id, data)).status == 200

    received = client.get("/api/messages?direction=in", key=catalog.tenant.admin).json()["items"]
    assert [(item["status"], item["outcome"], item["contact"]) for item in received] == [
        ("RECEIVED", "received", "5511988887777")
    ]

    forward_all(aws, http_api)

    (item,) = client.get("/api/messages?from=%2B5511988887777", key=catalog.tenant.admin).json()["items"]
    assert (item["direction"], item["status"], item["outcome"], item["preview"], item["instance"]) == (
        "in",
        "NO_DOWNSTREAM",
        "no_downstream",
        "quero um orçamento",
        catalog.instance,
    )
    dropped = client.get("/api/messages?status=NO_DOWNSTREAM", key=catalog.tenant.admin).json()["items"]
    assert [entry["id"] for entry in dropped] == [item["id"]]


def test_a_forward_that_reaches_the_downstream_is_forwarded(
    client: Client, catalog: Any, aws: AwsResources, http_api: HttpApi, fake: Any
) -> None:
    SECRET_WATCH.secrets.add("cw-token-acme-very-secret-1")
    put = client.put(
        "/api/tenants/acme",
        key=catalog.tenant.admin,
        json_body={
            "downstreamBaseUrl": "http://127.0.0.1:9101",
            "downstreamApiToken": "cw-token-acme-very-secret-1",
            "downstreamAccountId": 7,
            "downstreamInboxId": 12,
        },
    )
    assert put.status in (200, 201), put.body
    deliver(client, catalog.provider_id, envelope("message", catalog.provider_instance_id, message_data("oi")))

    forward_all(aws, http_api)

    (item,) = client.get("/api/messages?direction=in", key=catalog.tenant.admin).json()["items"]
    assert (item["status"], item["outcome"]) == ("FORWARDED", "forwarded")

    # A photo whose bytes are an executable: refused at the ingest, a placeholder for the agent.
    executable = {"mimeType": "image/jpeg", "base64": base64.b64encode(b"MZ\x90\x00" + bytes(64)).decode()}
    photo = {key: value for key, value in message_data().items() if key != "text"}
    photo |= {"type": "image", "text": "meu RG", "media": executable}
    deliver(client, catalog.provider_id, envelope("message", catalog.provider_instance_id, photo))
    forward_all(aws, http_api)

    placeholder, _ = client.get("/api/messages?direction=in", key=catalog.tenant.admin).json()["items"]
    assert (placeholder["status"], placeholder["outcome"]) == ("FORWARDED", "forwarded: placeholder (bad_type)")
    [posted] = [m for ms in fake.posted.values() for m in ms if m["source_id"] == photo["id"]]
    assert posted["content"] == "[imagem indisponível: o tipo do arquivo não é permitido]\nmeu RG"


def test_a_contacts_conversation_holds_both_directions_in_order(
    client: Client, catalog: Any, aws: AwsResources, provider: FakeProvider, http_api: HttpApi
) -> None:
    customer = "5511988887777"

    def incoming(text: str, sender: str = customer) -> None:
        body = envelope("message", catalog.provider_instance_id, message_data(text, sender))
        assert deliver(client, catalog.provider_id, body).status == 200

    incoming("oi")
    key = client.post(
        "/api/api-keys",
        key=catalog.tenant.admin,
        json_body={"name": "app", "scopes": ["send"], "defaultNumber": "5511999990001"},
    )
    assert key.status == 201, key.body
    reply = {"to": customer, "text": "olá, como posso ajudar?"}
    sent = client.post("/api/messages", key=key.json()["key"], json_body=reply)
    assert sent.status == 202, sent.body
    incoming("obrigado")
    incoming("outro", "5511900000000")

    answer = client.get(f"/api/contacts/%2B{customer}/messages", key=catalog.tenant.admin)

    assert answer.status == 200, answer.body
    items = answer.json()["items"]
    assert [(item["direction"], item["text"]) for item in items] == [
        ("in", "oi"),
        ("out", "olá, como posso ajudar?"),
        ("in", "obrigado"),
    ]

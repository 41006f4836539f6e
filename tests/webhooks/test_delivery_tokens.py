"""An Evolution JWT authenticates only the bodies Evolution sent under it.

Evolution's token covers no part of the body: `{iat, exp: iat + 600, app, action}` signed with the
webhook's `jwt_key`, made once per event (its retries send it again) with `iat` in whole seconds
and no nonce, so the events it emits within one second all carry one token. A token seen once
could otherwise bring any body for its ten minutes. The ingest remembers each token's bodies in
the transaction that stores the event; a new body is accepted only within a minute of the
token's first sighting. The deliveries go through the gateway and the real handler, except where
the clock must move: there the real ingest (the composition root's repositories, effects and writes) runs
with a clock handed in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from switchboard import bootstrap
from switchboard.core.errors import Unauthenticated
from switchboard.core.store import META
from switchboard.providers.base import WebhookRequest
from switchboard.webhooks.dynamo import EventStore
from switchboard.webhooks.service import IngestService
from tools.support.api import Client, TenantKeys
from tools.support.aws import REGION, AwsResources
from tools.support.provider_webhooks import forwarded, stored

CONTRACT = Path(__file__).resolve().parents[1] / "contracts" / "evolution"
SECRET = "evolution-jwt-key-for-token-tests"
INSTANCE = "switchboard-test"  # the instance every Evolution fixture names


def jwt(secret: str, iat: int) -> str:
    """The token Evolution signs (jsonwebtoken HS256), encoded independently here."""

    def segment(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).rstrip(b"=").decode()

    signing_input = (
        segment({"alg": "HS256", "typ": "JWT"})
        + "."
        + segment({"iat": iat, "exp": iat + 600, "app": "evolution", "action": "webhook"})
    )
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()


def upsert(message_id: str, text: str) -> bytes:
    """The contract's incoming text, with its own id and text, from a server that hides tokens."""
    payload = json.loads((CONTRACT / "webhook_messages_upsert_conversation.json").read_bytes())
    payload["data"]["key"]["id"] = message_id
    payload["data"]["message"]["conversation"] = text
    payload["apikey"] = None
    return json.dumps(payload).encode()


def group_message(message_id: str) -> bytes:
    payload = json.loads((CONTRACT / "webhook_messages_upsert_group.json").read_bytes())
    payload["data"]["key"]["id"] = message_id
    payload["apikey"] = None
    return json.dumps(payload).encode()


def headers(token: str) -> dict[str, str]:
    return {"content-type": "application/json", "authorization": f"Bearer {token}"}


@pytest.fixture
def provider_id(client: Client, make_tenant: Callable[..., TenantKeys]) -> str:
    """An Evolution provider saved with the scheme `evolution-jwt`."""
    tenant = make_tenant("acme")
    number = client.post("/api/numbers", key=tenant.admin, json_body={"number": "5511999990000", "displayName": "M"})
    body = {"name": "evo", "kind": "evolution", "baseUrl": "http://127.0.0.1:8080", "webhookSecret": SECRET}
    provider = client.post("/api/providers", key=tenant.admin, json_body=body | {"webhookScheme": "evolution-jwt"})
    instance = {"providerId": provider.json()["id"], "providerInstanceId": INSTANCE, "numberId": number.json()["id"]}
    put = client.put("/api/instances/acme-evo", key=tenant.admin, json_body=instance | {"token": "instance-token"})
    assert (number.status, provider.status, put.status) == (201, 201, 201), put.body
    assert provider.json()["webhookScheme"] == "evolution-jwt"
    identifier: str = provider.json()["id"]
    return identifier


def deliver(client: Client, provider: str, body: bytes, token: str) -> Any:
    return client.post(f"/webhooks/{provider}", body=body, headers=headers(token))


def token_items(aws: AwsResources) -> list[dict[str, Any]]:
    return stored(aws, "WHTOKEN#")


def ingest_at(moment: datetime) -> IngestService:
    """The real ingest, with the clock at `moment`."""
    return IngestService(
        bootstrap.catalog_repository(),
        bootstrap.secrets(),
        EventStore(bootstrap.table()),
        bootstrap.event_handlers(),
        clock=lambda: moment,
        writes=bootstrap.accept_writes(),
    )


def request(body: bytes, token: str) -> WebhookRequest:
    return WebhookRequest(headers=headers(token), body=body)


# --- through the handler ---------------------------------------------------------------------


def test_given_one_token_when_the_same_body_comes_again_then_it_is_a_duplicate_and_the_token_remembered(
    client: Client, aws: AwsResources, provider_id: str
) -> None:
    iat = int(time.time())
    token, body = jwt(SECRET, iat), upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E01", "Quero remarcar")

    first = deliver(client, provider_id, body, token)
    again = deliver(client, provider_id, body, token)

    assert (first.status, first.json()["outcome"]) == (200, "applied")
    assert (again.status, again.json()["outcome"]) == (200, "duplicate")
    assert len(forwarded(aws)) == 1
    [item] = token_items(aws)
    assert item["pk"] == f"WHTOKEN#{provider_id}#{hashlib.sha256(token.encode()).hexdigest()}"
    assert item["bodies"] == {hashlib.sha256(body).hexdigest()[:32]}
    assert int(item["expiresAt"]) == iat + 600 + 30  # the token's expiry and its leeway: no longer
    assert token not in json.dumps(item, default=str)


def test_given_two_events_evolution_emitted_within_one_second_then_both_are_applied(
    client: Client, aws: AwsResources, provider_id: str
) -> None:
    """What Evolution does under load: one `iat`, one token, several bodies."""
    token = jwt(SECRET, int(time.time()))
    bodies = [upsert(f"AC5D2E9F7B31C0480E5A6F1D9B2C7E1{n}", f"mensagem {n}") for n in range(3)]

    answers = [deliver(client, provider_id, body, token) for body in bodies]

    assert [(answer.status, answer.json()["outcome"]) for answer in answers] == [(200, "applied")] * 3
    assert sorted(job["text"] for job in forwarded(aws)) == ["mensagem 0", "mensagem 1", "mensagem 2"]
    [item] = token_items(aws)
    assert item["bodies"] == {hashlib.sha256(body).hexdigest()[:32] for body in bodies}


def test_given_an_expired_token_when_it_brings_a_body_then_401_and_nothing_is_remembered(
    client: Client, aws: AwsResources, provider_id: str
) -> None:
    token = jwt(SECRET, int(time.time()) - 631)

    answer = deliver(client, provider_id, upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E02", "oi"), token)

    assert answer.status == 401
    assert token_items(aws) == [] and stored(aws, "WH") == []


# --- the clock moves -------------------------------------------------------------------------


def test_given_a_token_seen_over_a_minute_ago_when_it_brings_a_new_body_then_401_and_nothing_is_stored(
    client: Client, aws: AwsResources, provider_id: str
) -> None:
    start = datetime.now(UTC).replace(microsecond=0)
    token = jwt(SECRET, int(start.timestamp()))
    genuine = upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E03", "Oi, confirmo amanhã")
    forged = upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E04", "Cancelem tudo e paguem a conta 666")
    assert ingest_at(start).receive(provider_id, request(genuine, token)).outcome == "applied"

    later = ingest_at(start + timedelta(seconds=61))
    with pytest.raises(Unauthenticated) as refused:
        later.receive(provider_id, request(forged, token))
    retry = later.receive(provider_id, request(genuine, token))  # Evolution's own retry, same token

    assert refused.value.code == "invalid_signature"
    assert retry.outcome == "duplicate"
    assert [job["text"] for job in forwarded(aws)] == ["Oi, confirmo amanhã"]
    assert [record["eventId"] for record in stored(aws, "WHEVENT#")] == ["AC5D2E9F7B31C0480E5A6F1D9B2C7E03"]
    [item] = token_items(aws)
    assert item["bodies"] == {hashlib.sha256(genuine).hexdigest()[:32]}


def test_given_a_token_seen_a_minute_ago_when_a_new_body_comes_at_the_last_second_then_it_is_applied(
    client: Client, aws: AwsResources, provider_id: str
) -> None:
    """A body whose first attempts did not reach us, retried by Evolution within the minute."""
    start = datetime.now(UTC).replace(microsecond=0)
    token = jwt(SECRET, int(start.timestamp()))
    ingest_at(start).receive(provider_id, request(upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E05", "um"), token))

    late = ingest_at(start + timedelta(seconds=60)).receive(
        provider_id, request(upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E06", "dois"), token)
    )

    assert late.outcome == "applied"
    assert sorted(job["text"] for job in forwarded(aws)) == ["dois", "um"]


def test_given_a_replayed_token_when_its_new_body_is_an_ignored_event_then_401_and_nothing_is_recorded(
    client: Client, aws: AwsResources, provider_id: str
) -> None:
    start = datetime.now(UTC).replace(microsecond=0)
    token = jwt(SECRET, int(start.timestamp()))
    ingest_at(start).receive(provider_id, request(upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E07", "oi"), token))

    with pytest.raises(Unauthenticated):
        ingest_at(start + timedelta(seconds=90)).receive(provider_id, request(group_message("GROUP0000001"), token))

    assert [record["eventId"] for record in stored(aws, "WHEVENT#")] == ["AC5D2E9F7B31C0480E5A6F1D9B2C7E07"]


def test_given_an_evolution_provider_saved_before_schemes_when_a_jwt_delivery_comes_then_jwt_is_stored_for_good(
    client: Client, aws: AwsResources, provider_id: str
) -> None:
    """Its body carries the instance token too: the JWT, tried first, is what gets stored, and the
    body's apikey alone authenticates nothing from then on."""
    main = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    main.update_item(Key={"pk": f"PROVIDER#{provider_id}", "sk": META}, UpdateExpression="REMOVE webhook_scheme")
    bootstrap.reset()
    body = json.loads(upsert("AC5D2E9F7B31C0480E5A6F1D9B2C7E09", "oi"))
    body["apikey"] = "instance-token"
    with_apikey = json.dumps(body).encode()

    first = deliver(client, provider_id, with_apikey, jwt(SECRET, int(time.time())))
    body["data"]["key"]["id"] = "AC5D2E9F7B31C0480E5A6F1D9B2C7E10"
    apikey_only = client.post(
        f"/webhooks/{provider_id}", body=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )

    assert (first.status, first.json()["outcome"]) == (200, "applied")
    [item] = [item for item in stored(aws, f"PROVIDER#{provider_id}") if item["sk"] == META]
    assert item["webhook_scheme"] == "evolution-jwt"
    assert apikey_only.status == 401

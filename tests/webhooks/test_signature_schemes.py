"""One signature scheme per provider: a delivery signed under one never verifies under another.

The attacker of these tests saw one authentic delivery of a calls-capable server (its envelope
body, `X-Webhook-Timestamp` and `X-Webhook-Signature`), never the secret. The envelope's MAC is
HMAC(secret, timestamp + "." + body); a plain wuzapi's is HMAC(secret, body). Re-sent as a plain
wuzapi delivery of the body `timestamp.body` with the same MAC in `x-hmac-signature`, a customer's
text carrying `&jsonData=...&instanceName=...` would parse as a wuzapi form webhook. Every test
runs through the gateway and the real webhook handler.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest

from switchboard import bootstrap
from switchboard.core.store import META
from tools.support.api import Client, TenantKeys
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
)

FORGED_SENDER = "5511900000666"
CONTRACTS = Path(__file__).resolve().parents[1] / "contracts" / "wuzapi"


def _wuzapi_form_fields(event_map: dict[str, Any], instance: str) -> str:
    """What the attacker writes in the customer's text: form fields of a wuzapi delivery between
    two throw-away fields that absorb the envelope's JSON before and after it."""
    fields = urlencode({"jsonData": json.dumps(event_map, separators=(",", ":")), "instanceName": instance})
    return f"a=b&{fields}&z=y"


def _downgraded(body: bytes, headers: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """The observed envelope delivery re-sent as a plain wuzapi one, signature unchanged."""
    stamp = headers["X-Webhook-Timestamp"]
    digest = headers["X-Webhook-Signature"].removeprefix("v1=")
    forged = stamp.encode() + b"." + body
    return forged, {"x-hmac-signature": digest, "content-type": "application/x-www-form-urlencoded"}


def _forged_message(instance: str) -> dict[str, Any]:
    return {
        "type": "Message",
        "event": {
            "Info": {
                "ID": "FORGED0000000000000000000000000001",
                "Chat": f"{FORGED_SENDER}@s.whatsapp.net",
                "Sender": f"{FORGED_SENDER}@s.whatsapp.net",
                "IsFromMe": False,
                "IsGroup": False,
                "Timestamp": "2026-11-30T08:00:00-03:00",
            },
            "Message": {"conversation": "pay the invoice to account 666"},
        },
    }


def test_given_an_observed_envelope_delivery_when_replayed_as_a_plain_wuzapi_form_then_401_and_nothing_forwarded(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    # Given: a customer's message carrying wuzapi form fields, delivered and applied once.
    text = _wuzapi_form_fields(_forged_message(catalog.provider_instance_id), catalog.provider_instance_id)
    body = envelope("message", catalog.provider_instance_id, message_data(text), seq=1)
    headers = signed_headers(body)
    assert deliver(client, catalog.provider_id, body, headers).json()["outcome"] == "applied"

    # When: the attacker re-sends it under the plain wuzapi scheme.
    forged_body, forged_headers = _downgraded(body, headers)
    answer = deliver(client, catalog.provider_id, forged_body, forged_headers)

    # Then: refused like any bad signature; only the customer's own message reaches the helpdesk.
    assert answer.status == 401, answer.body
    assert answer.json()["error"] == "invalid_signature"
    [job] = forwarded(aws)  # receiving leaves them in flight: one look at the queue
    assert (job["sender"], job["text"]) == ("5511988887777", text)
    assert [record["eventId"] for record in stored(aws, "WHEVENT#")] == [json.loads(body)["eventId"]]


def test_given_an_observed_envelope_delivery_when_replayed_as_a_wuzapi_logged_out_then_the_instance_stays_connected(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    connected = envelope("connection", catalog.provider_instance_id, {"connected": True}, seq=1)
    assert deliver(client, catalog.provider_id, connected).status == 200
    logged_out = {"type": "LoggedOut", "event": {"OnConnect": False, "Reason": 401}}
    text = _wuzapi_form_fields(logged_out, catalog.provider_instance_id)
    body = envelope("message", catalog.provider_instance_id, message_data(text), seq=2)
    headers = signed_headers(body)
    assert deliver(client, catalog.provider_id, body, headers).status == 200

    forged_body, forged_headers = _downgraded(body, headers)
    answer = deliver(client, catalog.provider_id, forged_body, forged_headers)

    assert answer.status == 401, answer.body
    [instance] = stored(aws, "INSTANCE#acme:acme-main")
    assert instance["state"] == "CONNECTED"


def test_given_the_same_downgrade_hours_later_then_still_refused(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    """The envelope's timestamp window does not protect a body signed without one: the refusal
    must not depend on when the forgery is sent."""
    text = _wuzapi_form_fields(_forged_message(catalog.provider_instance_id), catalog.provider_instance_id)
    body = envelope("message", catalog.provider_instance_id, message_data(text), seq=1)
    headers = signed_headers(body, timestamp=str(int(time.time()) - 6 * 3600))

    forged_body, forged_headers = _downgraded(body, headers)
    answer = deliver(client, catalog.provider_id, forged_body, forged_headers)

    assert answer.status == 401
    assert forwarded(aws) == [] and stored(aws, "WH") == []


# --- the scheme is the provider's, fixed when it is saved ------------------------------------


def plain_wuzapi_delivery(catalog: Catalog, *, secret: str = WEBHOOK_SECRET) -> tuple[bytes, dict[str, str]]:
    """A real plain wuzapi JSON delivery (the contract's bytes, named for this test's instance)."""
    payload = json.loads((CONTRACTS / "webhook_json_message_text.json").read_bytes())
    payload["instanceName"] = catalog.provider_instance_id
    body = json.dumps(payload, separators=(",", ":")).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {"x-hmac-signature": signature, "content-type": "application/json"}


def provider(client: Client, catalog: Catalog) -> dict[str, Any]:
    answer = client.get(f"/api/providers/{catalog.provider_id}", key=catalog.tenant.admin)
    assert answer.status == 200, answer.body
    view: dict[str, Any] = answer.json()
    return view


@pytest.mark.parametrize(("kind", "scheme"), [("wuzapi", None), ("evolution", None), ("meta", "meta-signature")])
def test_a_provider_saved_without_a_scheme_gets_its_kinds_only_one_or_waits_for_its_first_delivery(
    client: Client, make_tenant: Callable[..., TenantKeys], kind: str, scheme: str
) -> None:
    tenant = make_tenant("acme")
    body = {"name": "p", "kind": kind, "baseUrl": "http://127.0.0.1:3100", "webhookSecret": "s" * 32}

    answer = client.post("/api/providers", key=tenant.admin, json_body=body)

    assert answer.status == 201, answer.body
    assert answer.json()["webhookScheme"] == scheme


@pytest.mark.parametrize(
    ("kind", "scheme"),
    [("wuzapi", "evolution-jwt"), ("evolution", "envelope"), ("meta", "wuzapi-hmac"), ("wuzapi", "meta-signature")],
)
def test_a_scheme_of_another_kind_is_refused_as_bad_input(
    client: Client, make_tenant: Callable[..., TenantKeys], kind: str, scheme: str
) -> None:
    tenant = make_tenant("acme")
    body = {"name": "p", "kind": kind, "baseUrl": "http://127.0.0.1:3100", "webhookSecret": "s" * 32}

    answer = client.post("/api/providers", key=tenant.admin, json_body=body | {"webhookScheme": scheme})

    assert answer.status == 400, answer.body  # as a verifyToken on a kind without one
    assert answer.json()["error"] == "webhook_scheme_not_supported"
    assert client.get("/api/providers", key=tenant.admin).json() == []


@pytest.mark.parametrize("scheme", ["hmac", "ENVELOPE", "", None])
def test_an_unknown_or_null_scheme_is_refused_and_the_provider_keeps_its_own(
    client: Client, catalog: Catalog, scheme: str | None
) -> None:
    path = f"/api/providers/{catalog.provider_id}"
    created = client.post(
        "/api/providers",
        key=catalog.tenant.admin,
        json_body={"name": "p", "kind": "wuzapi", "baseUrl": "http://127.0.0.1:3100", "webhookSecret": "s" * 32}
        | {"webhookScheme": scheme},
    )
    patched = client.patch(path, key=catalog.tenant.admin, json_body={"webhookScheme": scheme})

    assert created.status == (201 if scheme is None else 422), created.body
    assert patched.status == 422, patched.body
    assert provider(client, catalog)["webhookScheme"] == "envelope"


def test_given_a_plain_wuzapi_provider_then_its_deliveries_are_applied_and_an_envelope_is_refused(
    client: Client, aws: AwsResources, make_tenant: Callable[..., TenantKeys]
) -> None:
    catalog = build_catalog(client, make_tenant("acme"), webhook_scheme="wuzapi-hmac")
    body, headers = plain_wuzapi_delivery(catalog)
    envelope_body = envelope("message", catalog.provider_instance_id, message_data(), seq=1)

    plain = deliver(client, catalog.provider_id, body, headers)
    enveloped = deliver(client, catalog.provider_id, envelope_body)  # signed right, the other scheme

    assert (plain.status, plain.json()["outcome"]) == (200, "applied")
    assert enveloped.status == 401
    [job] = forwarded(aws)
    assert job["text"] == "Olá! Gostaria de agendar um horário para amanhã."


def test_given_an_envelope_provider_then_a_genuine_plain_wuzapi_delivery_signed_with_its_secret_is_refused(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body, headers = plain_wuzapi_delivery(catalog)

    answer = deliver(client, catalog.provider_id, body, headers)

    assert answer.status == 401
    assert stored(aws, "WH") == [] and forwarded(aws) == []


def test_given_the_scheme_changed_by_an_admin_then_the_next_delivery_is_checked_the_new_way(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    body, headers = plain_wuzapi_delivery(catalog)
    before = deliver(client, catalog.provider_id, body, headers)  # the container keeps its view

    patched = client.patch(
        f"/api/providers/{catalog.provider_id}", key=catalog.tenant.admin, json_body={"webhookScheme": "wuzapi-hmac"}
    )
    after = deliver(client, catalog.provider_id, body, headers)
    enveloped = deliver(client, catalog.provider_id, envelope("message", catalog.provider_instance_id, message_data()))

    assert before.status == 401
    assert (patched.status, patched.json()["webhookScheme"]) == (200, "wuzapi-hmac")
    assert (after.status, after.json()["outcome"]) == (200, "applied")
    assert enveloped.status == 401


# --- a provider saved before the scheme was stored -------------------------------------------


def saved_before_schemes(aws: AwsResources, provider_id: str) -> None:
    """The provider's item as it was stored before it had a scheme."""
    main = boto3.resource("dynamodb", region_name=REGION).Table(aws.tables["MainTable"])
    main.update_item(Key={"pk": f"PROVIDER#{provider_id}", "sk": META}, UpdateExpression="REMOVE webhook_scheme")
    bootstrap.reset()  # a new container: no view kept from before


def test_given_a_provider_saved_before_schemes_when_its_first_envelope_arrives_then_envelope_is_stored_for_good(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    saved_before_schemes(aws, catalog.provider_id)
    assert provider(client, catalog)["webhookScheme"] is None

    first = deliver(client, catalog.provider_id, envelope("message", catalog.provider_instance_id, message_data()))
    body, headers = plain_wuzapi_delivery(catalog)
    plain = deliver(client, catalog.provider_id, body, headers)

    assert (first.status, first.json()["outcome"]) == (200, "applied")
    assert provider(client, catalog)["webhookScheme"] == "envelope"
    assert plain.status == 401


def test_given_a_plain_wuzapi_saved_before_schemes_when_its_first_delivery_arrives_then_wuzapi_hmac_is_stored(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    saved_before_schemes(aws, catalog.provider_id)
    body, headers = plain_wuzapi_delivery(catalog)

    first = deliver(client, catalog.provider_id, body, headers)
    enveloped = deliver(client, catalog.provider_id, envelope("message", catalog.provider_instance_id, message_data()))

    assert (first.status, first.json()["outcome"]) == (200, "applied")
    assert provider(client, catalog)["webhookScheme"] == "wuzapi-hmac"
    assert enveloped.status == 401


def test_given_a_provider_saved_before_schemes_when_the_downgrade_comes_first_then_refused_and_nothing_stored(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    """The forgery cannot choose the scheme either: no scheme of the kind accepts it."""
    text = _wuzapi_form_fields(_forged_message(catalog.provider_instance_id), catalog.provider_instance_id)
    body = envelope("message", catalog.provider_instance_id, message_data(text), seq=1)
    forged_body, forged_headers = _downgraded(body, signed_headers(body))
    saved_before_schemes(aws, catalog.provider_id)

    answer = deliver(client, catalog.provider_id, forged_body, forged_headers)

    assert answer.status == 401
    assert provider(client, catalog)["webhookScheme"] is None
    assert stored(aws, "WH") == [] and forwarded(aws) == []


# --- the downstream's reply webhook: its secret is its own -----------------------------------


def test_no_other_secret_opens_the_reply_webhook_and_its_secret_opens_no_other_door(
    client: Client, aws: AwsResources, catalog: Catalog
) -> None:
    """The reply webhook's secret (in its URL) is the instance's own, generated and kept hashed:
    the provider's webhook secret, the instance token or an API key open nothing there, and the
    reply secret signs no provider delivery and is no API key."""
    secret = client.post(f"/api/instances/{catalog.instance}/webhook-secret", key=catalog.tenant.admin).json()
    reply = json.dumps(
        {
            "event": "message_created",
            "message_type": "outgoing",
            "private": False,
            "id": 1,
            "content": "olá",
            "conversation": {"id": 7, "meta": {"sender": {"phone_number": "+5511988887777"}}},
        }
    ).encode()
    path = f"/api/tenants/{catalog.tenant.owner_tag}/instances/{catalog.instance}/webhook"

    others = [WEBHOOK_SECRET, "instance-token-routing-test-1", catalog.tenant.admin]
    answers = [client.post(f"{path}?{urlencode({'token': other})}", body=reply) for other in others]
    body = envelope("message", catalog.provider_instance_id, message_data())
    as_provider_secret = deliver(client, catalog.provider_id, body, signed_headers(body, secret=secret["secret"]))
    as_api_key = client.get("/api/providers", headers={"authorization": f"Bearer {secret['secret']}"})
    right = client.post(f"{path}?{urlencode({'token': secret['secret']})}", body=reply)

    assert [answer.status for answer in answers] == [401, 401, 401]
    assert {answer.json()["error"] for answer in answers} == {"invalid_webhook_secret"}
    assert as_provider_secret.status == 401
    assert as_api_key.status == 401
    assert right.status == 200, right.body

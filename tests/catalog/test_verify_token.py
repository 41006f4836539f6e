"""A Meta provider's write-only verify token through the catalog API and the subscription check."""

from __future__ import annotations

from typing import Any

from tools.support.api import SECRET_WATCH, Client, TenantKeys

VERIFY_TOKEN = "meta-verify-token-0001"
ROTATED_TOKEN = "meta-verify-token-0002"
APP_SECRET = "meta-app-secret-for-tests"


def meta_provider(client: Client, tenant: TenantKeys, **extra: Any) -> Any:
    body = {"name": "cloud", "kind": "meta", "baseUrl": "http://127.0.0.1:8081", "webhookSecret": APP_SECRET}
    return client.post("/api/providers", key=tenant.admin, json_body={**body, **extra})


def check(client: Client, provider_id: str, token: str, challenge: str = "1158201444") -> Any:
    query = f"hub.mode=subscribe&hub.challenge={challenge}&hub.verify_token={token}"
    return client.get(f"/webhooks/{provider_id}?{query}")


def test_a_meta_provider_keeps_only_a_hint_of_its_verify_token(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    SECRET_WATCH.secrets.update({VERIFY_TOKEN, ROTATED_TOKEN})  # never in a response or a log line

    created = meta_provider(client, tenant, verifyToken=VERIFY_TOKEN)

    assert created.status == 201, created.body
    view = created.json()
    assert VERIFY_TOKEN not in created.body.decode()
    assert "verifyToken" not in view
    assert view["verifyTokenHint"] == "…0001"
    fetched = client.get(f"/api/providers/{view['id']}", key=tenant.admin)
    assert fetched.json()["verifyTokenHint"] == "…0001"
    assert [provider["verifyTokenHint"] for provider in client.get("/api/providers", key=tenant.admin).json()] == [
        "…0001"
    ]


def test_the_stored_token_answers_the_subscription_check_and_a_rotation_replaces_it(
    client: Client, make_tenant: Any
) -> None:
    tenant = make_tenant("acme")
    SECRET_WATCH.secrets.update({VERIFY_TOKEN, ROTATED_TOKEN})
    provider_id = meta_provider(client, tenant, verifyToken=VERIFY_TOKEN).json()["id"]

    answer = check(client, provider_id, VERIFY_TOKEN)
    assert (answer.status, answer.body) == (200, b"1158201444")
    assert check(client, provider_id, "not-the-token").status == 403

    patched = client.patch(f"/api/providers/{provider_id}", key=tenant.admin, json_body={"verifyToken": ROTATED_TOKEN})

    assert patched.status == 200, patched.body
    assert patched.json()["verifyTokenHint"] == "…0002"
    assert ROTATED_TOKEN not in patched.body.decode()
    assert check(client, provider_id, ROTATED_TOKEN).status == 200
    assert check(client, provider_id, VERIFY_TOKEN).status == 403


def test_a_meta_provider_without_a_verify_token_refuses_every_check(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")

    created = meta_provider(client, tenant)

    assert created.status == 201, created.body
    assert created.json()["verifyTokenHint"] is None
    assert check(client, created.json()["id"], "anything-at-all").status == 403


def test_the_verify_token_is_audited_as_a_hint_only(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    SECRET_WATCH.secrets.update({VERIFY_TOKEN, ROTATED_TOKEN})
    provider_id = meta_provider(client, tenant, verifyToken=VERIFY_TOKEN).json()["id"]
    client.patch(f"/api/providers/{provider_id}", key=tenant.admin, json_body={"verifyToken": ROTATED_TOKEN})

    audit = client.get("/api/audit", key=tenant.admin)

    assert audit.status == 200, audit.body
    text = audit.body.decode()
    assert VERIFY_TOKEN not in text and ROTATED_TOKEN not in text
    [updated] = [entry for entry in audit.json() if entry["action"] == "provider.updated"]
    assert (updated["before"]["verify_token_hint"], updated["after"]["verify_token_hint"]) == ("…0001", "…0002")


def test_a_verify_token_is_refused_for_other_kinds(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    body = {
        "name": "zap",
        "kind": "wuzapi",
        "baseUrl": "http://127.0.0.1:3100",
        "webhookSecret": "whsec-0123456789",
        "verifyToken": VERIFY_TOKEN,
    }

    answer = client.post("/api/providers", key=tenant.admin, json_body=body)

    assert answer.status in (400, 422), answer.body
    assert answer.json()["error"] == "verify_token_not_supported"
    assert VERIFY_TOKEN not in answer.body.decode()
    assert client.get("/api/providers", key=tenant.admin).json() == []

    created = client.post(
        "/api/providers", key=tenant.admin, json_body={k: v for k, v in body.items() if k != "verifyToken"}
    )
    assert created.status == 201, created.body
    patched = client.patch(
        f"/api/providers/{created.json()['id']}", key=tenant.admin, json_body={"verifyToken": VERIFY_TOKEN}
    )
    assert patched.status in (400, 422), patched.body
    assert patched.json()["error"] == "verify_token_not_supported"
    assert client.get(f"/api/providers/{created.json()['id']}", key=tenant.admin).json()["verifyTokenHint"] is None


def test_a_verify_token_cannot_be_null_or_short(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    provider_id = meta_provider(client, tenant).json()["id"]

    assert (
        client.patch(f"/api/providers/{provider_id}", key=tenant.admin, json_body={"verifyToken": None}).status == 422
    )
    assert meta_provider(client, tenant, verifyToken="short").status == 422

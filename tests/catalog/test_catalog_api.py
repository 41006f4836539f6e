"""The catalog API through the authorizer and handlers, on moto."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from switchboard import bootstrap
from tools.support.api import Client, TenantKeys
from tools.support.provider_webhooks import build_catalog


def setup_catalog(client: Client, tenant: TenantKeys) -> dict[str, Any]:
    """Tenant's number, provider and calls instance `acme-main`: what the API answered for each."""
    return build_catalog(client, tenant, kind="calls").answers


def test_platform_creates_tenant_whose_admin_builds_a_catalog(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")

    created = setup_catalog(client, tenant)

    assert created["instance"]["state"] == "DISCONNECTED"
    assert created["provider"]["webhookPath"] == f"/webhooks/{created['provider']['id']}"
    numbers = client.get("/api/numbers", key=tenant.admin).json()
    assert [(n["number"], n["connected"]) for n in numbers] == [("5511999990001", False)]


def test_another_tenant_gets_404_on_every_object(client: Client, make_tenant: Any) -> None:
    acme, globex = make_tenant("acme"), make_tenant("globex")
    created = setup_catalog(client, acme)
    key_id = client.get("/api/api-keys", key=acme.admin).json()[0]["id"]

    paths = [
        f"/api/numbers/{created['number']['id']}",
        f"/api/providers/{created['provider']['id']}",
        "/api/instances/acme-main",
        f"/api/api-keys/{key_id}",
    ]
    for path in paths:
        for method in ("GET", "DELETE"):
            answer = client.request(method, path, key=globex.admin)
            assert answer.status == 404, (method, path, answer.body)
            assert answer.json()["error"] == "not_found"
        assert client.get(path, key=acme.admin).status == 200
    assert (
        client.patch(f"/api/numbers/{created['number']['id']}", key=globex.admin, json_body={"displayName": "x"}).status
        == 404
    )
    for listing in ("/api/numbers", "/api/providers", "/api/instances"):
        assert client.get(listing, key=globex.admin).json() == []
    assert client.get("/api/tenants/acme", key=globex.admin).status == 404


def test_instance_names_belong_to_their_tenant(client: Client, make_tenant: Any) -> None:
    """Two tenants name an instance alike: neither learns of the other, each keeps its own."""
    acme, globex = make_tenant("acme"), make_tenant("globex")
    ours = build_catalog(client, acme, instance="sales", provider_instance_id="acme-sales", token="t" * 20 + "acme")
    theirs = build_catalog(
        client, globex, instance="sales", provider_instance_id="globex-sales", token="t" * 20 + "glbx"
    )

    assert client.get("/api/instances/sales", key=acme.admin).json()["providerId"] == ours.provider_id
    assert client.get("/api/instances/sales", key=globex.admin).json()["providerId"] == theirs.provider_id
    secret = client.post("/api/instances/sales/webhook-secret", key=globex.admin).json()
    assert secret["webhookUrl"].endswith(f"/api/tenants/globex/instances/sales/webhook?token={secret['secret']}")
    crossed = client.post(
        "/api/tenants/acme/instances/sales/webhook", json_body={}, headers={"X-Switchboard-Secret": secret["secret"]}
    )
    assert crossed.status == 401
    assert client.delete("/api/instances/sales", key=acme.admin).status == 204
    assert client.get("/api/instances/sales", key=acme.admin).status == 404
    kept = client.get("/api/instances/sales", key=globex.admin).json()
    assert (kept["providerId"], kept["tokenHint"]) == (theirs.provider_id, "…glbx")


def test_deleted_key_gets_401_on_a_new_container(client: Client, make_tenant: Any, override: Any) -> None:
    """A warm authorizer keeps a found key for `KEY_CACHE_SECONDS` (tests/catalog/test_key_cache.py);
    past that, or in another container, the deleted key is unknown."""
    tenant = make_tenant("acme")
    created = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "sender", "scopes": ["admin"]}).json()
    assert client.get("/api/numbers", key=created["key"]).status == 200

    assert client.delete(f"/api/api-keys/{created['id']}", key=tenant.admin).status == 204
    override()  # a new container

    assert client.get("/api/numbers", key=created["key"]).status == 401


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc", "Bearer sb_live_" + "x" * 43])
def test_missing_or_unknown_key_is_401(client: Client, header: str | None) -> None:
    headers = {"authorization": header} if header else {}
    assert client.get("/api/numbers", headers=headers).status == 401


def test_scopes_are_enforced(client: Client, make_tenant: Any, platform_key: str) -> None:
    tenant = make_tenant("acme")
    sender = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "s", "scopes": ["send"]}).json()

    assert client.get("/api/numbers", key=sender["key"]).status == 403
    assert client.post("/api/tenants", key=tenant.admin, json_body={"ownerTag": "x-y", "name": "x"}).status == 403
    assert client.get("/api/tenants", key=tenant.admin).status == 403
    assert client.get("/api/numbers", key=platform_key).status == 403
    assert client.get("/api/tenants/acme", key=tenant.admin).status == 200
    answer = client.get("/api/tenants/acme", key=sender["key"])
    assert answer.status == 403
    assert answer.json()["error"] == "forbidden"


def test_an_admin_cannot_mint_a_platform_key(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    answer = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "x", "scopes": ["platform"]})
    assert answer.status == 422
    assert answer.json()["error"] == "validation_error"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/api/numbers",
            {"number": "+55 11 99999-0001", "displayName": "x"},
        ),  # separators are not E.164 (a leading + is)
        ("/api/numbers", {"number": "123", "displayName": "x"}),
        ("/api/numbers", {"number": 5511999990001, "displayName": "x"}),
        ("/api/numbers", {"number": "5511999990001"}),
        (
            "/api/providers",
            {"name": "p", "kind": "telegram", "baseUrl": "https://a.example", "webhookSecret": "s" * 20},
        ),
        ("/api/providers", {"name": "p", "kind": "wuzapi", "baseUrl": "ftp://a.example", "webhookSecret": "s" * 20}),
        ("/api/api-keys", {"name": "x", "scopes": []}),
        ("/api/api-keys", {"name": "x", "scopes": ["send"], "surprise": 1}),
    ],
)
def test_bad_input_is_a_clear_4xx(client: Client, make_tenant: Any, path: str, body: dict[str, Any]) -> None:
    tenant = make_tenant("acme")
    answer = client.post(path, key=tenant.admin, json_body=body)
    assert answer.status in (400, 422), answer.body
    assert set(answer.json()) >= {"error", "message"}


def test_malformed_json_is_400(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    answer = client.post("/api/numbers", key=tenant.admin, body=b"{not json")
    assert answer.status == 400
    assert answer.json()["error"] == "invalid_json"


def test_provider_url_to_private_address_is_refused(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    for url in ("https://169.254.169.254/latest", "https://10.0.0.5", "http://example.com"):
        answer = client.post(
            "/api/providers",
            key=tenant.admin,
            json_body={"name": "p", "kind": "wuzapi", "baseUrl": url, "webhookSecret": "s" * 20},
        )
        assert answer.status == 400, (url, answer.body)


def test_agent_key_needs_an_attendant(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    answer = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "a", "scopes": ["agent"]})
    assert answer.status == 400
    assert answer.json()["error"] == "attendant_required"


def test_patch_with_null_for_a_required_field_is_422_and_changes_nothing(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    key = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "s", "scopes": ["send"]}).json()

    answer = client.patch(f"/api/api-keys/{key['id']}", key=tenant.admin, json_body={"scopes": None})

    assert answer.status == 422
    assert client.get(f"/api/api-keys/{key['id']}", key=tenant.admin).json()["scopes"] == ["send"]
    cleared = client.patch(f"/api/api-keys/{key['id']}", key=tenant.admin, json_body={"webhookUrl": None})
    assert cleared.status == 200


def test_reconfiguring_an_instance_never_undoes_a_connection_event_that_raced_it(
    client: Client, make_tenant: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = make_tenant("acme")
    created = setup_catalog(client, tenant)
    repository = bootstrap.catalog_repository()
    read_before_the_event = repository.find_instance

    def read_then_event_arrives(key: str) -> Any:
        stale = read_before_the_event(key)
        bootstrap.connection_state_repository().apply_event(key, "CONNECTED", 7, datetime.now(UTC))
        return stale

    monkeypatch.setattr(repository, "find_instance", read_then_event_arrives)

    answer = client.put(
        "/api/instances/acme-main",
        key=tenant.admin,
        json_body={
            "providerId": created["provider"]["id"],
            "providerInstanceId": "inst-1",
            "numberId": created["number"]["id"],
            "priority": 3,
            "kind": "calls",
        },
    )

    assert answer.status == 200
    stored = client.get("/api/instances/acme-main", key=tenant.admin).json()
    assert (stored["state"], stored["priority"]) == ("CONNECTED", 3)


def test_an_instance_keeps_its_own_configuration_until_a_put_changes_it(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    created = setup_catalog(client, tenant)
    binding = {
        "providerId": created["provider"]["id"],
        "providerInstanceId": "inst-1",
        "numberId": created["number"]["id"],
        "kind": "calls",
    }
    assert (created["instance"]["spamguardEnabled"], created["instance"]["inboxId"]) == (False, None)
    assert created["instance"]["eventsWebhookUrl"] is None

    configured = client.put(
        "/api/instances/acme-main",
        key=tenant.admin,
        json_body={
            **binding,
            "spamguardEnabled": True,
            "inboxId": 42,
            "eventsWebhookUrl": "https://93.184.216.34/events",
        },
    )
    assert configured.status == 200, configured.body
    kept = client.put("/api/instances/acme-main", key=tenant.admin, json_body={**binding, "priority": 2})
    assert kept.status == 200

    stored = client.get("/api/instances/acme-main", key=tenant.admin).json()
    assert (stored["spamguardEnabled"], stored["inboxId"], stored["priority"]) == (True, 42, 2)
    assert stored["eventsWebhookUrl"] == "https://93.184.216.34/events"
    cleared = client.put(
        "/api/instances/acme-main", key=tenant.admin, json_body={**binding, "inboxId": None, "eventsWebhookUrl": None}
    ).json()
    assert (cleared["spamguardEnabled"], cleared["inboxId"], cleared["eventsWebhookUrl"]) == (True, None, None)
    audit = client.get("/api/audit", key=tenant.admin).json()
    assert sum(entry["action"] == "instance.updated" and entry["target"] == "acme-main" for entry in audit) == 3


@pytest.mark.parametrize(
    ("field", "value", "status"),
    [
        ("eventsWebhookUrl", "https://10.0.0.5/events", 400),
        ("eventsWebhookUrl", "http://93.184.216.34/events", 400),
        ("eventsWebhookUrl", "ftp://93.184.216.34/events", 422),
        ("inboxId", 0, 422),
        ("inboxId", "7", 422),
        ("spamguardEnabled", "yes", 422),
    ],
)
def test_bad_instance_configuration_is_refused_and_changes_nothing(
    client: Client, make_tenant: Any, field: str, value: Any, status: int
) -> None:
    tenant = make_tenant("acme")
    created = setup_catalog(client, tenant)

    answer = client.put(
        "/api/instances/acme-main",
        key=tenant.admin,
        json_body={
            "providerId": created["provider"]["id"],
            "providerInstanceId": "inst-1",
            "numberId": created["number"]["id"],
            "kind": "calls",
            field: value,
        },
    )

    assert answer.status == status, answer.body
    assert client.get("/api/instances/acme-main", key=tenant.admin).json() == created["instance"]

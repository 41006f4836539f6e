"""An API key's at-least-once opt-in: set through the API-key routes, read by the send worker."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard import bootstrap
from tools.support.api import Client


def send_key(client: Client, admin: str, **fields: Any) -> dict[str, Any]:
    answer = client.post("/api/api-keys", key=admin, json_body={"name": "sender", "scopes": ["send"], **fields})
    assert answer.status == 201, answer.body
    return dict(answer.json())


def test_a_key_is_at_most_once_unless_its_admin_opts_in(
    client: Client, make_tenant: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POOL_CONFIG_CACHE_SECONDS", "0")
    bootstrap.reset()
    tenant = make_tenant("acme")
    key = send_key(client, tenant.admin)
    assert key["atLeastOnce"] is False
    assert bootstrap.sending_config_source().get("acme", key["id"]).at_least_once is False

    patched = client.patch(f"/api/api-keys/{key['id']}", key=tenant.admin, json_body={"atLeastOnce": True})

    assert patched.status == 200, patched.body
    assert client.get(f"/api/api-keys/{key['id']}", key=tenant.admin).json()["atLeastOnce"] is True
    assert bootstrap.sending_config_source().get("acme", key["id"]).at_least_once is True


def test_at_least_once_can_be_chosen_at_creation_and_is_a_strict_boolean(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    key = send_key(client, tenant.admin, atLeastOnce=True)
    assert key["atLeastOnce"] is True

    for value in (None, "yes", 1):
        answer = client.patch(f"/api/api-keys/{key['id']}", key=tenant.admin, json_body={"atLeastOnce": value})
        assert answer.status == 422, (value, answer.body)
    assert client.get(f"/api/api-keys/{key['id']}", key=tenant.admin).json()["atLeastOnce"] is True


def test_the_field_warns_of_copies_in_the_openapi_document(client: Client) -> None:
    schemas = client.get("/api/openapi.json").json()["components"]["schemas"]

    for name in ("CreateApiKey", "UpdateApiKey", "ApiKeyView"):
        description = schemas[name]["properties"]["atLeastOnce"]["description"]
        assert "copy" in description and "ambiguous_outcome" in description

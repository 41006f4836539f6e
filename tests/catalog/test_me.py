"""`GET /api/me`: a key learns its own tenant, id, name and scopes, whatever its scope.

The console signs in with a key and picks its screens from this answer, so every scope must get
it (a send key too, to be told it cannot use the console) and nobody may learn another key.
"""

from __future__ import annotations

from typing import Any

import pytest

from tools.support.api import Client


def new_key(client: Client, admin: str, name: str, scopes: list[str], **extra: Any) -> dict[str, Any]:
    answer = client.post("/api/api-keys", key=admin, json_body={"name": name, "scopes": scopes, **extra})
    assert answer.status == 201, answer.body
    return dict(answer.json())


@pytest.mark.parametrize(
    ("scopes", "extra"),
    [
        (["admin"], {}),
        (["agent"], {"attendantId": "maria"}),
        (["send"], {}),
        (["agent", "send"], {"attendantId": "joao"}),
    ],
)
def test_a_key_of_any_scope_reads_who_it_is(
    client: Client, make_tenant: Any, scopes: list[str], extra: dict[str, Any]
) -> None:
    tenant = make_tenant("acme")
    created = new_key(client, tenant.admin, "front desk", scopes, **extra)

    answer = client.get("/api/me", key=created["key"])

    assert answer.status == 200, answer.body
    assert answer.json() == {
        "tenant": "acme",
        "keyId": created["id"],
        "name": "front desk",
        "scopes": sorted(scopes),
        "attendantId": extra.get("attendantId"),  # whom the calls of an agent key belong to
    }


def test_each_tenant_sees_only_its_own_key(client: Client, make_tenant: Any) -> None:
    acme, globex = make_tenant("acme"), make_tenant("globex")

    mine, theirs = client.get("/api/me", key=acme.admin).json(), client.get("/api/me", key=globex.admin).json()

    assert (mine["tenant"], theirs["tenant"]) == ("acme", "globex")
    assert mine["keyId"] != theirs["keyId"]
    assert mine["scopes"] == ["admin"]


def test_a_revoked_or_missing_key_is_unauthorized(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    gone = new_key(client, tenant.admin, "old app", ["send"])
    assert client.delete(f"/api/api-keys/{gone['id']}", key=tenant.admin).status == 204

    assert client.get("/api/me", key=gone["key"]).status == 401
    assert client.get("/api/me").status == 401

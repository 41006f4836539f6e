"""A tenant always keeps an admin key, and the platform can give it a new one.

The API tests run on in-process moto; the race runs real threads, each with its own boto3
session and repository (one Lambda container each), against the serialised moto server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3

from switchboard import bootstrap
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core.errors import LastAdminKey
from switchboard.core.identity import Scope
from switchboard.core.settings import get_settings
from tests.support.threads import at_once
from tools.support.api import Client, TenantKeys
from tools.support.aws import REGION, AwsResources
from tools.support.builders import admin

ROUNDS = 10


def key_id_of(client: Client, admin: str) -> str:
    """The id of the key `admin` itself (the only key of a fresh tenant)."""
    keys = client.get("/api/api-keys", key=admin).json()
    return str(next(key["id"] for key in keys if admin.startswith(key["prefix"])))


def new_admin_key(client: Client, tenant: TenantKeys, name: str = "second admin") -> dict[str, Any]:
    answer = client.post("/api/api-keys", key=tenant.admin, json_body={"name": name, "scopes": ["admin"]})
    assert answer.status == 201, answer.body
    return dict(answer.json())


def test_the_only_admin_key_cannot_be_revoked_and_keeps_working(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")

    answer = client.delete(f"/api/api-keys/{key_id_of(client, tenant.admin)}", key=tenant.admin)

    assert answer.status == 409
    assert answer.json()["error"] == "last_admin_key"
    assert answer.json()["message"]
    assert client.get("/api/numbers", key=tenant.admin).status == 200


def test_with_a_second_admin_key_one_can_go_but_not_both(client: Client, make_tenant: Any, override: Any) -> None:
    tenant = make_tenant("acme")
    second = new_admin_key(client, tenant)

    assert client.delete(f"/api/api-keys/{key_id_of(client, tenant.admin)}", key=second["key"]).status == 204
    refused = client.delete(f"/api/api-keys/{second['id']}", key=second["key"])

    assert (refused.status, refused.json()["error"]) == (409, "last_admin_key")
    override()  # a new container: a warm authorizer keeps a found key for KEY_CACHE_SECONDS
    assert client.get("/api/numbers", key=tenant.admin).status == 401
    assert client.get("/api/numbers", key=second["key"]).status == 200


def test_taking_admin_from_the_last_admin_key_is_refused_but_other_keys_change_freely(
    client: Client, make_tenant: Any
) -> None:
    tenant = make_tenant("acme")
    own_id = key_id_of(client, tenant.admin)
    sender = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "app", "scopes": ["send"]}).json()

    demoted = client.patch(f"/api/api-keys/{own_id}", key=tenant.admin, json_body={"scopes": ["send"]})
    assert (demoted.status, demoted.json()["error"]) == (409, "last_admin_key")

    # A send key made admin counts: the first admin key may then lose admin, and the count follows.
    promoted = client.patch(f"/api/api-keys/{sender['id']}", key=tenant.admin, json_body={"scopes": ["admin"]})
    assert promoted.status == 200
    assert client.patch(f"/api/api-keys/{own_id}", key=tenant.admin, json_body={"scopes": ["send"]}).status == 200
    assert client.delete(f"/api/api-keys/{own_id}", key=sender["key"]).status == 204
    assert client.delete(f"/api/api-keys/{sender['id']}", key=sender["key"]).status == 409


def test_a_tenant_made_before_the_admin_count_is_counted_on_its_first_revocation(
    aws: AwsResources, client: Client, make_tenant: Any
) -> None:
    tenant = make_tenant("acme")
    second = new_admin_key(client, tenant)
    table = boto3.resource("dynamodb", region_name=REGION).Table(get_settings().table_name)
    table.delete_item(Key={"pk": "TENANT#acme", "sk": "ADMINKEYS"})  # as stored before the count existed

    assert client.delete(f"/api/api-keys/{second['id']}", key=tenant.admin).status == 204
    last = client.delete(f"/api/api-keys/{key_id_of(client, tenant.admin)}", key=tenant.admin)

    assert (last.status, last.json()["error"]) == (409, "last_admin_key")


def test_the_platform_mints_an_admin_key_for_an_existing_tenant_shown_once_and_audited(
    client: Client, make_tenant: Any, platform_key: str
) -> None:
    tenant = make_tenant("acme")
    make_tenant("globex")

    answer = client.post("/api/tenants/acme/api-keys", key=platform_key, json_body={"name": "recovery"})

    assert answer.status == 201, answer.body
    minted = answer.json()
    assert (minted["name"], minted["scopes"]) == ("recovery", ["admin"])
    assert client.get("/api/numbers", key=minted["key"]).status == 200
    listed = client.get(f"/api/api-keys/{minted['id']}", key=tenant.admin).json()
    assert "key" not in listed
    globex_admin = client.post("/api/tenants/globex/api-keys", key=platform_key, json_body={}).json()["key"]
    assert client.get(f"/api/api-keys/{minted['id']}", key=globex_admin).status == 404
    audit = client.get("/api/audit", key=minted["key"]).json()
    assert any(entry["action"] == "api_key.created" and entry["target"] == minted["id"] for entry in audit)
    # The tenant has two admin keys now: its first one may go.
    assert client.delete(f"/api/api-keys/{key_id_of(client, tenant.admin)}", key=minted["key"]).status == 204


def test_minting_needs_the_platform_scope_and_an_existing_tenant(
    client: Client, make_tenant: Any, platform_key: str
) -> None:
    tenant = make_tenant("acme")

    assert client.post("/api/tenants/acme/api-keys", key=tenant.admin, json_body={}).status == 403
    unknown = client.post("/api/tenants/nobody/api-keys", key=platform_key, json_body={})
    assert (unknown.status, unknown.json()["error"]) == (404, "not_found")
    default = client.post("/api/tenants/acme/api-keys", key=platform_key, json_body={})
    assert (default.status, default.json()["name"]) == (201, "acme admin")


def revoke_at_once(owner_tag: str, key_ids: list[str]) -> list[Any]:
    """Each key revoked by its own thread (own boto3 session and repository), all at once."""

    def revoker(key_id: str) -> Callable[[], str]:
        session = boto3.session.Session()
        repository = CatalogRepository(session.resource("dynamodb").Table(get_settings().table_name))

        def revoke() -> str:
            repository.delete_api_key(owner_tag, key_id)
            return "revoked"

        return revoke

    return at_once([revoker(key_id) for key_id in key_ids])


def test_two_containers_revoking_the_last_two_admin_keys_at_once_leave_exactly_one(
    served_aws: AwsResources,
) -> None:
    catalog = bootstrap.catalog_service()
    for round_index in range(ROUNDS):
        owner_tag = f"race-{round_index}"
        _, first = catalog.create_tenant(None, owner_tag, owner_tag)
        second = catalog.create_api_key(None, tenant=owner_tag, name="second", environment="LIVE", scopes=[Scope.ADMIN])

        results = revoke_at_once(owner_tag, [first.key.id, second.key.id])

        assert results.count("revoked") == 1, results
        assert [type(result) for result in results if result != "revoked"] == [LastAdminKey], results
        remaining = [key for key in catalog.list_api_keys(admin(owner_tag)) if Scope.ADMIN in key.scopes]
        assert len(remaining) == 1

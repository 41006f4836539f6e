"""A body that names a number or a provider names one of the caller's tenant, checked by the
write itself (a condition in its transaction): otherwise 422, the same answer whether it is
missing or another tenant's, and nothing is written."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from switchboard import bootstrap
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core.errors import UnknownReference
from tools.support.api import Client, TenantKeys
from tools.support.provider_webhooks import Catalog, build_catalog

THEIRS = "5521999990002"


@pytest.fixture
def theirs(client: Client, make_tenant: Callable[..., TenantKeys]) -> Catalog:
    return build_catalog(
        client, make_tenant("globex"), instance="globex-main", number=THEIRS, provider_instance_id="g1"
    )


def test_a_default_number_of_another_tenant_or_none_is_refused_on_create_and_on_change(
    client: Client, catalog: Catalog, theirs: Catalog
) -> None:
    admin = catalog.tenant.admin
    foreign = client.post(
        "/api/api-keys", key=admin, json_body={"name": "k", "scopes": ["send"], "defaultNumber": THEIRS}
    )
    missing = client.post(
        "/api/api-keys", key=admin, json_body={"name": "k", "scopes": ["send"], "defaultNumber": "5531999990003"}
    )
    created = client.post(
        "/api/api-keys", key=admin, json_body={"name": "k", "scopes": ["send"], "defaultNumber": "5511999990001"}
    )
    changed = client.patch(f"/api/api-keys/{created.json()['id']}", key=admin, json_body={"defaultNumber": THEIRS})

    assert (foreign.status, foreign.json()["error"]) == (422, "unknown_number")
    assert foreign.json() == missing.json() == changed.json()
    assert "defaultNumber" in foreign.json()["message"]
    assert created.status == 201
    assert [key["name"] for key in client.get("/api/api-keys", key=admin).json()].count("k") == 1
    assert client.get(f"/api/api-keys/{created.json()['id']}", key=admin).json()["defaultNumber"] == "5511999990001"


def test_a_default_number_deleted_later_does_not_block_other_changes_of_the_key(
    client: Client, catalog: Catalog
) -> None:
    admin = catalog.tenant.admin
    spare = client.post("/api/numbers", key=admin, json_body={"number": "5511999990077", "displayName": "Spare"})
    key = client.post(
        "/api/api-keys", key=admin, json_body={"name": "k", "scopes": ["send"], "defaultNumber": "5511999990077"}
    ).json()
    assert client.delete(f"/api/numbers/{spare.json()['id']}", key=admin).status == 204

    renamed = client.patch(f"/api/api-keys/{key['id']}", key=admin, json_body={"name": "renamed"})

    assert (renamed.status, renamed.json()["name"]) == (200, "renamed")


def test_an_instance_on_another_tenants_number_or_provider_is_refused_and_not_written(
    client: Client, catalog: Catalog, theirs: Catalog
) -> None:
    admin = catalog.tenant.admin
    ours = {"providerId": catalog.provider_id, "providerInstanceId": "acme-2", "numberId": catalog.number_id}

    their_number = client.put(
        "/api/instances/second", key=admin, json_body={**ours, "numberId": theirs.number_id, "token": "t" * 16}
    )
    their_provider = client.put(
        "/api/instances/second", key=admin, json_body={**ours, "providerId": theirs.provider_id, "token": "t" * 16}
    )
    moved = client.put(
        f"/api/instances/{catalog.instance}", key=admin, json_body={**ours, "numberId": theirs.number_id}
    )

    assert (their_number.status, their_number.json()["error"]) == (422, "unknown_number")
    assert "numberId" in their_number.json()["message"]
    assert (their_provider.status, their_provider.json()["error"]) == (422, "unknown_provider")
    assert (moved.status, moved.json()["error"]) == (422, "unknown_number")
    assert client.get("/api/instances/second", key=admin).status == 404
    assert client.get(f"/api/instances/{catalog.instance}", key=admin).json()["numberId"] == catalog.number_id
    assert [i["name"] for i in client.get("/api/instances", key=theirs.tenant.admin).json()] == ["globex-main"]


def test_the_write_itself_refuses_a_number_of_another_tenant(client: Client, catalog: Catalog, theirs: Catalog) -> None:
    """The condition is part of the instance's transaction, so no read before it can go stale:
    the repository refuses the write on its own."""
    repository = CatalogRepository(bootstrap.table())
    current = repository.get_instance("acme", catalog.instance)

    with pytest.raises(UnknownReference) as refused:
        repository.put_instance(current.model_copy(update={"number_id": theirs.number_id}), current)

    assert refused.value.code == "unknown_number"
    assert repository.get_instance("acme", catalog.instance).number_id == catalog.number_id

"""Every catalog write a provider's webhooks are checked or bound against moves that provider's stamp."""

from __future__ import annotations

from collections.abc import Callable

from devstack.apigw import HttpResponse
from switchboard import bootstrap
from tools.support.api import Client
from tools.support.provider_webhooks import Catalog


def rev(provider_id: str) -> int:
    return bootstrap.catalog_repository().provider_and_rev(provider_id)[1]


def test_each_write_of_a_provider_its_instances_or_their_number_moves_its_stamp(
    client: Client, catalog: Catalog
) -> None:
    admin = catalog.tenant.admin
    instance = {"providerId": catalog.provider_id, "numberId": catalog.number_id, "providerInstanceId": "inst-1"}
    writes: list[Callable[[], HttpResponse]] = [
        lambda: client.patch(f"/api/providers/{catalog.provider_id}", key=admin, json_body={"name": "renamed"}),
        lambda: client.patch(
            f"/api/providers/{catalog.provider_id}", key=admin, json_body={"webhookSecret": "whsec-rotated-000001"}
        ),
        lambda: client.put("/api/instances/acme-main", key=admin, json_body={**instance, "priority": 3}),
        lambda: client.put("/api/instances/acme-main", key=admin, json_body={**instance, "token": "rotated-0001"}),
        lambda: client.patch(f"/api/numbers/{catalog.number_id}", key=admin, json_body={"metaPhoneId": "1001"}),
        lambda: client.delete("/api/instances/acme-main", key=admin),
        lambda: client.delete(f"/api/providers/{catalog.provider_id}", key=admin),
    ]
    revs = [rev(catalog.provider_id)]

    for write in writes:
        assert write().status in (200, 204)
        revs.append(rev(catalog.provider_id))

    assert revs == sorted(set(revs)) and len(revs) == len(writes) + 1  # each one moved it on
    assert bootstrap.catalog_repository().provider_and_rev(catalog.provider_id) == (None, revs[-1])


def test_an_instance_moved_to_another_provider_moves_both_stamps(client: Client, catalog: Catalog) -> None:
    other = client.post(
        "/api/providers",
        key=catalog.tenant.admin,
        json_body={"name": "other", "kind": "wuzapi", "baseUrl": "http://127.0.0.1:3101", "webhookSecret": "x" * 24},
    ).json()["id"]
    before = (rev(catalog.provider_id), rev(other))

    moved = client.put(
        "/api/instances/acme-main",
        key=catalog.tenant.admin,
        json_body={"providerId": other, "numberId": catalog.number_id, "providerInstanceId": "inst-1"},
    )

    assert moved.status == 200, moved.body
    assert (rev(catalog.provider_id), rev(other)) == (before[0] + 1, before[1] + 1)

"""The catalog's and the pool's item models write the attributes under the names items have
always had, and read the items written before them."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.catalog.domain import ApiKey, Number, Provider
from switchboard.core import store
from switchboard.core.errors import NotFound, PoolChanged, UnknownReference
from switchboard.core.identity import Scope
from switchboard.pool.domain import Pool, PoolEntry
from switchboard.pool.dynamo import PoolRepository
from tools.support.aws import AwsResources
from tools.support.builders import instance


def raw(pk: str, sk: str = "#META") -> dict[str, Any]:
    item: dict[str, Any] = bootstrap.table().get_item(Key={"pk": pk, "sk": sk})["Item"]
    return item


def catalog_of(tenant: str = "acme") -> tuple[Number, Provider, ApiKey]:
    catalog = bootstrap.catalog_repository()
    number = Number(tenant=tenant, id="num_1", number="5511999990001", display_name="line")
    provider = Provider(
        tenant=tenant, id="prv_1", name="zap", kind="wuzapi", base_url="https://zap.example", webhook_secret_hint="…"
    )
    key = ApiKey(
        tenant=tenant,
        id="key_1",
        name="desk",
        environment="LIVE",
        scopes=[Scope.AGENT],
        attendant_id="maria",
        prefix="sb_live_abcd",
    )
    catalog.create_number(number)
    catalog.create_provider(provider)
    catalog.create_api_key(key, "digest-1")
    return number, provider, key


def test_every_catalog_item_keeps_its_stored_names(aws: AwsResources) -> None:
    number, provider, _ = catalog_of()
    record = instance("acme-main", provider_id=provider.id, number_id=number.id)
    bootstrap.catalog_repository().put_instance(record, None)

    assert raw("TENANT#acme", "NUMBER#5511999990001") == {
        "pk": "TENANT#acme",
        "sk": "NUMBER#5511999990001",
        "tenant": "acme",
        "number_id": "num_1",
    }
    grant = raw("KEYHASH#digest-1")
    assert (grant["keyId"], grant["attendantId"], grant["scopes"]) == ("key_1", "maria", ["agent"])
    stored_key = raw("APIKEY#key_1")
    assert (stored_key["gsi1pk"], stored_key["digest"], stored_key["scopes"]) == (
        "TENANT#acme#APIKEY",
        "digest-1",
        ["agent"],
    )
    assert raw("PROVIDER#prv_1", "STAMP")["rev"] == 2  # created, then bound to the instance
    stored_instance = raw(f"INSTANCE#{record.key}")
    assert (stored_instance["gsi2pk"], stored_instance["gsi2sk"]) == ("NUMBER#num_1#INSTANCE", f"000000#{record.key}")
    assert raw(f"BINDING#prv_1#{record.provider_instance_id}") == {
        "pk": f"BINDING#prv_1#{record.provider_instance_id}",
        "sk": "#META",
        "tenant": "acme",
        "instance": record.key,
    }


def test_a_digits_item_written_with_the_camel_case_id_still_finds_its_number(aws: AwsResources) -> None:
    number, _, _ = catalog_of()
    table = bootstrap.table()
    table.put_item(Item={"pk": "TENANT#acme", "sk": "NUMBER#5511999990001", "tenant": "acme", "numberId": number.id})

    found = bootstrap.catalog_repository().number_by_digits("acme", number.number)

    assert found is not None and found.id == number.id


def test_the_pool_item_is_versioned_under_its_stored_names_and_refuses_what_no_longer_holds(
    aws: AwsResources,
) -> None:
    number, _, key = catalog_of()
    catalog = bootstrap.catalog_repository()
    repository = PoolRepository(bootstrap.table())
    pool = Pool(tenant="acme", api_key_id=key.id, entries=(PoolEntry(id="pool_1", number_id=number.id),))

    def save(expected: int, *, adding: str | None = None, tenant: str = "acme") -> Pool:
        """As the pool service saves: the catalog's checks and the pool's write, one transaction."""
        uow = store.unit_of_work()
        catalog.record_key_held(uow, tenant, key.id, refused=NotFound("API key not found"))
        if adding is not None:
            catalog.record_number_held(uow, tenant, adding, refused=UnknownReference("no such number"))
        saved = repository.record_save(uow, pool, expected)
        uow.commit()
        return saved

    assert save(0, adding=number.id).version == 1
    stored = raw(f"APIKEY#{key.id}", "POOL")
    assert (stored["version"], stored["api_key_id"], stored["entries"][0]["number_id"]) == (1, key.id, number.id)
    with pytest.raises(PoolChanged):
        save(0)
    with pytest.raises(UnknownReference):
        save(1, adding="num_gone")
    with pytest.raises(NotFound):
        save(1, tenant="globex")
    assert save(1).version == 2
    assert repository.get("acme", key.id).version == 2

    catalog.delete_api_key("acme", key.id, [repository])

    assert "Item" not in bootstrap.table().get_item(Key={"pk": f"APIKEY#{key.id}", "sk": "POOL"})

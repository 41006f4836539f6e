"""A pool after its numbers or its key are deleted from the catalog, through the API on moto.

A deleted number's entry is never listed, never counts toward the limit, never has to be named
in a reorder and is never tried by the send worker; the next edit of the pool drops it for good.
A deleted key takes its pool with it.
"""

from __future__ import annotations

from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.catalog.domain import MAX_POOL_SIZE
from switchboard.core.errors import UnknownReference
from switchboard.pool.domain import Pool
from switchboard.pool.dynamo import PoolRepository
from switchboard.pool.service import PoolService, SendingConfigSource
from tools.support import builders
from tools.support.api import Client
from tools.support.fakes import FakeAudit, FakePublisher
from tools.support.pool import NUMBERS, PoolWorld, build_world


def pool_of(world: PoolWorld) -> Any:
    return world.client.get(f"/api/api-keys/{world.send_key_id}/pool", key=world.tenant.admin)


def delete_number(world: PoolWorld, digits: str) -> None:
    """What an admin does to drop a number: its instance first, then the number."""
    admin = world.tenant.admin
    assert world.client.delete(f"/api/instances/{world.instances[digits]}", key=admin).status == 204
    assert world.client.delete(f"/api/numbers/{world.numbers[digits]}", key=admin).status == 204


def stored_pool(world: PoolWorld) -> Pool:
    return PoolRepository(bootstrap.table()).get(world.tenant.owner_tag, world.send_key_id)


def test_a_deleted_number_leaves_the_pool_listing_and_the_others_keep_their_order(
    client: Client, make_tenant: Any
) -> None:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key()
    world.use_pool(*NUMBERS)

    delete_number(world, NUMBERS[1])

    listed = pool_of(world)
    assert listed.status == 200, listed.body
    assert [(entry["whatsappNumber"]["number"], entry["priority"]) for entry in listed.json()] == [
        (NUMBERS[0], 0),
        (NUMBERS[2], 1),
    ]
    reorder = [world.numbers[NUMBERS[2]], world.numbers[NUMBERS[0]]]
    reordered = client.put(
        f"/api/api-keys/{world.send_key_id}/pool/reorder", key=world.tenant.admin, json_body={"numberIds": reorder}
    )
    assert reordered.status == 200, reordered.body
    assert [entry["whatsappNumberId"] for entry in reordered.json()] == reorder
    assert stored_pool(world).number_ids() == reorder  # the edit dropped the deleted number for good


def test_a_deleted_number_frees_its_place_in_a_full_pool(client: Client, make_tenant: Any) -> None:
    digits = [f"55119999900{i:02d}" for i in range(1, MAX_POOL_SIZE + 2)]
    world = build_world(client, make_tenant("acme"), *digits)
    world.create_send_key()
    world.use_pool(*digits[:MAX_POOL_SIZE])

    delete_number(world, digits[0])
    added = client.post(
        f"/api/api-keys/{world.send_key_id}/pool",
        key=world.tenant.admin,
        json_body={"whatsappNumberId": world.numbers[digits[-1]]},
    )

    assert added.status == 201, added.body
    assert added.json()["priority"] == MAX_POOL_SIZE - 1
    assert [entry["whatsappNumber"]["number"] for entry in pool_of(world).json()] == digits[1:]


def test_the_send_worker_never_tries_a_deleted_number(client: Client, make_tenant: Any) -> None:
    world = build_world(client, make_tenant("acme"), *NUMBERS[:2])
    world.create_send_key()
    world.use_pool(*NUMBERS[:2])

    delete_number(world, NUMBERS[0])
    worker = SendingConfigSource(bootstrap.catalog_repository(), PoolRepository(bootstrap.table()), ttl_seconds=0)
    config = worker.get(world.tenant.owner_tag, world.send_key_id)

    assert [number.digits for number in config.pool] == [NUMBERS[1]]


def test_a_deleted_key_takes_its_pool_with_it(client: Client, make_tenant: Any) -> None:
    world = build_world(client, make_tenant("acme"), *NUMBERS[:2])
    world.create_send_key()
    world.use_pool(*NUMBERS[:2])
    assert stored_pool(world).number_ids()

    assert client.delete(f"/api/api-keys/{world.send_key_id}", key=world.tenant.admin).status == 204

    assert pool_of(world).status == 404
    assert stored_pool(world) == Pool(tenant=world.tenant.owner_tag, api_key_id=world.send_key_id)


def test_a_number_deleted_while_it_is_being_added_is_not_added(client: Client, make_tenant: Any) -> None:
    """The add read the number, then its deletion committed: the pool write refuses it."""
    world = build_world(client, make_tenant("acme"), *NUMBERS[:2])
    world.create_send_key()
    world.use_pool(NUMBERS[0])
    doomed = world.numbers[NUMBERS[1]]
    catalog = bootstrap.catalog_repository()

    class DeletedRightAfterTheRead:
        def __getattr__(self, name: str) -> Any:
            return getattr(catalog, name)

        def get_number(self, tenant: str, number_id: str) -> Any:
            number = catalog.get_number(tenant, number_id)
            delete_number(world, NUMBERS[1])
            return number

    service = PoolService(
        DeletedRightAfterTheRead(),
        PoolRepository(bootstrap.table()),
        bootstrap.catalog_service(),
        FakeAudit(),
        FakePublisher(),
    )
    admin = builders.admin(world.tenant.owner_tag)

    with pytest.raises(UnknownReference) as refused:
        service.add(admin, world.send_key_id, doomed)

    assert refused.value.code == "unknown_number"
    assert stored_pool(world).number_ids() == [world.numbers[NUMBERS[0]]]

"""The pool API through the authorizer and handlers, on moto."""

from __future__ import annotations

from typing import Any

from tools.support.api import Client
from tools.support.pool import NUMBERS, PoolWorld, build_world


def pool_of(world: PoolWorld) -> list[dict[str, Any]]:
    answer = world.client.get(f"/api/api-keys/{world.send_key_id}/pool", key=world.tenant.admin)
    assert answer.status == 200, answer.body
    return list(answer.json())


def add(world: PoolWorld, number_id: str) -> Any:
    return world.client.post(
        f"/api/api-keys/{world.send_key_id}/pool", key=world.tenant.admin, json_body={"whatsappNumberId": number_id}
    )


def test_admin_adds_lists_reorders_and_removes_pool_numbers(client: Client, make_tenant: Any) -> None:
    world = build_world(client, make_tenant("acme"), *NUMBERS)
    world.create_send_key()
    world.set_connected(NUMBERS[2], False)

    added = add(world, world.numbers[NUMBERS[1]])
    assert added.status == 201, added.body
    assert added.json() | {"id": "x", "addedAt": "t"} == {
        "id": "x",
        "apiKeyId": world.send_key_id,
        "whatsappNumberId": world.numbers[NUMBERS[1]],
        "priority": 0,
        "connected": True,
        "addedAt": "t",
        "whatsappNumber": {"id": world.numbers[NUMBERS[1]], "number": NUMBERS[1], "displayName": "n2"},
    }
    assert add(world, world.numbers[NUMBERS[2]]).json()["priority"] == 1
    assert add(world, world.numbers[NUMBERS[0]]).json()["priority"] == 2

    listed = pool_of(world)
    assert [(e["whatsappNumber"]["number"], e["priority"], e["connected"]) for e in listed] == [
        (NUMBERS[1], 0, True),
        (NUMBERS[2], 1, False),
        (NUMBERS[0], 2, True),
    ]

    order = [world.numbers[d] for d in (NUMBERS[0], NUMBERS[1], NUMBERS[2])]
    reordered = client.put(
        f"/api/api-keys/{world.send_key_id}/pool/reorder", key=world.tenant.admin, json_body={"numberIds": order}
    )
    assert reordered.status == 200, reordered.body
    assert [e["whatsappNumberId"] for e in pool_of(world)] == order

    removed = client.delete(f"/api/api-keys/{world.send_key_id}/pool/{order[1]}", key=world.tenant.admin)
    assert removed.status == 204
    assert [(e["whatsappNumberId"], e["priority"]) for e in pool_of(world)] == [(order[0], 0), (order[2], 1)]


def test_selection_mode_switches_between_default_and_pool(client: Client, make_tenant: Any) -> None:
    world = build_world(client, make_tenant("acme"))
    world.create_send_key()
    path = f"/api/api-keys/{world.send_key_id}/selection-mode"

    answer = client.put(path, key=world.tenant.admin, json_body={"numberSelectionMode": "pool"})

    assert answer.status == 200, answer.body
    assert answer.json()["numberSelectionMode"] == "pool"
    assert client.get(f"/api/api-keys/{world.send_key_id}", key=world.tenant.admin).json()["numberSelectionMode"] == (
        "pool"
    )
    refused = client.put(path, key=world.tenant.admin, json_body={"numberSelectionMode": "random"})
    assert refused.status == 422
    assert refused.json()["error"] == "validation_error"


def test_duplicates_foreign_numbers_and_bad_reorders_are_refused_with_clear_codes(
    client: Client, make_tenant: Any
) -> None:
    world = build_world(client, make_tenant("acme"), *NUMBERS[:2])
    other = build_world(client, make_tenant("globex"), "5511977770001")
    world.create_send_key()
    assert add(world, world.numbers[NUMBERS[0]]).status == 201

    duplicate = add(world, world.numbers[NUMBERS[0]])
    foreign = add(world, other.numbers["5511977770001"])
    missing = add(world, "num_does_not_exist")
    reorder_path = f"/api/api-keys/{world.send_key_id}/pool/reorder"
    not_permutation = client.put(
        reorder_path, key=world.tenant.admin, json_body={"numberIds": [world.numbers[NUMBERS[1]]]}
    )
    repeated = client.put(
        reorder_path,
        key=world.tenant.admin,
        json_body={"numberIds": [world.numbers[NUMBERS[0]], world.numbers[NUMBERS[0]]]},
    )
    not_in_pool = client.delete(
        f"/api/api-keys/{world.send_key_id}/pool/{world.numbers[NUMBERS[1]]}", key=world.tenant.admin
    )

    assert (duplicate.status, duplicate.json()["error"]) == (409, "number_already_in_pool")
    assert (foreign.status, foreign.json()["error"]) == (422, "unknown_number")
    assert (missing.status, missing.json()["error"]) == (422, "unknown_number")
    assert foreign.json()["message"] == missing.json()["message"]  # another tenant's is not told apart
    assert (not_permutation.status, not_permutation.json()["error"]) == (400, "not_a_permutation")
    assert (repeated.status, repeated.json()["error"]) == (400, "not_a_permutation")
    assert (not_in_pool.status, not_in_pool.json()["error"]) == (404, "number_not_in_pool")


def test_a_pool_holds_at_most_ten_numbers(client: Client, make_tenant: Any) -> None:
    digits = [f"55119999900{i:02d}" for i in range(1, 12)]
    world = build_world(client, make_tenant("acme"), *digits)
    world.create_send_key()

    answers = [add(world, world.numbers[each]) for each in digits]

    assert [answer.status for answer in answers] == [201] * 10 + [409]
    assert answers[-1].json()["error"] == "pool_full"
    assert len(pool_of(world)) == 10


def test_another_tenant_and_non_admin_keys_cannot_touch_a_pool(client: Client, make_tenant: Any) -> None:
    world = build_world(client, make_tenant("acme"), NUMBERS[0])
    globex = make_tenant("globex")
    world.create_send_key()
    base = f"/api/api-keys/{world.send_key_id}"

    assert client.get(f"{base}/pool", key=globex.admin).status == 404
    assert add(PoolWorld(client, globex, "", send_key_id=world.send_key_id), world.numbers[NUMBERS[0]]).status == 404
    assert (
        client.put(f"{base}/selection-mode", key=globex.admin, json_body={"numberSelectionMode": "pool"}).status == 404
    )
    assert client.get(f"{base}/pool", key=world.send_key).status == 403
    assert client.get(f"{base}/pool", key=world.tenant.admin).json() == []


def test_rotating_the_webhook_secret_shows_it_once(client: Client, make_tenant: Any) -> None:
    world = build_world(client, make_tenant("acme"))
    world.create_send_key()
    path = f"/api/api-keys/{world.send_key_id}/webhook-secret"

    first = client.post(path, key=world.tenant.admin)
    second = client.post(path, key=world.tenant.admin)

    assert first.status == 201, first.body
    assert first.json()["secret"].startswith("whsec_")
    assert first.json()["secret"] != second.json()["secret"]
    assert (
        first.json()["secret"]
        not in client.get(f"/api/api-keys/{world.send_key_id}", key=world.tenant.admin).body.decode()
    )


def test_each_change_of_the_pool_or_its_mode_is_published_once_and_a_no_op_is_not(
    client: Client, make_tenant: Any, published: list[tuple[str, dict[str, Any]]]
) -> None:
    world = build_world(client, make_tenant("acme"), *NUMBERS[:2])
    world.create_send_key()
    admin, key = world.tenant.admin, world.send_key_id
    first, second = world.numbers[NUMBERS[0]], world.numbers[NUMBERS[1]]
    changed = ("pool.changed", {"tenant": "acme", "keyId": key})
    published.clear()

    add(world, first)
    add(world, second)
    assert published == [changed, changed]

    published.clear()
    client.put(f"/api/api-keys/{key}/pool/reorder", key=admin, json_body={"numberIds": [first, second]})
    client.put(f"/api/api-keys/{key}/selection-mode", key=admin, json_body={"numberSelectionMode": "default"})
    assert published == []

    client.put(f"/api/api-keys/{key}/pool/reorder", key=admin, json_body={"numberIds": [second, first]})
    client.put(f"/api/api-keys/{key}/selection-mode", key=admin, json_body={"numberSelectionMode": "pool"})
    client.delete(f"/api/api-keys/{key}/pool/{first}", key=admin)
    assert published == [changed, changed, changed]

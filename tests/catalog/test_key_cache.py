"""The authorizer's key cache: a warm container looks a key up once per `KEY_CACHE_SECONDS`, a
deleted or demoted key is refused once that has passed, and an unknown key is never kept."""

from __future__ import annotations

from typing import Any

from switchboard import bootstrap
from switchboard.catalog.authentication import KeyAuthenticator
from switchboard.catalog.domain import hash_key
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core.identity import Principal, Scope
from tools.support.api import Client

KEY = "sb_live_" + "a" * 43


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingGrants:
    """The catalog's grant reads, counted."""

    def __init__(self, grants: Any) -> None:
        self._grants = grants
        self.lookups: list[str] = []

    def principal_for_digest(self, digest: str) -> Principal | None:
        self.lookups.append(digest)
        principal: Principal | None = self._grants.principal_for_digest(digest)
        return principal


class Grants:
    def __init__(self) -> None:
        self.by_digest: dict[str, Principal] = {}

    def principal_for_digest(self, digest: str) -> Principal | None:
        return self.by_digest.get(digest)


def principal(*scopes: Scope) -> Principal:
    return Principal(tenant="acme", key_id="key_1", scopes=frozenset(scopes))


def test_a_found_key_is_looked_up_once_per_ttl() -> None:
    grants = Grants()
    grants.by_digest[hash_key(KEY)] = principal(Scope.ADMIN)
    counted, clock = CountingGrants(grants), Clock()
    keys = KeyAuthenticator(counted, ttl_seconds=5, clock=clock)

    answers = [keys.authenticate(KEY) for _ in range(20)]
    clock.now += 4.9
    answers.append(keys.authenticate(KEY))

    assert answers == [principal(Scope.ADMIN)] * 21
    assert counted.lookups == [hash_key(KEY)]  # the digest, never the key itself
    clock.now += 0.1
    keys.authenticate(KEY)
    assert len(counted.lookups) == 2


def test_a_revoked_or_demoted_key_is_refused_after_the_ttl() -> None:
    grants, clock = Grants(), Clock()
    other = "sb_live_" + "b" * 43
    grants.by_digest[hash_key(KEY)] = principal(Scope.ADMIN)
    grants.by_digest[hash_key(other)] = principal(Scope.ADMIN)
    keys = KeyAuthenticator(grants, ttl_seconds=5, clock=clock)
    assert keys.authenticate(KEY) == keys.authenticate(other) == principal(Scope.ADMIN)

    del grants.by_digest[hash_key(KEY)]
    grants.by_digest[hash_key(other)] = principal(Scope.SEND)
    clock.now += 4.9
    assert keys.authenticate(KEY) == keys.authenticate(other) == principal(Scope.ADMIN)  # within the bound
    clock.now += 0.1
    assert keys.authenticate(KEY) is None
    assert keys.authenticate(other) == principal(Scope.SEND)


def test_an_unknown_key_is_looked_up_every_time() -> None:
    grants = Grants()
    counted, clock = CountingGrants(grants), Clock()
    keys = KeyAuthenticator(counted, ttl_seconds=5, clock=clock)

    assert [keys.authenticate(KEY) for _ in range(3)] == [None] * 3
    assert len(counted.lookups) == 3
    grants.by_digest[hash_key(KEY)] = principal(Scope.ADMIN)  # a key created meanwhile works at once
    assert keys.authenticate(KEY) == principal(Scope.ADMIN)


def test_malformed_keys_are_refused_without_a_lookup() -> None:
    counted = CountingGrants(Grants())
    keys = KeyAuthenticator(counted, ttl_seconds=5)
    assert keys.authenticate("") is None
    assert keys.authenticate("Bearer nope") is None
    assert counted.lookups == []


def test_no_cache_at_zero_ttl() -> None:
    grants = Grants()
    grants.by_digest[hash_key(KEY)] = principal(Scope.ADMIN)
    counted = CountingGrants(grants)
    keys = KeyAuthenticator(counted, ttl_seconds=0, clock=Clock())
    keys.authenticate(KEY)
    keys.authenticate(KEY)
    assert len(counted.lookups) == 2


def test_the_cache_holds_at_most_max_keys() -> None:
    grants = Grants()
    presented = [f"sb_live_{index:043d}" for index in range(3)]
    for key in presented:
        grants.by_digest[hash_key(key)] = principal(Scope.ADMIN)
    counted = CountingGrants(grants)
    keys = KeyAuthenticator(counted, ttl_seconds=5, clock=Clock(), max_keys=2)
    for key in presented:
        keys.authenticate(key)
    keys.authenticate(presented[2])
    keys.authenticate(presented[1])
    assert len(counted.lookups) == 3
    keys.authenticate(presented[0])  # the oldest was let go
    assert len(counted.lookups) == 4


def test_a_warm_authorizer_serves_20_requests_with_one_lookup_and_refuses_a_deleted_key_after_the_ttl(
    client: Client, make_tenant: Any, override: Any
) -> None:
    tenant = make_tenant("acme")
    created = client.post("/api/api-keys", key=tenant.admin, json_body={"name": "sender", "scopes": ["admin"]}).json()
    counted, clock = CountingGrants(CatalogRepository(bootstrap.table())), Clock()
    override(key_authenticator=KeyAuthenticator(counted, ttl_seconds=5, clock=clock))

    assert {client.get("/api/numbers", key=created["key"]).status for _ in range(20)} == {200}
    assert counted.lookups == [hash_key(created["key"])]

    assert client.delete(f"/api/api-keys/{created['id']}", key=tenant.admin).status == 204
    clock.now += 4.9
    assert client.get("/api/numbers", key=created["key"]).status == 200  # within the bound
    clock.now += 0.1
    assert client.get("/api/numbers", key=created["key"]).status == 401

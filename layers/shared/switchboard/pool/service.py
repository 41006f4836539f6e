"""Pool use cases: the admin API of an API key's pool, and the sending configuration the worker reads.

The admin side edits the pool item with optimistic concurrency (read, change, conditional write,
re-read on a lost race). The worker side (`SendingConfigSource`) builds a `SendingConfig` from
the catalog and caches it per container for a few seconds: a number's connection state is at
most that stale, and a stale "connected" only costs a skipped instance at send time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Protocol

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import ApiKey, Instance, Number, Provider
from switchboard.core.bus import POOL_CHANGED
from switchboard.core.errors import NotFound, PoolChanged
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.ports import Publisher
from switchboard.pool.domain import (
    NumberRoutes,
    Pool,
    PoolEntry,
    Route,
    SelectionMode,
    SendingConfig,
    unknown_pool_number,
)
from switchboard.providers.kinds import spec_for

if TYPE_CHECKING:
    from switchboard.core.store import Refused, UnitOfWork

SAVE_ATTEMPTS = 3


class Catalog(Protocol):
    def record_key_held(self, uow: UnitOfWork, tenant: str, key_id: str, *, refused: Refused) -> None: ...
    def record_number_held(self, uow: UnitOfWork, tenant: str, number_id: str, *, refused: Refused) -> None: ...
    def get_api_key(self, tenant: str, key_id: str) -> ApiKey: ...
    def get_number(self, tenant: str, number_id: str) -> Number: ...
    def get_numbers(self, tenant: str, number_ids: Collection[str]) -> dict[str, Number]: ...
    def number_by_digits(self, tenant: str, digits: str) -> Number | None: ...
    def instances_of_number(self, number_id: str) -> list[Instance]: ...
    def list_providers(self, tenant: str) -> list[Provider]: ...
    def get_instance(self, tenant: str, name: str) -> Instance: ...
    def get_provider(self, tenant: str, provider_id: str) -> Provider: ...


class Pools(Protocol):
    def get(self, tenant: str, api_key_id: str) -> Pool: ...
    def record_save(self, uow: UnitOfWork, pool: Pool, expected_version: int) -> Pool: ...


class KeyEditor(Protocol):
    def update_api_key(self, principal: Principal, key_id: str, changes: dict[str, Any]) -> ApiKey: ...


class PoolMember(Model):
    """A pool entry as the API lists it: position, number, and whether it can send now."""

    entry: PoolEntry
    api_key_id: str
    priority: int
    number: Number
    connected: bool


def routes_of(number: Number, instances: list[Instance], providers: dict[str, Provider]) -> tuple[Route, ...]:
    """How `number` can send now, in order: provider priority, then instance priority, then name.

    A number of a cloud kind (`always_connected`, e.g. the Meta Cloud API) needs no session: its
    instances of that kind (any state) are its routes, else the tenant's providers of that kind
    with their admin token. Other numbers use their connected `messages` instances.
    """
    ranked: list[tuple[int, int, str, Route]] = []
    for instance in instances:
        provider = providers.get(instance.provider_id)
        if provider is None or instance.kind != "messages":
            continue
        route = instance_route(number, instance, provider)
        if route is not None:
            ranked.append((provider.priority, instance.priority, instance.name, route))
    if number.meta_phone_id and not ranked:
        for provider in providers.values():
            if spec_for(provider.kind).always_connected and provider.admin_token_hint:
                route = Route(
                    provider_id=provider.id,
                    kind=provider.kind,
                    base_url=provider.base_url,
                    provider_instance_id=number.meta_phone_id,
                    meta_phone_id=number.meta_phone_id,
                )
                ranked.append((provider.priority, 0, provider.id, route))
    return tuple(route for *_, route in sorted(ranked, key=lambda ranked_route: ranked_route[:3]))


def instance_route(number: Number, instance: Instance, provider: Provider) -> Route | None:
    """How `number` sends through `instance` now: a connected session, or any instance of a cloud
    kind (its number needs no session); None when it cannot send (disconnected, or a session
    instance of a cloud number and the other way round)."""
    is_cloud = spec_for(provider.kind).always_connected
    if (number.meta_phone_id is not None) != is_cloud or not (is_cloud or instance.connected):
        return None
    return Route(
        provider_id=provider.id,
        kind=provider.kind,
        base_url=provider.base_url,
        provider_instance_id=instance.provider_instance_id,
        instance=instance.name,
        meta_phone_id=number.meta_phone_id,
        source=instance,
    )


class PoolService:
    """Publishes `pool.changed` after a change of a key's selection mode or pool (not after a no-op)."""

    def __init__(self, catalog: Catalog, pools: Pools, keys: KeyEditor, audit: Audit, publisher: Publisher) -> None:
        self._catalog = catalog
        self._pools = pools
        self._keys = keys
        self._audit = audit
        self._publisher = publisher

    def set_mode(self, principal: Principal, key_id: str, mode: SelectionMode) -> ApiKey:
        before = self._catalog.get_api_key(principal.tenant, key_id).number_selection_mode
        updated = self._keys.update_api_key(principal, key_id, {"number_selection_mode": mode})
        if before != updated.number_selection_mode:
            self._changed(principal.tenant, key_id)
        return updated

    def members(self, principal: Principal, key_id: str) -> list[PoolMember]:
        """The pool in priority order; an entry whose number was deleted from the catalog is left out."""
        self._catalog.get_api_key(principal.tenant, key_id)
        pool, numbers = self._live(self._pools.get(principal.tenant, key_id))
        return [self._member(pool, entry, numbers[entry.number_id]) for entry in pool.entries]

    def add(self, principal: Principal, key_id: str, number_id: str) -> PoolMember:
        """Append a number of the caller's tenant. Raises NotFound (the key), UnknownReference (the
        number is not the tenant's; the pool's write checks it again), AlreadyExists, Conflict."""
        self._catalog.get_api_key(principal.tenant, key_id)
        try:
            number = self._catalog.get_number(principal.tenant, number_id)
        except NotFound as exc:
            raise unknown_pool_number() from exc
        added: list[PoolEntry] = []

        def change(pool: Pool) -> Pool:
            changed, entry = pool.added(number_id)
            added[:] = [entry]
            return changed

        pool, _ = self._edit(principal, key_id, "pool.number_added", change, adding=number_id)
        return self._member(pool, added[0], number)

    def remove(self, principal: Principal, key_id: str, number_id: str) -> None:
        """Take a number out; the recipients attached to it lose that affinity (see `usable_affinity`)."""
        self._catalog.get_api_key(principal.tenant, key_id)
        self._edit(principal, key_id, "pool.number_removed", lambda pool: pool.removed(number_id))

    def reorder(self, principal: Principal, key_id: str, number_ids: list[str]) -> list[PoolMember]:
        self._catalog.get_api_key(principal.tenant, key_id)
        pool, numbers = self._edit(principal, key_id, "pool.reordered", lambda pool: pool.reordered(number_ids))
        return [self._member(pool, entry, numbers[entry.number_id]) for entry in pool.entries]

    def _edit(
        self,
        principal: Principal,
        key_id: str,
        action: str,
        change: Callable[[Pool], Pool],
        *,
        adding: str | None = None,
    ) -> tuple[Pool, dict[str, Number]]:
        """Apply `change` to the current pool with a conditional write; a lost race re-reads.

        Entries whose number was deleted from the catalog are dropped first and for good (the
        cleanup of a deleted number): they neither count toward the limit nor need listing in a
        reorder. Returns the saved pool and its numbers (all but one just added).
        """
        for attempt in range(SAVE_ATTEMPTS):
            current = self._pools.get(principal.tenant, key_id)
            live, numbers = self._live(current)
            try:
                saved = self._save(principal.tenant, key_id, change(live), current.version, adding)
            except PoolChanged:
                if attempt == SAVE_ATTEMPTS - 1:
                    raise
                continue
            self._audit.record(principal, action, key_id, before=_audited(current), after=_audited(saved))
            if saved.number_ids() != current.number_ids():
                self._changed(principal.tenant, key_id)
            return saved, numbers
        raise PoolChanged("the pool changed meanwhile; read it again")

    def _save(self, tenant: str, key_id: str, pool: Pool, expected_version: int, adding: str | None) -> Pool:
        """Write `pool` if the stored one still has `expected_version`, the key still exists in the
        tenant and, when a number is being `adding`, that number does too (a deletion racing the
        add must not leave an entry behind): one transaction.

        Raises NotFound (the key is gone, or not the tenant's), UnknownReference (the added number
        is) or PoolChanged (lost the race), in that order when several hold.
        """
        # Imported here: PynamoDB and the item models' base cost the function's cold start, which
        # the routes that never write do not pay.
        from switchboard.core import store  # noqa: PLC0415

        uow = store.unit_of_work()
        self._catalog.record_key_held(uow, tenant, key_id, refused=NotFound("API key not found"))
        if adding is not None:
            self._catalog.record_number_held(uow, tenant, adding, refused=unknown_pool_number())
        saved = self._pools.record_save(uow, pool, expected_version)
        uow.commit()
        return saved

    def _changed(self, tenant: str, key_id: str) -> None:
        self._publisher.publish(POOL_CHANGED, {"tenant": tenant, "keyId": key_id})

    def _live(self, pool: Pool) -> tuple[Pool, dict[str, Number]]:
        """The pool without the entries whose number no longer exists, and the numbers of the rest."""
        numbers = self._catalog.get_numbers(pool.tenant, pool.number_ids()) if pool.entries else {}
        return pool.keeping(set(numbers)), numbers

    def _member(self, pool: Pool, entry: PoolEntry, number: Number) -> PoolMember:
        connected = bool(number.meta_phone_id) or any(
            instance.connected and instance.kind == "messages"
            for instance in self._catalog.instances_of_number(number.id)
        )
        return PoolMember(
            entry=entry,
            api_key_id=pool.api_key_id,
            priority=pool.entries.index(entry),
            number=number,
            connected=connected,
        )


def _audited(pool: Pool) -> dict[str, Any]:
    return {"tenant": pool.tenant, "api_key_id": pool.api_key_id, "number_ids": pool.number_ids()}


class SendingConfigSource:
    """`SendingConfig` per API key, cached per container for `ttl_seconds` (0: no cache)."""

    def __init__(
        self,
        catalog: Catalog,
        pools: Pools,
        *,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._catalog = catalog
        self._pools = pools
        self._ttl = ttl_seconds
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, SendingConfig]] = {}
        self._lock = threading.Lock()

    def get(self, tenant: str, api_key_id: str) -> SendingConfig:
        """Raises NotFound when the key no longer exists (revoked after the message was queued)."""
        now = self._clock()
        with self._lock:
            cached = self._cache.get((tenant, api_key_id))
        if cached and now - cached[0] < self._ttl:
            return cached[1]
        config = self._load(tenant, api_key_id)
        with self._lock:
            self._cache[(tenant, api_key_id)] = (now, config)
        return config

    def pinned(self, tenant: str, api_key_id: str, instance_name: str) -> SendingConfig:
        """The configuration of a message pinned to one instance: its number, with that instance
        (of either role) as its one route while it can send, and no client webhook (the message is
        the console's, not an app's). Never cached: it is read once per test message. Raises
        NotFound when the instance, its number or its provider no longer exists."""
        instance = self._catalog.get_instance(tenant, instance_name)
        number = self._catalog.get_number(tenant, instance.number_id)
        route = instance_route(number, instance, self._catalog.get_provider(tenant, instance.provider_id))
        pinned = NumberRoutes(
            number_id=number.id,
            digits=number.number,
            routes=(route,) if route else (),
            pacing=number.pacing,
            waba_id=number.waba_id,
        )
        return SendingConfig(tenant=tenant, api_key_id=api_key_id, mode="default", default=pinned)

    def _load(self, tenant: str, api_key_id: str) -> SendingConfig:
        key = self._catalog.get_api_key(tenant, api_key_id)
        pool = self._pools.get(tenant, api_key_id) if key.number_selection_mode == "pool" else None
        providers = {provider.id: provider for provider in self._catalog.list_providers(tenant)}
        members: list[NumberRoutes] = []
        for entry in pool.entries if pool else ():
            try:
                number = self._catalog.get_number(tenant, entry.number_id)
            except NotFound:
                continue  # deleted from the catalog: it cannot send
            members.append(self._routes(number, providers, entry))
        default = self._catalog.number_by_digits(tenant, key.default_number) if key.default_number else None
        return SendingConfig(
            tenant=tenant,
            api_key_id=api_key_id,
            mode=key.number_selection_mode,
            webhook_url=key.webhook_url,
            at_least_once=key.at_least_once,
            default=self._routes(default, providers, None) if default else None,
            pool=tuple(members),
        )

    def _routes(self, number: Number, providers: dict[str, Provider], entry: PoolEntry | None) -> NumberRoutes:
        return NumberRoutes(
            number_id=number.id,
            digits=number.number,
            added_at=entry.added_at if entry else None,
            routes=routes_of(number, self._catalog.instances_of_number(number.id), providers),
            pacing=number.pacing,
            waba_id=number.waba_id,
        )

"""Multi-downstream routing: which downstream inbox an instance's traffic goes to, and its upkeep.

Resolution: instance -> owner_tag -> that tenant's mapping -> else the global fallback
(`DOWNSTREAM_*` settings, token in the secret store). Each container caches mappings for
`ttl` seconds, but reads the one-item version stamp on every resolution: any mapping change
anywhere bumps it, so the very next event after a change sees the new mapping in every container.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import secret_hint
from switchboard.core.errors import InvalidInput, NotFound
from switchboard.core.identity import Principal, Scope
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.core.ports import Secrets
from switchboard.core.store import UnitOfWork, unit_of_work
from switchboard.core.urls import check_outbound_url
from switchboard.routing.domain import DownstreamMapping, DownstreamTarget

if TYPE_CHECKING:
    pass

CACHE_SECONDS = 30.0


class MappingReads(Protocol):
    """What resolving a downstream reads: the version stamp and a mapping."""

    def version(self) -> int: ...
    def get_mapping(self, owner_tag: str) -> DownstreamMapping | None: ...


class MappingStore(MappingReads, Protocol):
    def list_mappings(self) -> list[DownstreamMapping]: ...
    def record_mapping(self, uow: UnitOfWork, mapping: DownstreamMapping, *, token_replaced: bool) -> None:
        """Join `uow` with the upsert of a mapping and the bump of the version; without a new
        token the stored mapping must have one (InvalidInput otherwise)."""
        ...

    def delete_mapping(self, owner_tag: str) -> None: ...


class Tenants(Protocol):
    def record_tenant_exists(self, uow: UnitOfWork, owner_tag: str, *, refused: BaseException) -> None: ...


class GlobalDownstream(Model):
    """The fallback from settings; incomplete settings mean there is no fallback."""

    base_url: str | None = None
    account_id: str | None = None
    inbox_id: str | None = None
    token_parameter: str | None = None


def downstream_token_name(secrets: Secrets, owner_tag: str) -> str:
    return secrets.name("tenants", owner_tag, "downstream-token")


@dataclass
class _Cached:
    mapping: DownstreamMapping | None
    at: float


class DownstreamResolver:
    def __init__(
        self,
        store: MappingReads,
        secrets: Secrets,
        fallback: GlobalDownstream,
        *,
        ttl: float = CACHE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._secrets = secrets
        self._fallback = fallback
        self._ttl = ttl
        self._monotonic = monotonic
        self._cache: dict[str, _Cached] = {}
        self._version: int | None = None

    def target_for(self, owner_tag: str | None) -> DownstreamTarget | None:
        """The downstream of an instance with this owner tag, or None when nothing is configured."""
        version = self._store.version()
        changed = version != self._version
        if changed:
            self._cache.clear()
            self._version = version
        mapping = self._mapping(owner_tag) if owner_tag else None
        if mapping is not None:
            token = self._secrets.get(downstream_token_name(self._secrets, mapping.owner_tag), fresh=changed)
            return DownstreamTarget(
                base_url=mapping.base_url,
                account_id=mapping.account_id,
                inbox_id=mapping.inbox_id,
                api_token=token,
                source="tenant",
                owner_tag=mapping.owner_tag,
            )
        return self._global(owner_tag)

    def _mapping(self, owner_tag: str) -> DownstreamMapping | None:
        cached = self._cache.get(owner_tag)
        now = self._monotonic()
        if cached is None or now - cached.at >= self._ttl:
            cached = self._cache[owner_tag] = _Cached(self._store.get_mapping(owner_tag), now)
        return cached.mapping

    def _global(self, owner_tag: str | None) -> DownstreamTarget | None:
        fallback = self._fallback
        if not (fallback.base_url and fallback.account_id and fallback.inbox_id and fallback.token_parameter):
            return None
        return DownstreamTarget(
            base_url=fallback.base_url,
            account_id=int(fallback.account_id),
            inbox_id=int(fallback.inbox_id),
            api_token=self._secrets.get(fallback.token_parameter),
            source="global",
            owner_tag=owner_tag,
        )


class RoutingService:
    """Per-tenant downstream mappings: platform, or the tenant's own admin."""

    def __init__(
        self, store: MappingStore, secrets: Secrets, audit: Audit, *, tenants: Tenants, local_mode: bool
    ) -> None:
        self._store = store
        self._tenants = tenants
        self._secrets = secrets
        self._audit = audit
        self._local_mode = local_mode

    def get_mapping(self, principal: Principal, owner_tag: str) -> DownstreamMapping | None:
        _check_access(principal, owner_tag)
        return self._store.get_mapping(owner_tag)

    def mappings(self) -> dict[str, DownstreamMapping]:
        return {mapping.owner_tag: mapping for mapping in self._store.list_mappings()}

    def put_mapping(
        self,
        principal: Principal,
        owner_tag: str,
        *,
        base_url: str,
        account_id: int,
        inbox_id: int,
        api_token: str | None,
    ) -> DownstreamMapping:
        """Upsert; the URL is checked now and again on every call. Raises InvalidInput, NotFound."""
        _check_access(principal, owner_tag)
        check_outbound_url(base_url, local_mode=self._local_mode)
        before = self._store.get_mapping(owner_tag)
        if api_token:
            hint = secret_hint(api_token)
        elif before is not None:
            hint = before.token_hint
        else:
            raise InvalidInput("downstreamApiToken is required when creating a mapping", code="token_required")
        mapping = DownstreamMapping(
            owner_tag=owner_tag,
            base_url=base_url.rstrip("/"),
            account_id=account_id,
            inbox_id=inbox_id,
            token_hint=hint,
        )
        if api_token:
            self._secrets.put(downstream_token_name(self._secrets, owner_tag), api_token)
        # The mapping of an existing tenant only: both in one transaction.
        uow = unit_of_work()
        self._tenants.record_tenant_exists(uow, owner_tag, refused=NotFound("tenant not found"))
        self._store.record_mapping(uow, mapping, token_replaced=api_token is not None)
        uow.commit()
        self._audit.record(principal, "downstream.updated", owner_tag, before=_audited(before), after=_audited(mapping))
        logger.info("downstream mapping saved", extra={"owner_tag": owner_tag})
        return mapping

    def delete_mapping(self, principal: Principal, owner_tag: str) -> None:
        _check_access(principal, owner_tag)
        before = self._store.get_mapping(owner_tag)
        self._store.delete_mapping(owner_tag)
        self._secrets.delete(downstream_token_name(self._secrets, owner_tag))
        self._audit.record(principal, "downstream.deleted", owner_tag, before=_audited(before))


def _check_access(principal: Principal, owner_tag: str) -> None:
    if not principal.has(Scope.PLATFORM) and principal.tenant != owner_tag:
        raise NotFound("tenant not found")


def _audited(mapping: DownstreamMapping | None) -> dict[str, object] | None:
    """The audit snapshot: `tenant` places it in that tenant's log; the hint is not the token."""
    return None if mapping is None else {"tenant": mapping.owner_tag, **mapping.model_dump(mode="json")}

"""Whether a live connection may still hold its socket, and closing the ones that may not.

A connection was opened on the strength of its principal's grant then; what counts is the grant
now. It is checked in three places:

- `grant_changed`, which the catalog calls once a principal's grant was revoked or changed (a key
  deleted, demoted to `send`, turned from admin to agent, given another attendant): the
  principal's connections are listed (one strongly consistent Query) and those its grant no
  longer allows are closed through the `@connections` API (DeleteConnection) and forgotten;
- $connect: the connection is stored first and the grant read after, so a ticket issued before a
  revocation opens nothing after it. Either the revocation's listing runs after the store (and
  finds the connection) or this read runs after the revocation (and refuses it): no order of the
  two leaves a socket open;
- the notifier, before it posts an event: the current grants of the principals of the targeted
  connections, in one consistent BatchGetItem per event (not per frame, whatever the number of
  tabs of each principal). A connection its grant no longer allows gets no frame and is closed: the
  safety net when a close failed or a $connect raced a revocation.

Nothing positive is cached: a cached grant is exactly the window in which a revoked key still
sees its tenant. A negative answer needs no cache either: the connection is closed and forgotten
on it, so it is not listed again. An API key's grant is read from the catalog, a person's from
the people directory (a disabled person has none); a principal of a kind nothing vouches for
holds no socket.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from typing import Any, Protocol

from botocore.exceptions import ClientError

from switchboard.catalog.domain import ApiKey
from switchboard.core.clock import utcnow
from switchboard.core.identity import Principal, key_of_principal, user_of_principal
from switchboard.core.observability import logger
from switchboard.live.domain import Connection, LiveGrant, live_grant
from switchboard.people.domain import User


class Grants(Protocol):
    def live_grants(self, tenant: str, principals: Collection[str]) -> dict[str, LiveGrant]:
        """The live grant of each principal that still has one; the others are absent."""
        ...


class ApiKeys(Protocol):
    def get_api_keys(self, tenant: str, key_ids: Collection[str]) -> dict[str, ApiKey]: ...


class KeyGrants:
    """The live grants of API keys, read from the catalog (deleted keys are absent)."""

    def __init__(self, keys: ApiKeys) -> None:
        self._keys = keys

    def live_grants(self, tenant: str, principals: Collection[str]) -> dict[str, LiveGrant]:
        by_key = {key_id: principal for principal in principals if (key_id := key_of_principal(principal))}
        if not by_key:
            return {}
        grants: dict[str, LiveGrant] = {}
        for key in self._keys.get_api_keys(tenant, sorted(by_key)).values():
            holder = Principal(
                tenant=key.tenant, key_id=key.id, scopes=frozenset(key.scopes), attendant_id=key.attendant_id
            )
            grant = live_grant(holder)
            if grant is not None:
                grants[by_key[key.id]] = grant
        return grants


class People(Protocol):
    def get_users(self, tenant: str, users: Collection[str]) -> dict[str, User]: ...


class UserGrants:
    """The live grants of people, read from the people directory (one consistent batch read)."""

    def __init__(self, people: People) -> None:
        self._people = people

    def live_grants(self, tenant: str, principals: Collection[str]) -> dict[str, LiveGrant]:
        by_user = {sub: principal for principal in principals if (sub := user_of_principal(principal))}
        if not by_user:
            return {}
        grants: dict[str, LiveGrant] = {}
        for person in self._people.get_users(tenant, sorted(by_user)).values():
            holder = person.principal()
            grant = live_grant(holder) if holder is not None and person.tenant == tenant else None
            if grant is not None:
                grants[by_user[person.id]] = grant
        return grants


class AllGrants:
    """The live grants of principals of every kind, each read from what vouches for its kind."""

    def __init__(self, *kinds: Grants) -> None:
        self._kinds = kinds

    def live_grants(self, tenant: str, principals: Collection[str]) -> dict[str, LiveGrant]:
        grants: dict[str, LiveGrant] = {}
        for kind in self._kinds:
            grants.update(kind.live_grants(tenant, principals))
        return grants


class PrincipalConnections(Protocol):
    def connections_of_principal(self, tenant: str, principal: str, now: datetime) -> list[Connection]: ...
    def delete_connection(self, tenant: str, connection_id: str, principal: str | None) -> None: ...


class LiveAccess:
    def __init__(
        self,
        connections: PrincipalConnections,
        grants: Grants,
        management: Callable[[], Any],
        *,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`management` builds the `apigatewaymanagementapi` client on first use (a function that
        only ever checks grants never pays for it)."""
        self._connections = connections
        self._grants = grants
        self._management = management
        self._clock = clock

    def grant(self, tenant: str, principal: str) -> LiveGrant | None:
        return self._grants.live_grants(tenant, [principal]).get(principal)

    def split(self, tenant: str, connections: Iterable[Connection]) -> tuple[list[Connection], list[Connection]]:
        """The connections their principal's grant still allows, and the others (one read)."""
        listed = list(connections)
        if not listed:
            return [], []
        grants = self._grants.live_grants(tenant, sorted({connection.principal for connection in listed}))
        allowed = [c for c in listed if c.allowed_by(grants.get(c.principal))]
        return allowed, [c for c in listed if not c.allowed_by(grants.get(c.principal))]

    def close(self, connection: Connection, reason: str) -> bool:
        """Close the socket through @connections and forget it; a socket already gone counts as
        closed. Any other failure keeps the connection stored, so the notifier tries again."""
        try:
            self._management().delete_connection(ConnectionId=connection.connection_id)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code != "GoneException" and status != 410:
                logger.warning(
                    "live connection not closed", extra={"connection_id": connection.connection_id, "error": code}
                )
                return False
        except Exception as error:
            logger.warning(
                "live connection not closed",
                extra={"connection_id": connection.connection_id, "error": type(error).__name__},
            )
            return False
        self._connections.delete_connection(connection.tenant, connection.connection_id, connection.principal)
        logger.info(
            "live connection closed",
            extra={"tenant": connection.tenant, "connection_id": connection.connection_id, "reason": reason},
        )
        return True

    def grant_changed(self, tenant: str, principal: str) -> None:
        """Close the principal's connections its grant (read now) no longer allows. Never raises:
        the grant change is committed whatever happens here, and the notifier checks again."""
        try:
            connections = self._connections.connections_of_principal(tenant, principal, self._clock())
            _, revoked = self.split(tenant, connections)
            closed = sum(self.close(connection, "grant changed") for connection in revoked)
        except Exception:
            logger.exception("live connections not checked after a grant change", extra={"tenant": tenant})
            return
        if revoked:
            logger.info(
                "live connections of a changed grant", extra={"tenant": tenant, "closed": closed, "of": len(revoked)}
            )

"""Pushes each domain event of the bus to the open connections of its tenant.

One Query per event lists the tenant's connections; one consistent BatchGetItem reads the current
grants of the principals of those the event is for (`LiveAccess.split`): a connection whose
principal was revoked or changed gets no frame and is closed. The frames go out in parallel
through the API Gateway management API (a few threads: each post is a ~20 ms round trip). A
connection that answers 410 Gone is forgotten; any other failure is logged and skips only that
connection. An event without a tenant reaches nobody.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Protocol

from botocore.exceptions import ClientError

from switchboard.core.clock import utcnow
from switchboard.core.observability import logger
from switchboard.live.access import LiveAccess
from switchboard.live.domain import Connection, frame

WORKERS = 4


class TenantConnections(Protocol):
    def connections_of(self, tenant: str, now: datetime) -> list[Connection]: ...
    def delete_connection(self, tenant: str, connection_id: str, principal: str | None) -> None: ...


class Delivery:
    SENT = "sent"
    GONE = "gone"
    FAILED = "failed"
    REVOKED = "revoked"


class Notifier:
    def __init__(
        self,
        connections: TenantConnections,
        management: Any,
        access: LiveAccess,
        *,
        workers: int = WORKERS,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        """`management`: a boto3 `apigatewaymanagementapi` client (thread-safe, shared by the workers)."""
        self._connections = connections
        self._management = management
        self._access = access
        self._workers = workers
        self._clock = clock

    def notify(self, detail_type: str, detail: dict[str, Any], time: str) -> dict[str, int]:
        """Deliver one event; the count of connections per outcome."""
        tenant = detail.get("tenant")
        if not isinstance(tenant, str) or not tenant:
            logger.warning("event without a tenant not delivered", extra={"detail_type": detail_type})
            return {}
        wanting = [c for c in self._connections.connections_of(tenant, self._clock()) if c.wants(detail)]
        if not wanting:
            return {}
        targets, revoked = self._access.split(tenant, wanting)
        counts: dict[str, int] = {}
        for connection in revoked:
            self._access.close(connection, "grant changed")
            counts[Delivery.REVOKED] = counts.get(Delivery.REVOKED, 0) + 1
        data = frame(detail_type, detail, time)
        outcomes: list[str] = []
        if targets:
            with ThreadPoolExecutor(max_workers=min(self._workers, len(targets))) as pool:
                outcomes = list(pool.map(lambda connection: self._post(connection, data), targets))
        for connection, outcome in zip(targets, outcomes, strict=True):
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome == Delivery.GONE:
                self._connections.delete_connection(connection.tenant, connection.connection_id, connection.principal)
        logger.info("live event delivered", extra={"detail_type": detail_type, "tenant": tenant, **counts})
        return counts

    def _post(self, connection: Connection, data: bytes) -> str:
        try:
            self._management.post_to_connection(ConnectionId=connection.connection_id, Data=data)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "GoneException" or status == 410:
                return Delivery.GONE
            logger.warning("live post failed", extra={"connection_id": connection.connection_id, "error": code})
            return Delivery.FAILED
        except Exception as error:
            logger.warning(
                "live post failed", extra={"connection_id": connection.connection_id, "error": type(error).__name__}
            )
            return Delivery.FAILED
        return Delivery.SENT

"""The composition root the function entry points use: every capability's wiring, in one place.

Each capability builds its own adapters and services once per container in its `wiring`
module; routes receive them with Powertools' `Depends`, workers from their function's module.
`reset()` forgets everything built (tests, after changing the environment).
"""

from __future__ import annotations

from switchboard.audit.wiring import audit_log
from switchboard.call_limit.wiring import calls_config_service, line_repository, subscription_service
from switchboard.calls.wiring import call_repository, call_service, dialing_service, reconcile_queue, reconciler
from switchboard.catalog.wiring import catalog_repository, catalog_service
from switchboard.connection_state.wiring import connection_state_repository, connection_state_service, status_reads
from switchboard.core.components import reset
from switchboard.core.wiring import client, secrets, session, table
from switchboard.live.wiring import connection_service, live_access, live_grants, live_repository, ticket_service
from switchboard.live.wiring import notifier as live_notifier
from switchboard.messages.wiring import (
    client_webhook_deliverer,
    client_webhook_worker,
    message_service,
    send_queue,
    send_worker,
)
from switchboard.pool.wiring import pool_service, sending_config_source
from switchboard.providers.wiring import targets
from switchboard.routing.wiring import (
    downstream_client,
    downstream_resolver,
    forward_idempotency_config,
    forward_once,
    outbox_service,
    routing_repository,
    routing_service,
)
from switchboard.usage.wiring import usage_recorder
from switchboard.webhooks.wiring import event_handlers, ingest_service

__all__ = [
    "audit_log",
    "call_repository",
    "call_service",
    "calls_config_service",
    "catalog_repository",
    "catalog_service",
    "client",
    "client_webhook_deliverer",
    "client_webhook_worker",
    "connection_service",
    "connection_state_repository",
    "connection_state_service",
    "dialing_service",
    "downstream_client",
    "downstream_resolver",
    "event_handlers",
    "forward_idempotency_config",
    "forward_once",
    "ingest_service",
    "line_repository",
    "live_access",
    "live_grants",
    "live_notifier",
    "live_repository",
    "message_service",
    "outbox_service",
    "pool_service",
    "reconcile_queue",
    "reconciler",
    "reset",
    "routing_repository",
    "routing_service",
    "secrets",
    "send_queue",
    "send_worker",
    "sending_config_source",
    "session",
    "status_reads",
    "subscription_service",
    "table",
    "targets",
    "ticket_service",
    "usage_recorder",
]

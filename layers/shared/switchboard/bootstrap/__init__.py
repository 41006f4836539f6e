"""The composition root: every adapter and service of every capability, and one profile per
function that its entry point calls at cold start.

`components.py` holds the machinery (a named factory, the components of one container), one
module per capability builds that capability's adapters and services (they may use each other's:
only here do capabilities meet), `webhooks.py` builds the table of each provider event's effects
and hands it to the ingest, and `profiles.py` composes what each function's entry point needs.
Nothing outside the entry points (functions/*/app.py, `python -m switchboard`), devstack, tools
and tests imports this package.

The components re-exported here, called without arguments, are this process's: the ones a
function built without arguments of its own uses (tests read and seed through them).
"""

from __future__ import annotations

from switchboard.bootstrap.audit import audit_log
from switchboard.bootstrap.calls import call_repository, call_service, dialing_service, reconcile_queue, reconciler
from switchboard.bootstrap.catalog import catalog_repository, catalog_service
from switchboard.bootstrap.components import Components, current, overridden, reset
from switchboard.bootstrap.connection_state import (
    connection_state_repository,
    connection_state_service,
    status_reads,
)
from switchboard.bootstrap.core import event_publisher, secrets, table
from switchboard.bootstrap.health import health_watch
from switchboard.bootstrap.lines import calls_config_service, line_repository, subscription_service
from switchboard.bootstrap.live import connection_service, live_access, live_grants, live_repository, ticket_service
from switchboard.bootstrap.media import message_media
from switchboard.bootstrap.messages import client_webhook_deliverer, client_webhook_worker, message_service, send_queue
from switchboard.bootstrap.people import people_directory, user_authenticator, user_pool, users_service
from switchboard.bootstrap.pool import pool_service, sending_config_source
from switchboard.bootstrap.profiles import (
    MissingSetting,
    authorizer,
    calls_api,
    catalog_api,
    client_webhooks,
    forwarder,
    live_connections,
    live_notifier,
    live_tickets_api,
    messages_api,
    ops_api,
    outgoing_api,
    pool_api,
    reconcile_scheduler,
    reconcile_worker,
    routing_sweep,
    send_worker,
    tenants_api,
    users_api,
    webhooks_api,
)
from switchboard.bootstrap.providers import provider_client, targets
from switchboard.bootstrap.routing import (
    downstream_client,
    downstream_resolver,
    forward_idempotency_config,
    forward_once,
    helpdesk_attachments,
    message_links,
    outbox_service,
    reply_statuses,
    routing_repository,
    routing_service,
)
from switchboard.bootstrap.usage import outgoing_usage, usage_recorder
from switchboard.bootstrap.webhooks import accept_writes, event_handlers, ingest_service

__all__ = [
    "Components",
    "MissingSetting",
    "accept_writes",
    "audit_log",
    "authorizer",
    "call_repository",
    "call_service",
    "calls_api",
    "calls_config_service",
    "catalog_api",
    "catalog_repository",
    "catalog_service",
    "client_webhook_deliverer",
    "client_webhook_worker",
    "client_webhooks",
    "connection_service",
    "connection_state_repository",
    "connection_state_service",
    "current",
    "dialing_service",
    "downstream_client",
    "downstream_resolver",
    "event_handlers",
    "event_publisher",
    "forward_idempotency_config",
    "forward_once",
    "forwarder",
    "health_watch",
    "helpdesk_attachments",
    "ingest_service",
    "line_repository",
    "live_access",
    "live_connections",
    "live_grants",
    "live_notifier",
    "live_repository",
    "live_tickets_api",
    "message_links",
    "message_media",
    "message_service",
    "messages_api",
    "ops_api",
    "outbox_service",
    "outgoing_api",
    "outgoing_usage",
    "overridden",
    "people_directory",
    "pool_api",
    "pool_service",
    "provider_client",
    "reconcile_queue",
    "reconcile_scheduler",
    "reconcile_worker",
    "reconciler",
    "reply_statuses",
    "reset",
    "routing_repository",
    "routing_service",
    "routing_sweep",
    "secrets",
    "send_queue",
    "send_worker",
    "sending_config_source",
    "status_reads",
    "subscription_service",
    "table",
    "targets",
    "tenants_api",
    "ticket_service",
    "usage_recorder",
    "user_authenticator",
    "user_pool",
    "users_api",
    "users_service",
    "webhooks_api",
]

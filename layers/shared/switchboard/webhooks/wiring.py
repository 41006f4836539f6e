"""Builds the webhook ingest and the effects of each provider event, once per container.

The ingest runs every effect registered for an event's name, in order; each effect belongs to
the capability that owns the state it changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.call_limit.wiring import calls_config_service
from switchboard.calls.wiring import call_service, reconcile_queue
from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import client, secrets, table
from switchboard.messages.wiring import receipt_effect
from switchboard.routing.wiring import outbox_service, routing_repository
from switchboard.usage.wiring import usage_recorder
from switchboard.webhooks.events import EffectHandler, ProviderEvent

if TYPE_CHECKING:
    from switchboard.webhooks.service import IngestService


@component
def ingest_service() -> IngestService:
    """Also used by reconciliation: `reapply_pending()` applies events a crash left pending."""
    from switchboard.webhooks.dynamo import EventStore
    from switchboard.webhooks.service import IngestService

    return IngestService(catalog_repository(), secrets(), EventStore(table()), event_handlers())


def _count_incoming(event: ProviderEvent) -> None:
    from switchboard.usage.service import IncomingUsageHandler

    IncomingUsageHandler(usage_recorder())(event)


def _forward_incoming(event: ProviderEvent) -> None:
    from switchboard.routing.forward_queue import SqsForwardQueue
    from switchboard.routing.forwarder import IncomingForwardHandler

    url = get_settings().forward_queue_url
    if not url:
        raise RuntimeError("FORWARD_QUEUE_URL is not set")
    IncomingForwardHandler(SqsForwardQueue(client("sqs"), url))(event)


def _connection_state(event: ProviderEvent) -> None:
    from switchboard.routing.outbox import REQUEST_BUDGET_SECONDS
    from switchboard.routing.service import ConnectionStateHandler

    drain = outbox_service().drain
    ConnectionStateHandler(routing_repository(), lambda name: drain(name, REQUEST_BUDGET_SECONDS))(event)


def _apply_receipt(event: ProviderEvent) -> None:
    receipt_effect()(event)


def _reconcile_calls_on_reconnect(event: ProviderEvent) -> None:
    from switchboard.calls.reconcile import ReconcileOnReconnect

    ReconcileOnReconnect(reconcile_queue())(event)


@component
def event_handlers() -> dict[str, list[EffectHandler]]:
    """The effects of each provider webhook event, in order; the ingest runs them all."""
    handlers: dict[str, list[EffectHandler]] = {
        name: [] for name in ("message", "receipt", "connection", "call", "call_settings")
    }
    handlers["call_settings"].append(lambda event: calls_config_service().on_call_settings(event))
    handlers["connection"].append(lambda event: calls_config_service().on_connection(event))
    handlers["message"] += [_count_incoming, _forward_incoming]  # usage, then the downstream
    handlers["connection"].append(_connection_state)  # state by seq, then the outbox
    handlers["receipt"].append(_apply_receipt)  # status, then the client webhook
    handlers["call"].append(lambda event: call_service().on_call_event(event))
    handlers["connection"].append(_reconcile_calls_on_reconnect)  # calls may have moved while away
    return handlers

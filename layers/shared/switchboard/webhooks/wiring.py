"""Builds the webhook ingest and the effects of each provider event, once per container.

An event's effects come in two registries, each effect owned by the capability whose state it
changes: the writes joining the transaction that accepts the event (`accept_writes`: they commit
exactly once with it) and the effects run after that commit, in order (`event_handlers`). A
write whose condition could be refused (a state guarded by `seq`) is an after-commit effect: in
the transaction it would cancel the event's acceptance with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.call_limit.wiring import calls_config_service
from switchboard.calls.wiring import call_service, reconcile_queue
from switchboard.catalog.events import ProviderEvent
from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.observability import logger
from switchboard.core.settings import get_settings
from switchboard.core.store import UnitOfWork
from switchboard.core.wiring import client, secrets, table
from switchboard.messages.wiring import heard_from, receipt_effect
from switchboard.usage.wiring import incoming_usage
from switchboard.webhooks.events import AcceptWrite, EffectHandler

if TYPE_CHECKING:
    from switchboard.webhooks.service import IngestService


@component
def ingest_service() -> IngestService:
    """Also used by reconciliation: `reapply_pending()` applies events a crash left pending."""
    from switchboard.webhooks.dynamo import EventStore
    from switchboard.webhooks.service import IngestService

    return IngestService(catalog_repository(), secrets(), EventStore(table()), event_handlers(), writes=accept_writes())


def _count_incoming(uow: UnitOfWork, event: ProviderEvent) -> None:
    incoming_usage().record(uow, event)


def _mark_heard(uow: UnitOfWork, event: ProviderEvent) -> None:
    heard_from().record(uow, event)


def _received_metric(event: ProviderEvent) -> None:
    incoming_usage().received(event)


def _forward_incoming(event: ProviderEvent) -> None:
    from switchboard.routing.forward_queue import SqsForwardQueue
    from switchboard.routing.forwarder import IncomingForwardHandler

    url = get_settings().forward_queue_url
    if not url:
        raise RuntimeError("FORWARD_QUEUE_URL is not set")
    IncomingForwardHandler(SqsForwardQueue(client("sqs"), url))(event)


def _connection_state(event: ProviderEvent) -> None:
    """The state by `seq`, or confirmed by a status read; then the ban watch and the outbox."""
    from switchboard.connection_state.wiring import connection_state_service

    connection_state_service().on_event(event)


def _apply_receipt(event: ProviderEvent) -> None:
    receipt_effect()(event)


def _health_on_receipt(event: ProviderEvent) -> None:
    """A delivery receipt counts toward the instance's delivery ratio (ban watch)."""
    from switchboard.health.wiring import health_watch

    if event.data.get("status") != "delivered":
        return
    try:
        health_watch().delivered(event.instance)
    except Exception:  # the ban watch never fails the event: the receipt's own effect is applied
        logger.exception("delivery not counted by the ban watch", extra={"instance": event.instance.key})


def _reconcile_calls_on_reconnect(event: ProviderEvent) -> None:
    from switchboard.calls.reconcile import ReconcileOnReconnect

    ReconcileOnReconnect(reconcile_queue())(event)


@component
def accept_writes() -> dict[str, list[AcceptWrite]]:
    """The writes of each provider webhook event that join the transaction accepting it."""
    # Usage: counted once with the event, no marker of its own. The sender, heard by the
    # instance's number: no new contact of it for the next 24 h (pacing, the ban watch).
    return {"message": [_count_incoming, _mark_heard]}


@component
def event_handlers() -> dict[str, list[EffectHandler]]:
    """The effects of each provider webhook event run after its acceptance committed, in order."""
    handlers: dict[str, list[EffectHandler]] = {
        name: [] for name in ("message", "receipt", "connection", "call", "call_settings")
    }
    handlers["call_settings"].append(lambda event: calls_config_service().on_call_settings(event))
    handlers["connection"].append(lambda event: calls_config_service().on_connection(event))
    handlers["message"] += [_forward_incoming, _received_metric]  # the downstream, then the metric
    handlers["connection"].append(_connection_state)  # state (by seq or a status read), ban watch, outbox
    handlers["receipt"].append(_apply_receipt)  # status, then the client webhook
    handlers["receipt"].append(_health_on_receipt)
    handlers["call"].append(lambda event: call_service().on_call_event(event))
    handlers["connection"].append(_reconcile_calls_on_reconnect)  # calls may have moved while away
    return handlers

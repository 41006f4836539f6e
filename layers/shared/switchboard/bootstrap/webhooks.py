"""Builds the webhook ingest and hands it the effects of each provider event, once per container.

An event's effects come in two tables, each effect owned by the capability whose state it
changes: the writes joining the transaction that accepts the event (`accept_writes`: they commit
exactly once with it) and the effects run after that commit, in order (`event_handlers`). A
write whose condition could be refused (a state guarded by `seq`) is an after-commit effect: in
the transaction it would cancel the event's acceptance with it, unless it gives way (the heard
mark, which only moves forward, is an optional update). The webhooks capability knows
the tables' shape alone; which capability acts on which event is decided here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.calls import call_service, reconcile_queue
from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import secrets, table
from switchboard.bootstrap.lines import calls_config_service
from switchboard.bootstrap.media import message_media
from switchboard.bootstrap.messages import answers, heard_from, incoming_log, receipt_effect
from switchboard.bootstrap.usage import incoming_usage
from switchboard.core.observability import logger

if TYPE_CHECKING:
    from switchboard.catalog.events import ProviderEvent
    from switchboard.core.store import UnitOfWork
    from switchboard.webhooks.events import AcceptWrite, EffectHandler
    from switchboard.webhooks.ignored import IgnoredEvents
    from switchboard.webhooks.service import IngestService


@component
def ingest_service(c: Components) -> IngestService:
    """Also used by reconciliation: `reapply_pending()` applies events a crash left pending."""
    from switchboard.webhooks.dynamo import EventStore
    from switchboard.webhooks.service import IngestService

    # The claim check needs the media bucket; a function without it (reconciliation applies
    # pending events, it never receives a delivery) gets none.
    media = message_media(c) if c.settings.media_bucket else None
    return IngestService(
        catalog_repository(c),
        secrets(c),
        EventStore(table(c)),
        event_handlers(c),
        writes=accept_writes(c),
        media=media,
        answers=answers(c),
    )


@component
def ignored_events(c: Components) -> IgnoredEvents:
    from switchboard.webhooks.dynamo import EventStore
    from switchboard.webhooks.ignored import IgnoredEvents

    return IgnoredEvents(catalog_repository(c), EventStore(table(c)))


@component
def accept_writes(c: Components) -> dict[str, list[AcceptWrite]]:
    """The writes of each provider webhook event that join the transaction accepting it."""

    def count_incoming(uow: UnitOfWork, event: ProviderEvent) -> None:
        incoming_usage(c).record(uow, event)

    def mark_heard(uow: UnitOfWork, event: ProviderEvent) -> None:
        heard_from(c).record(uow, event)

    def log_incoming(uow: UnitOfWork, event: ProviderEvent) -> None:
        incoming_log(c).record(uow, event)

    # Usage: counted once with the event, no marker of its own. The sender, heard by the
    # instance's number: no new contact of it for the next 24 h (pacing, the ban watch). The
    # message in the message log, with it.
    return {"message": [count_incoming, mark_heard, log_incoming]}


@component
def event_handlers(c: Components) -> dict[str, list[EffectHandler]]:
    """The effects of each provider webhook event run after its acceptance committed, in order.

    Each effect builds what it needs on the first event that reaches it, not with the table."""

    def forward_incoming(event: ProviderEvent) -> None:
        from switchboard.routing.forward_queue import SqsForwardQueue
        from switchboard.routing.forwarder import IncomingForwardHandler

        url = c.settings.forward_queue_url
        if not url:
            raise RuntimeError("FORWARD_QUEUE_URL is not set")
        IncomingForwardHandler(SqsForwardQueue(c.client("sqs"), url))(event)

    def received_metric(event: ProviderEvent) -> None:
        incoming_usage(c).received(event)

    def choice_webhook(event: ProviderEvent) -> None:
        """The customer's answer to a menu, to the client webhook of the key that sent it."""
        from switchboard.bootstrap.messages import client_webhook_queue
        from switchboard.messages.choices import ChoiceWebhooks

        ChoiceWebhooks(client_webhook_queue(c))(event)

    def connection_state(event: ProviderEvent) -> None:
        """The state by `seq`, or confirmed by a status read; then the ban watch and the outbox."""
        from switchboard.bootstrap.connection_state import connection_state_service

        connection_state_service(c).on_event(event)

    def apply_receipt(event: ProviderEvent) -> None:
        receipt_effect(c)(event)

    def reply_status(event: ProviderEvent) -> None:
        """A receipt of an agent's reply, shown on it in the helpdesk (best effort, never raises)."""
        from switchboard.bootstrap.routing import reply_statuses

        statuses = reply_statuses(c)
        if statuses is not None:
            statuses(event)

    def health_on_receipt(event: ProviderEvent) -> None:
        """A delivery receipt counts toward the instance's delivery ratio (ban watch)."""
        from switchboard.bootstrap.health import health_watch

        if event.data.get("status") != "delivered":
            return
        try:
            health_watch(c).delivered(event.instance)
        except Exception:  # the ban watch never fails the event: the receipt's own effect is applied
            logger.exception("delivery not counted by the ban watch", extra={"instance": event.instance.key})

    def reconcile_calls_on_reconnect(event: ProviderEvent) -> None:
        from switchboard.calls.reconcile import ReconcileOnReconnect

        ReconcileOnReconnect(reconcile_queue(c))(event)

    def call_settings(event: ProviderEvent) -> None:
        calls_config_service(c).on_call_settings(event)

    def lines_on_connection(event: ProviderEvent) -> None:
        calls_config_service(c).on_connection(event)

    def call_event(event: ProviderEvent) -> None:
        call_service(c).on_call_event(event)

    def template_status(event: ProviderEvent) -> None:
        """A template's new status, in the cache its account's sends are checked against."""
        from switchboard.bootstrap.templates import template_service

        data = event.data
        template_service(c).on_status(
            event.instance.tenant,
            data["wabaId"],
            name=data["name"],
            language=data["language"],
            status=data["status"],
            category=data.get("category"),
        )

    return {
        # The downstream, the metric, then the answer to a menu to the key that sent it.
        "message": [forward_incoming, received_metric, choice_webhook],
        # status, then the client webhook; the ban watch; an agent's reply's status in the helpdesk
        "receipt": [apply_receipt, health_on_receipt, reply_status],
        "connection": [
            lines_on_connection,
            connection_state,  # state (by seq or a status read), ban watch, outbox
            reconcile_calls_on_reconnect,  # calls may have moved while away
        ],
        "call": [call_event],
        "call_settings": [call_settings],
        "template_status": [template_status],
    }

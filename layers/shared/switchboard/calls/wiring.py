"""Builds the call records, dialing and reconciliation once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.call_limit.wiring import calls_config_service
from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import client, event_publisher, table
from switchboard.health.wiring import health_watch
from switchboard.providers.wiring import targets
from switchboard.routing.wiring import outbox_service

if TYPE_CHECKING:
    from switchboard.calls.dialing import DialService
    from switchboard.calls.dynamo import AttachmentRepository, CallRepository, ReconcileGate
    from switchboard.calls.media import MediaService
    from switchboard.calls.on_demand import ReconcileOnDemand
    from switchboard.calls.reconcile import Reconciler
    from switchboard.calls.reconcile_queue import ReconcileQueue
    from switchboard.calls.service import CallService


@component
def call_repository() -> CallRepository:
    from switchboard.calls.dynamo import CallRepository

    return CallRepository(table())


@component
def call_service() -> CallService:
    from switchboard.calls.service import CallService

    return CallService(call_repository(), catalog_repository(), targets(), publisher=event_publisher())


@component
def reconcile_queue() -> ReconcileQueue:
    from switchboard.calls.reconcile_queue import ReconcileQueue

    return ReconcileQueue(client("sqs"), get_settings().reconcile_queue_url)


@component
def dialing_service() -> DialService:
    from switchboard.calls.dialing import DialService

    return DialService(
        catalog_repository(),
        call_repository(),
        call_service(),
        targets(),
        reconcile_queue(),
        capabilities=lambda instance: calls_config_service().capabilities(instance),
        refresh_limit=lambda instance: calls_config_service().refresh_from_status(instance),
    )


@component
def reconciler() -> Reconciler:
    """Every instance: its health (an expired pause announced) and its connection state from its
    provider; calls instances: limit, live calls, reservations; messaging instances: their outbox."""
    from switchboard.calls.reconcile import Reconciler
    from switchboard.connection_state.wiring import status_reads

    return Reconciler(
        catalog_repository(),
        call_repository(),
        call_service(),
        targets(),
        read_status=lambda instance: status_reads().check(instance),
        apply_limit=lambda instance, status: calls_config_service().apply_status(instance, status),
        drain_outbox=lambda name: outbox_service().drain(name),
        # The ban watch is built on the first instance reconciled, not with the reconciler.
        refresh_health=lambda instance: health_watch().refresh(instance),
    )


@component
def attachment_repository() -> AttachmentRepository:
    from switchboard.calls.dynamo import AttachmentRepository

    return AttachmentRepository(table())


@component
def media_service() -> MediaService:
    from switchboard.calls.media import MediaService

    return MediaService(call_service(), catalog_repository(), targets(), attachment_repository())


@component
def reconcile_gate() -> ReconcileGate:
    from switchboard.calls.dynamo import ReconcileGate

    return ReconcileGate(table())


@component
def reconcile_on_demand() -> ReconcileOnDemand:
    """The reconcile route's: one real reconciliation per connection per window, across replicas."""
    from switchboard.calls.on_demand import ReconcileOnDemand

    return ReconcileOnDemand(catalog_repository(), reconciler(), reconcile_gate())

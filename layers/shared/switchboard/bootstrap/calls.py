"""Builds the call records, dialing and reconciliation once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import event_publisher, table
from switchboard.bootstrap.health import health_watch
from switchboard.bootstrap.lines import calls_config_service, line_repository
from switchboard.bootstrap.providers import targets
from switchboard.bootstrap.routing import outbox_service

if TYPE_CHECKING:
    from switchboard.calls.dialing import DialService
    from switchboard.calls.dynamo import AttachmentRepository, CallRepository, ReconcileGate
    from switchboard.calls.fleet import FleetGauges
    from switchboard.calls.media import MediaService
    from switchboard.calls.on_demand import ReconcileOnDemand
    from switchboard.calls.reconcile import Reconciler, TenantCatalog
    from switchboard.calls.reconcile_queue import ReconcileQueue
    from switchboard.calls.service import CallService


@component
def call_repository(c: Components) -> CallRepository:
    from switchboard.calls.dynamo import CallRepository

    return CallRepository(table(c))


@component
def call_service(c: Components) -> CallService:
    from switchboard.calls.service import CallService

    return CallService(call_repository(c), catalog_repository(c), targets(c), publisher=event_publisher(c))


@component
def reconcile_queue(c: Components) -> ReconcileQueue:
    from switchboard.calls.reconcile_queue import ReconcileQueue

    return ReconcileQueue(c.client("sqs"), c.settings.reconcile_queue_url)


@component
def scheduled_instances(c: Components) -> TenantCatalog:
    """What the reconcile schedule lists every instance from: the catalog."""
    return catalog_repository(c)


def fleet_gauges(c: Components) -> FleetGauges:
    """A new count for each run of the schedule (not a component: a container runs it again)."""
    from datetime import timedelta

    from switchboard.calls.fleet import FleetGauges
    from switchboard.health.dynamo import HealthRepository

    down_after = timedelta(minutes=c.settings.instance_down_minutes)
    return FleetGauges(HealthRepository(table(c)), line_repository(c), down_after=down_after)


@component
def dialing_service(c: Components) -> DialService:
    from switchboard.calls.dialing import DialService

    return DialService(
        catalog_repository(c),
        call_repository(c),
        call_service(c),
        targets(c),
        reconcile_queue(c),
        capabilities=lambda instance: calls_config_service(c).capabilities(instance),
        refresh_limit=lambda instance: calls_config_service(c).refresh_from_status(instance),
    )


@component
def reconciler(c: Components) -> Reconciler:
    """Every instance: its health (an expired pause announced) and its connection state from its
    provider; calls instances: limit, live calls, reservations; messaging instances: their outbox."""
    from switchboard.bootstrap.connection_state import status_reads
    from switchboard.calls.reconcile import Reconciler

    return Reconciler(
        catalog_repository(c),
        call_repository(c),
        call_service(c),
        targets(c),
        read_status=lambda instance: status_reads(c).check(instance),
        apply_limit=lambda instance, status: calls_config_service(c).apply_status(instance, status),
        drain_outbox=lambda name: outbox_service(c).drain(name),
        # The ban watch is built on the first instance reconciled, not with the reconciler.
        refresh_health=lambda instance: health_watch(c).refresh(instance),
    )


@component
def attachment_repository(c: Components) -> AttachmentRepository:
    from switchboard.calls.dynamo import AttachmentRepository

    return AttachmentRepository(table(c))


@component
def media_service(c: Components) -> MediaService:
    from switchboard.calls.media import MediaService

    return MediaService(call_service(c), catalog_repository(c), targets(c), attachment_repository(c))


@component
def reconcile_gate(c: Components) -> ReconcileGate:
    from switchboard.calls.dynamo import ReconcileGate

    return ReconcileGate(table(c))


@component
def reconcile_on_demand(c: Components) -> ReconcileOnDemand:
    """The reconcile route's: one real reconciliation per connection per window, across replicas."""
    from switchboard.calls.on_demand import ReconcileOnDemand

    return ReconcileOnDemand(catalog_repository(c), reconciler(c), reconcile_gate(c))

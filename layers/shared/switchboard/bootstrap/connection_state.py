"""Builds the connection state's repository and service once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import event_publisher, table
from switchboard.bootstrap.health import health_watch
from switchboard.bootstrap.providers import targets
from switchboard.bootstrap.routing import outbox_service

if TYPE_CHECKING:
    from switchboard.connection_state.dynamo import ConnectionStateRepository
    from switchboard.connection_state.service import ConnectionStateService


@component
def connection_state_repository(c: Components) -> ConnectionStateRepository:
    from switchboard.connection_state.dynamo import ConnectionStateRepository

    return ConnectionStateRepository(table(c))


@component
def connection_state_service(c: Components) -> ConnectionStateService:
    """Webhooks and the reconciler's: a connected instance's outbox is drained at once (a webhook's
    drain stays within the request's budget)."""
    from switchboard.connection_state.service import ConnectionStateService
    from switchboard.routing.outbox import REQUEST_BUDGET_SECONDS

    return ConnectionStateService(
        connection_state_repository(c),
        targets(c),
        event_publisher(c),
        # The ban watch and the outbox are built on first use, not with the service.
        health=lambda: health_watch(c),
        drain=lambda key: outbox_service(c).drain(key, REQUEST_BUDGET_SECONDS),
    )


@component
def status_reads(c: Components) -> ConnectionStateService:
    """The catalog's (after an instance is saved) and the reconciler's: no outbox drain of its own
    (the reconciler drains every instance it reads; inside an API request a reply arriving now finds
    the instance connected and leaves at once)."""
    from switchboard.connection_state.service import ConnectionStateService

    return ConnectionStateService(
        connection_state_repository(c), targets(c), event_publisher(c), health=lambda: health_watch(c), drain=None
    )

"""Builds the live updates' repository, services, notifier and management API client once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.catalog.wiring import catalog_repository
from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import session, table

if TYPE_CHECKING:
    from switchboard.live.access import KeyGrants, LiveAccess
    from switchboard.live.dynamo import LiveRepository
    from switchboard.live.notifier import Notifier
    from switchboard.live.service import ConnectionService, TicketService


@component
def live_repository() -> LiveRepository:
    from switchboard.live.dynamo import LiveRepository

    return LiveRepository(table())


@component
def ticket_service() -> TicketService:
    from switchboard.live.service import TicketService

    return TicketService(live_repository(), get_settings().live_url)


@component
def live_grants() -> KeyGrants:
    from switchboard.live.access import KeyGrants

    return KeyGrants(catalog_repository())


@component
def connection_service() -> ConnectionService:
    from switchboard.live.service import ConnectionService

    return ConnectionService(live_repository(), live_repository(), live_grants())


@component
def management_api() -> object:
    """The API Gateway management API of the live WebSocket API (`LIVE_MANAGEMENT_URL`)."""
    endpoint = get_settings().live_management_url
    if not endpoint:
        raise RuntimeError("LIVE_MANAGEMENT_URL is not configured")
    return session().client("apigatewaymanagementapi", endpoint_url=endpoint)


@component
def live_access() -> LiveAccess:
    """Closes live connections whose principal's grant no longer allows them (the catalog's
    `GrantChanges` hook, and the notifier's check before it posts)."""
    from switchboard.live.access import LiveAccess

    return LiveAccess(live_repository(), live_grants(), management_api)


@component
def notifier() -> Notifier:
    from switchboard.live.notifier import Notifier

    return Notifier(live_repository(), management_api(), live_access())

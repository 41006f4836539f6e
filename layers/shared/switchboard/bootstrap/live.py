"""Builds the live updates' repository, services, notifier and management API client once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.catalog import catalog_repository
from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import table
from switchboard.bootstrap.people import people_directory

if TYPE_CHECKING:
    from switchboard.live.access import AllGrants, LiveAccess
    from switchboard.live.dynamo import LiveRepository
    from switchboard.live.notifier import Notifier
    from switchboard.live.service import ConnectionService, TicketService


@component
def live_repository(c: Components) -> LiveRepository:
    from switchboard.live.dynamo import LiveRepository

    return LiveRepository(table(c))


@component
def ticket_service(c: Components) -> TicketService:
    from switchboard.live.service import TicketService

    return TicketService(live_repository(c), c.settings.live_url)


@component
def live_grants(c: Components) -> AllGrants:
    """API keys' grants from the catalog, people's from the people directory."""
    from switchboard.live.access import AllGrants, KeyGrants, UserGrants

    return AllGrants(KeyGrants(catalog_repository(c)), UserGrants(people_directory(c)))


@component
def connection_service(c: Components) -> ConnectionService:
    from switchboard.live.service import ConnectionService

    return ConnectionService(live_repository(c), live_repository(c), live_grants(c))


@component
def management_api(c: Components) -> object:
    """The API Gateway management API of the live WebSocket API (`LIVE_MANAGEMENT_URL`)."""
    endpoint = c.settings.live_management_url
    if not endpoint:
        raise RuntimeError("LIVE_MANAGEMENT_URL is not configured")
    return c.session.client("apigatewaymanagementapi", endpoint_url=endpoint)


@component
def live_access(c: Components) -> LiveAccess:
    """Closes live connections whose principal's grant no longer allows them (the catalog's
    `GrantChanges` hook, and the notifier's check before it posts)."""
    from switchboard.live.access import LiveAccess

    return LiveAccess(live_repository(c), live_grants(c), lambda: management_api(c))


@component
def notifier(c: Components) -> Notifier:
    from switchboard.live.notifier import Notifier

    return Notifier(live_repository(c), management_api(c), live_access(c))

"""An instance's health (ban watch) and its events webhook's signing secret (scope admin)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.catalog.deps import catalog_service
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.health.deps import events_webhook_secrets, health_watch
from switchboard.health.ports import EventsWebhookSecrets
from switchboard.health.schemas import EventsWebhookSecretView, HealthView

if TYPE_CHECKING:
    from switchboard.catalog.service import CatalogService
    from switchboard.health.service import BanWatch
else:
    # Depends() never looks at the type: the service's module is imported by the composition root
    # when a route that takes it first runs.
    CatalogService = Any
    BanWatch = Any


router = APIGatewayHttpRouter()
Catalog = Annotated[CatalogService, Depends(catalog_service)]
Watch = Annotated[BanWatch, Depends(health_watch)]
Secrets = Annotated[EventsWebhookSecrets, Depends(events_webhook_secrets)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]
ID = Annotated[str, Path(max_length=64)]


@router.get("/api/instances/<name>/health", tags=["instances"], responses=documented(401, 403, 404, 422))
def get_health(catalog: Catalog, watch: Watch, name: ID, principal: Admin) -> HealthView:
    """The instance's health: state, since when, the reasons (provider signals, velocity,
    delivery), when a pause lifts, and the counters it is judged on. A pause that has expired is
    already gone here; the pool reads the same state."""
    instance = catalog.get_instance(principal, name)
    return HealthView.of(instance, watch.read(instance), watch.now, watch.limits)


@router.post(
    "/api/instances/<name>/events-webhook-secret",
    status_code=201,
    tags=["instances"],
    responses=documented(401, 403, 404, 422),
)
def rotate_events_webhook_secret(name: ID, principal: Admin, secrets: Secrets) -> EventsWebhookSecretView:
    """A new signing secret for the instance's `eventsWebhookUrl` deliveries (Standard Webhooks,
    like client webhooks), shown only here; the previous one stops at once. Without a rotation a
    secret is created at the first delivery and can only be read by rotating it."""
    secret = secrets.rotate_instance_secret(principal, name)
    return EventsWebhookSecretView(instance=name, secret=secret)

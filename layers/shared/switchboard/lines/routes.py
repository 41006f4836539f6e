"""Calls limit routes: read a connection's line, set its call limit, prepare its webhook subscription."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Body as BodyParam
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import InstanceName
from switchboard.lines.deps import calls_config_service, subscription_service
from switchboard.lines.schemas import CallsView, PrepareSubscription, SetCallsLimit, SubscriptionView

if TYPE_CHECKING:
    # Each service is imported by the composition root when a route that takes it first runs.
    from switchboard.lines.service import CallsConfigService
    from switchboard.lines.subscriptions import SubscriptionService
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    CallsConfigService = Any
    SubscriptionService = Any

router = APIGatewayHttpRouter()
CallLimit = Annotated[CallsConfigService, Depends(calls_config_service)]
Subscriptions = Annotated[SubscriptionService, Depends(subscription_service)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]
AdminOrAgent = Annotated[Principal, Depends(requires(router, Scope.ADMIN, Scope.AGENT))]
AdminOrPlatform = Annotated[Principal, Depends(requires(router, Scope.ADMIN, Scope.PLATFORM))]
InstancePath = Annotated[InstanceName, Path()]
READ_ERRORS = documented(401, 403, 404, 422)
WRITE_ERRORS = documented(400, 401, 403, 404, 422, 502, 504)


@router.get("/api/connections/<instance>/calls", tags=["calls"], responses=READ_ERRORS)
def get_calls(lines: CallLimit, instance: InstancePath, principal: AdminOrAgent) -> CallsView:
    """The connection's call limit (version as a string), live calls, pending reservations and free slots."""
    return CallsView.of(lines.overview(principal, instance))


@router.put("/api/connections/<instance>/calls-limit", tags=["calls"], responses=WRITE_ERRORS)
def set_calls_limit(lines: CallLimit, instance: InstancePath, body: SetCallsLimit, principal: Admin) -> CallsView:
    """Save the limit at the provider (allowed while disconnected). 502/504: not saved, or not confirmed."""
    overview = lines.set_limit(principal, instance, body.calls_max_concurrent)
    return CallsView.of(overview)


@router.post("/api/connections/<instance>/subscription", tags=["calls"], responses=WRITE_ERRORS)
def prepare_subscription(
    subscriptions: Subscriptions,
    instance: InstancePath,
    principal: AdminOrPlatform,
    body: Annotated[PrepareSubscription | None, BodyParam()] = None,
) -> SubscriptionView:
    """Make the instance's own subscription list call, call_settings and connection; report what it cannot fix."""
    options = body or PrepareSubscription()
    report = subscriptions.prepare(principal, instance, scope=options.scope, include_limits=options.include_limits)
    return SubscriptionView.of(report)

"""`GET /api/instances/{name}/ignored-events`: what the instance's provider sent that was not applied."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import InstanceName
from switchboard.webhooks.deps import ignored_events
from switchboard.webhooks.ignored import MAX_IGNORED_PAGE
from switchboard.webhooks.ignored_schemas import IgnoredPageView

if TYPE_CHECKING:
    from switchboard.webhooks.ignored import IgnoredEvents
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    IgnoredEvents = Any

router = APIGatewayHttpRouter()
Ignored = Annotated[IgnoredEvents, Depends(ignored_events)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]


@router.get(
    "/api/instances/<name>/ignored-events", tags=["provider webhooks"], responses=documented(400, 401, 403, 404, 422)
)
def list_ignored_events(
    ignored: Ignored,
    name: Annotated[InstanceName, Path()],
    principal: Admin,
    limit: Annotated[int, Query(ge=1, le=MAX_IGNORED_PAGE)] = 20,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> IgnoredPageView:
    """The events the instance's provider sent that switchboard acknowledged without applying them,
    newest first, with the reason in words and as a code. Kept 8 days."""
    return IgnoredPageView.of(ignored.of_instance(principal, name, limit, cursor))

"""The webhook delivery log: `GET /api/webhook-deliveries` (and one delivery), replays (admin scope)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.api.query import statuses
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import Instant
from switchboard.messages.delivery_log import DELIVERY_STATUSES, MAX_DELIVERY_PAGE, DeliveryFilter
from switchboard.messages.delivery_schemas import DeliveryPageView, DeliveryView, ReplayedRangeView, ReplayRange
from switchboard.messages.deps import delivery_log

if TYPE_CHECKING:
    from switchboard.messages.delivery_log import DeliveryLog
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    DeliveryLog = Any

router = APIGatewayHttpRouter()
Log = Annotated[DeliveryLog, Depends(delivery_log)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]
DeliveryId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


@router.get("/api/webhook-deliveries", tags=["webhook deliveries"], responses=documented(400, 401, 403, 422))
def list_deliveries(  # every filter is a query parameter, passed by name
    *,
    log: Log,
    principal: Admin,
    status: Annotated[str | None, Query(max_length=100, description="One status or several, comma separated.")] = None,
    event: Annotated[str | None, Query(max_length=64, description="`message.sent`, ...")] = None,
    api_key: Annotated[str | None, Query(alias="apiKey", max_length=64)] = None,
    instance: Annotated[str | None, Query(max_length=64)] = None,
    since: Annotated[Instant | None, Query(description="First attempted at or after.")] = None,
    until: Annotated[Instant | None, Query(description="First attempted at or before.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_DELIVERY_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=2048)] = None,
) -> DeliveryPageView:
    """Every delivery of the tenant's client webhooks (API keys' `webhookUrl`, instances'
    `eventsWebhookUrl`), newest first: its attempts, the last answer, the next retry.

    `status=failed` is the dead-letter view: the deliveries whose every attempt failed, until they
    are replayed. A page may hold fewer than `limit` items and still have a `cursor`. Deliveries
    are kept 30 days after their last attempt.
    """
    query = DeliveryFilter(
        status=statuses(status, DELIVERY_STATUSES),
        event=event,
        api_key_id=api_key,
        instance=instance,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
    )
    return DeliveryPageView.of(log.list(principal, query))


@router.get(
    "/api/webhook-deliveries/<delivery_id>", tags=["webhook deliveries"], responses=documented(401, 403, 404, 422)
)
def get_delivery(log: Log, delivery_id: DeliveryId, principal: Admin) -> DeliveryView:
    """One delivery: every attempt (status code, latency, error) and the body it posts."""
    return DeliveryView.of(log.get(principal, delivery_id))


@router.post(
    "/api/webhook-deliveries/<delivery_id>/replay",
    status_code=202,
    tags=["webhook deliveries"],
    responses=documented(401, 403, 404, 409, 422, 500),
)
def replay_delivery(log: Log, delivery_id: DeliveryId, principal: Admin) -> DeliveryView:
    """Deliver the event again: the same `webhook-id` and body, signed now with the destination's
    current secret, to its current URL, retried as any delivery. Audited.

    409 `delivery_in_progress` while the delivery is still being retried or a replay of it is
    queued (the receiver would get it twice).
    """
    return DeliveryView.of(log.replay(principal, delivery_id))


@router.post(
    "/api/webhook-deliveries/replay",
    status_code=202,
    tags=["webhook deliveries"],
    responses=documented(400, 401, 403, 422, 500),
)
def replay_failed_deliveries(log: Log, body: ReplayRange, principal: Admin) -> ReplayedRangeView:
    """Replay the dead-letter view's deliveries first attempted between `since` and `until`: at
    most 100 per call, the answer's `cursor` goes on with the rest. Audited."""
    return ReplayedRangeView.of(log.replay_failed(principal, body.since, body.until, body.cursor))

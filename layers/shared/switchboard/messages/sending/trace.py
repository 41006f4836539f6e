"""The trace entries the send steps write about a number or one of its routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.messages.domain import PendingRoute, TraceEvent

if TYPE_CHECKING:
    from switchboard.pool.domain import NumberRoutes, Route


def skip(stage: str, number: NumberRoutes, route: Route | None, reason: str, **data: object) -> TraceEvent:
    """A number (`route` None) or one of its routes passed over, and why."""
    return at(stage, number, route, reason=reason, **data)


def at(stage: str, number: NumberRoutes, route: Route | None, **data: object) -> TraceEvent:
    return TraceEvent(
        stage=stage,
        data={
            "number": number.digits,
            "instance": route.instance if route else None,
            "providerId": route.provider_id if route else None,
            **data,
        },
    )


def pending_route(number: NumberRoutes, route: Route) -> PendingRoute:
    """`route` of `number` as the message records it (in flight, or pending after a timeout)."""
    return PendingRoute(
        number_id=number.number_id, instance=route.instance, provider_id=route.provider_id, kind=route.kind
    )

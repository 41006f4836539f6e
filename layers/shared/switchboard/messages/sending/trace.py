"""The trace entries the send steps write about a number or one of its routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.messages.domain import PendingRoute, TraceEvent

if TYPE_CHECKING:
    from switchboard.core.errors import ProviderError
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


def provider_words(error: ProviderError, *, code_always: bool = False) -> dict[str, object]:
    """The provider's own code and message of a failed call, as a trace entry carries them: each
    when the provider said one (`code_always`: the code even when None)."""
    words: dict[str, object] = {}
    if code_always or error.provider_code is not None:
        words["providerCode"] = error.provider_code
    if (message := error.provider_message) is not None:
        words["providerMessage"] = message
    return words

"""The caller, as the Lambda authorizer described it, and scope checks for routes.

The authorizer (functions/authorizer) puts `tenant`, `keyId`, `scopes` (comma-separated) and
`attendantId` in the request context; API Gateway only lets a request through after it.

Every authenticated route takes its caller through `requires`, so that is where each request is
admitted against its key's and its tenant's request rate (the limiter is the quotas'
`deps.request_limiter`, which the composition root provides and a test may swap in
`app.dependency_overrides`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.event_handler.depends import Depends

from switchboard.catalog.domain import Principal, Scope
from switchboard.core.errors import Forbidden, Unauthenticated
from switchboard.quotas import deps as quotas
from switchboard.quotas.service import RequestLimiter


def principal_from_context(context: dict[str, Any] | None) -> Principal:
    if not context or not context.get("tenant") or not context.get("keyId"):
        raise Unauthenticated("missing or invalid API key")
    scopes = frozenset(Scope(scope) for scope in str(context.get("scopes", "")).split(",") if scope)
    return Principal(
        tenant=context["tenant"],
        key_id=context["keyId"],
        scopes=scopes,
        attendant_id=context.get("attendantId") or None,
    )


def authorizer_context(router: BaseRouter) -> dict[str, Any]:
    request_context = router.current_event.raw_event.get("requestContext") or {}
    authorizer = request_context.get("authorizer") or {}
    return dict(authorizer.get("lambda") or {})


def requires(router: BaseRouter, *allowed: Scope) -> Callable[..., Principal]:
    """A dependency for `Depends(...)`: the caller, if it holds one of `allowed` scopes and is
    within its request rate (RateLimited, 429, before the scope check: refused calls count too)."""

    def dependency(limiter: Annotated[RequestLimiter, Depends(quotas.request_limiter)]) -> Principal:
        principal = principal_from_context(authorizer_context(router))
        limiter.admit(principal)
        if not any(principal.has(scope) for scope in allowed):
            raise Forbidden(f"this route needs the scope {' or '.join(allowed)}")
        return principal

    return dependency

"""The caller, as the Lambda authorizer described it, and scope checks for routes.

The authorizer (functions/authorizer) puts `tenant`, `keyId`, `scopes` (comma-separated),
`attendantId` and, for a person, `user` (their `sub`) and `email` in the request context; API
Gateway only lets a request through after it.

Every authenticated route takes its caller through `requires`, so that is where each request is
admitted against its key's and its tenant's request rate. The quotas do that (their
`RequestLimiter`); core only declares what it needs of them (`RequestAdmission`) and a dependency
for it (`request_admission`) that the composition root provides in `app.dependency_overrides`,
as a test may.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Protocol

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.event_handler.depends import Depends

from switchboard.core.api.provided import NotProvided
from switchboard.core.errors import Forbidden, Unauthenticated
from switchboard.core.identity import Principal, Scope


class RequestAdmission(Protocol):
    def admit(self, principal: Principal) -> None:
        """Raises RateLimited (429, Retry-After) when the key or the tenant is over its rate."""
        ...


def request_admission() -> RequestAdmission:
    """The request rate check of every authenticated route (the quotas' limiter)."""
    raise NotProvided(request_admission)


def principal_from_context(context: dict[str, Any] | None) -> Principal:
    if not context or not context.get("tenant") or not context.get("keyId"):
        raise Unauthenticated("missing or invalid API key")
    scopes = frozenset(Scope(scope) for scope in str(context.get("scopes", "")).split(",") if scope)
    return Principal(
        tenant=context["tenant"],
        key_id=context["keyId"],
        scopes=scopes,
        attendant_id=context.get("attendantId") or None,
        user=context.get("user") or None,
        email=context.get("email") or None,
    )


def authorizer_context(router: BaseRouter) -> dict[str, Any]:
    request_context = router.current_event.raw_event.get("requestContext") or {}
    authorizer = request_context.get("authorizer") or {}
    return dict(authorizer.get("lambda") or {})


def bearer_credential(router: BaseRouter) -> str:
    """The request's `Authorization: Bearer` credential, which the authorizer accepted before the
    route runs: a person's access token is what the user pool's calls about that person take."""
    scheme, _, credential = str(router.current_event.headers.get("authorization") or "").partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise Unauthenticated("missing or invalid API key")
    return credential.strip()


def requires(router: BaseRouter, *allowed: Scope) -> Callable[..., Principal]:
    """A dependency for `Depends(...)`: the caller, if it holds one of `allowed` scopes and is
    within its request rate (RateLimited, 429, before the scope check: refused calls count too)."""

    def dependency(admission: Annotated[RequestAdmission, Depends(request_admission)]) -> Principal:
        principal = principal_from_context(authorizer_context(router))
        admission.admit(principal)
        if not any(principal.has(scope) for scope in allowed):
            raise Forbidden(f"this route needs the scope {' or '.join(allowed)}")
        return principal

    return dependency

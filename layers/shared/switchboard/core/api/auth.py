"""The caller, as the Lambda authorizer described it, and scope checks for routes.

The authorizer (functions/authorizer) puts `tenant`, `keyId`, `scopes` (comma-separated) and
`attendantId` in the request context; API Gateway only lets a request through after it.

Every authenticated route takes its caller through `requires`, so that is where each request is
admitted against its key's and its tenant's request rate. The quotas do that (their
`RequestLimiter`); core only declares what it needs of them (`RequestAdmission`), and whoever builds
the API app installs the implementation (`create_api(..., admission=...)`). Routes reach it through
`Depends(request_admission)`, so tests can swap it with `app.dependency_overrides`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Protocol

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.event_handler.depends import Depends

from switchboard.core.errors import Forbidden, Unauthenticated
from switchboard.core.identity import Principal, Scope


class RequestAdmission(Protocol):
    def admit(self, principal: Principal) -> None:
        """Raises RateLimited (429, Retry-After) when the key or the tenant is over its rate."""
        ...


class _Installed:
    """The admission every API app of this process was built with (one per container)."""

    admission: Callable[[], RequestAdmission] | None = None


def install_admission(admission: Callable[[], RequestAdmission]) -> None:
    _Installed.admission = admission


def request_admission() -> RequestAdmission:
    if _Installed.admission is None:
        raise RuntimeError("no request admission installed: build the API app with create_api(..., admission=...)")
    return _Installed.admission()


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

    def dependency(admission: Annotated[RequestAdmission, Depends(request_admission)]) -> Principal:
        principal = principal_from_context(authorizer_context(router))
        admission.admit(principal)
        if not any(principal.has(scope) for scope in allowed):
            raise Forbidden(f"this route needs the scope {' or '.join(allowed)}")
        return principal

    return dependency

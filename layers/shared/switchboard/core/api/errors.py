"""The one place where errors become HTTP answers: `{"error": "<code>", "message": "..."}`."""

from __future__ import annotations

import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, TypeVar, cast

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from switchboard.core import errors
from switchboard.core.api.unmatched import NO_SUCH_ROUTE
from switchboard.core.model import Model
from switchboard.core.observability import logger

STATUS_BY_ERROR: list[tuple[type[errors.SwitchboardError], HTTPStatus]] = [
    (errors.InvalidInput, HTTPStatus.BAD_REQUEST),
    (errors.Unauthenticated, HTTPStatus.UNAUTHORIZED),
    (errors.Forbidden, HTTPStatus.FORBIDDEN),
    (errors.NotFound, HTTPStatus.NOT_FOUND),
    (errors.Conflict, HTTPStatus.CONFLICT),
    (errors.IdempotencyKeyReused, HTTPStatus.UNPROCESSABLE_ENTITY),
    (errors.PayloadTooLarge, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
    (errors.UnsupportedMediaType, HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    (errors.UnknownReference, HTTPStatus.UNPROCESSABLE_ENTITY),
    (errors.InvalidTemplate, HTTPStatus.UNPROCESSABLE_ENTITY),
    (errors.RateLimited, HTTPStatus.TOO_MANY_REQUESTS),
    (errors.UnsupportedByProvider, HTTPStatus.UNPROCESSABLE_ENTITY),
    (errors.ProviderLineBusy, HTTPStatus.CONFLICT),
    (errors.ProviderTimeout, HTTPStatus.GATEWAY_TIMEOUT),
    (errors.ProviderError, HTTPStatus.BAD_GATEWAY),
]


class FieldProblem(Model):
    """One field a `validation_error` refused: where it is in the body (`pacing.burst`, `to`; a query
    or path parameter as `query.month`, `path.name`), pydantic's reason (`string_pattern_mismatch`,
    `missing`, `greater_than_equal`, ...) and the bound it broke, when it has one. A client shows
    its own words at that field."""

    field: str
    reason: str
    limit: int | float | None = None


class ErrorBody(Model):
    error: str
    message: str
    fields: list[FieldProblem] | None = None


class GatewayAnswer(Model):
    """An answer API Gateway writes itself, before switchboard runs; an HTTP API cannot change its
    body: 400 `Bad Request` for a path whose percent-decoding fails, the authorizer's 401
    `Unauthorized`, 413 over its 10 MB payload limit, the throttle's 429 `Too Many Requests`."""

    message: str


# The statuses API Gateway itself may answer on a route, in its own body.
GATEWAY_STATUSES = frozenset(
    {
        HTTPStatus.BAD_REQUEST,
        HTTPStatus.UNAUTHORIZED,
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        HTTPStatus.TOO_MANY_REQUESTS,
    }
)


def status_for(error: errors.SwitchboardError) -> HTTPStatus:
    for error_class, status in STATUS_BY_ERROR:
        if isinstance(error, error_class):
            return status
    return HTTPStatus.INTERNAL_SERVER_ERROR


def error_response(status: HTTPStatus, code: str, message: str, /, **extra: Any) -> Response[dict[str, Any]]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"error": code, "message": message, **extra},
    )


_E = TypeVar("_E", bound=Exception)
_Handler = Callable[[_E], Response[dict[str, Any]]]


def _handles(app: ApiGatewayResolver, error_class: type[_E]) -> Callable[[_Handler[_E]], _Handler[_E]]:
    # Powertools' registration is unannotated; it hands the handler back unchanged.
    return cast("Callable[[_Handler[_E]], _Handler[_E]]", app.exception_handler(error_class))


def install_error_handlers(app: ApiGatewayResolver) -> None:
    """Map domain errors, validation errors and unknown routes to our error body."""

    @_handles(app, errors.SwitchboardError)
    def domain_error(error: errors.SwitchboardError) -> Response[dict[str, Any]]:
        status = status_for(error)
        logger.info("request refused", extra={"error": error.code, "status": int(status)})
        response = error_response(status, error.code, error.message, **error.details)
        if isinstance(error, errors.RateLimited):
            response.headers["Retry-After"] = str(error.retry_after_seconds)
        return response

    @_handles(app, RequestValidationError)
    def validation_error(error: RequestValidationError) -> Response[dict[str, Any]]:
        problems = error.errors()
        if any(problem.get("type") == "json_invalid" for problem in problems):
            return error_response(HTTPStatus.BAD_REQUEST, "invalid_json", "the body is not valid JSON")
        # Messages come from pydantic and describe the field; they never include Python internals.
        detail = "; ".join(_describe(problem) for problem in problems) or "invalid request"
        fields = [_field_problem(problem).model_dump(exclude_none=True) for problem in problems]
        return error_response(HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error", detail, fields=fields)

    @_handles(app, UnicodeDecodeError)
    def invalid_encoding(_: UnicodeDecodeError) -> Response[dict[str, Any]]:
        return error_response(HTTPStatus.BAD_REQUEST, "invalid_encoding", "the body is not valid UTF-8")

    @_handles(app, RecursionError)
    def too_deep(_: RecursionError) -> Response[dict[str, Any]]:
        return error_response(HTTPStatus.BAD_REQUEST, "invalid_json", "the body is nested too deeply")

    @app.not_found
    def route_not_found(_: Exception) -> Response[dict[str, Any]]:
        return error_response(HTTPStatus.NOT_FOUND, "not_found", NO_SUCH_ROUTE)


_BOUNDS = ("ge", "gt", "le", "lt", "min_length", "max_length")


def _field_problem(problem: dict[str, Any]) -> FieldProblem:
    field = _location(problem)
    context = problem.get("ctx") or {}
    limit = next(
        (
            context[name]
            for name in _BOUNDS
            if isinstance(context.get(name), int | float) and not isinstance(context.get(name), bool)
        ),
        None,
    )
    return FieldProblem(field=field, reason=str(problem.get("type") or "invalid"), limit=limit)


# What pydantic puts in a location for the member of a union it tried: a model's class name
# (`InteractiveHeaderBody`), a validator chain (`function-after[_one_source(), ...]`), a type
# (`str`). The API's fields are camelCase and its positions integers, so these never name one.
_UNION_MEMBER = re.compile(r"^(?:[A-Z]\w*|str|int|float|bool|list|dict|none)$|[\[(]")


def _location(problem: dict[str, Any]) -> str:
    # The validator puts the request body first ("body"); a field of the body may itself be named
    # `body` (an interactive message's), so only that first part is dropped.
    parts = [str(part) for part in problem.get("loc", ())]
    parts = parts[1:] if parts[:1] == ["body"] else parts
    return ".".join(part for part in parts if not _UNION_MEMBER.search(part))


def _describe(problem: dict[str, Any]) -> str:
    location = _location(problem)
    message = problem.get("msg") or problem.get("type", "invalid")
    return f"{location}: {message}" if location else str(message)


# What a route that takes no API key declares (`openapi_extensions=NO_API_KEY`): the provider
# webhooks and the helpdesk's reply webhook, authenticated their own way. Powertools drops a
# route's `security=[]`, and the document-wide bearer key would then be documented on them.
NO_API_KEY: dict[str, Any] = {"security": []}

# RFC 9110's names, which Python adopted only in 3.13: the document must not depend on the
# interpreter that generated it.
_PHRASES = {413: "Content Too Large", 422: "Unprocessable Content"}


def documented(*statuses: int) -> dict[int, OpenAPIResponse]:
    """OpenAPI `responses` for the error statuses a route can answer. A route that takes an API
    key (401) also answers 429: every such request is counted against its key's and tenant's rate.
    Where API Gateway may answer the status itself (400, 401, 413, 429), its body is documented too."""
    if HTTPStatus.UNAUTHORIZED in statuses and HTTPStatus.TOO_MANY_REQUESTS not in statuses:
        statuses = (*statuses, int(HTTPStatus.TOO_MANY_REQUESTS))
    return {
        status: {
            "description": _PHRASES.get(status) or HTTPStatus(status).phrase,
            "content": {
                "application/json": {"model": ErrorBody | GatewayAnswer if status in GATEWAY_STATUSES else ErrorBody}
            },
        }
        for status in statuses
    }

"""The answer to a request no route serves: our `not_found` body (an unknown path) or
`method_not_allowed` with `Allow` (a path that other methods serve), without pydantic or OpenAPI.

Kept apart from errors.py so the docs function, which answers API Gateway's `$default` route,
imports nothing of the validation machinery the API functions need."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from functools import cache
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import content_types

# API Gateway's route key for requests no other route matches (an unknown path, or a known path
# with another method: HEAD too, which an HTTP API routes like any method); the template sends
# them to the docs function.
UNMATCHED_ROUTE_KEY = "$default"
NO_SUCH_ROUTE = "no such route"


def not_found_body() -> dict[str, str]:
    return {"error": "not_found", "message": NO_SUCH_ROUTE}


def allowed_methods(routes: Mapping[str, Collection[str]], path: str) -> list[str]:
    """The methods that serve `path`, from `routes` (a path template like `/api/numbers/{number_id}`
    -> its methods), sorted; empty for a path no route serves."""
    serving = (methods for template, methods in routes.items() if _pattern(template).fullmatch(path))
    return sorted({method.upper() for methods in serving for method in methods})


@cache
def _pattern(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)))


def unmatched_route_answer(path: str, routes: Mapping[str, Collection[str]]) -> dict[str, Any]:
    """The payload 2.0 proxy answer to a request of the `$default` route: 404 `not_found`, or 405
    `method_not_allowed` with the `Allow` header for a path other methods serve (RFC 9110).

    Answered without dispatching to any router: a path API Gateway did not match must never reach
    a route's code through a looser match of the resolver; `routes` only names the methods."""
    allowed = allowed_methods(routes, path)
    if not allowed:
        return _answer(HTTPStatus.NOT_FOUND, not_found_body())
    body = {"error": "method_not_allowed", "message": f"this path answers {', '.join(allowed)} only"}
    return _answer(HTTPStatus.METHOD_NOT_ALLOWED, body, Allow=", ".join(allowed))


def _answer(status: HTTPStatus, body: dict[str, str], **headers: str) -> dict[str, Any]:
    return {
        "statusCode": int(status),
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **headers},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }

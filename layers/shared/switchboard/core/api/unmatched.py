"""The answer to a request no route serves: our `not_found` body, without pydantic or OpenAPI.

Kept apart from errors.py so the docs function, which answers API Gateway's `$default` route,
imports nothing of the validation machinery the API functions need."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import content_types

# API Gateway's route key for requests no other route matches (an unknown path, or a known path
# with another method); the template sends them to the docs function.
UNMATCHED_ROUTE_KEY = "$default"
NO_SUCH_ROUTE = "no such route"


def not_found_body() -> dict[str, str]:
    return {"error": "not_found", "message": NO_SUCH_ROUTE}


def unmatched_route_answer() -> dict[str, Any]:
    """The payload 2.0 proxy answer to a request of the `$default` route: our `not_found` body.

    Answered without matching the path against any router: a path API Gateway did not match
    must never reach a route's code through a looser match of the resolver."""
    return {
        "statusCode": int(HTTPStatus.NOT_FOUND),
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(not_found_body()),
        "isBase64Encoded": False,
    }

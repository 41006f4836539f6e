"""One OpenAPI document for every route of every API function, generated from the routers.

The docs function serves it from `functions/docs/openapi.json`, written by `make openapi`
(tools/openapi.py); a test fails while that file differs from what the routers produce here."""

from __future__ import annotations

import json
from importlib import import_module
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer, SecurityScheme

from switchboard.core.api.app import create_api

TITLE = "switchboard"
VERSION = "1.0.0"
# Every module that defines a `router`, in documentation order.
ROUTE_MODULES = (
    "routing.routes",
    "quotas.routes",
    "catalog.routes",
    "health.routes",
    "templates.routes",
    "lines.routes",
    "calls.routes",
    "webhooks.routes",
    "webhooks.ignored_routes",
    "routing.replies",
    "usage.routes",
    "audit.routes",
    "pool.routes",
    "live.routes",
    "messages.routes",
    "messages.delivery_routes",
    "people.routes",
)
DESCRIPTION = """\
Every error switchboard answers has one body: `{"error": "<code>", "message": "..."}`
(400 `invalid_json`, `invalid_encoding`; 413 `payload_too_large`; 415 `unsupported_media_type`;
422 `validation_error`; 404 `not_found`, also for a path or method no route serves; ...).

A few answers come from API Gateway itself, before switchboard runs, and an HTTP API cannot
change their bodies (it has no gateway responses): the API key check's **401**
`{"message":"Unauthorized"}` (no `Authorization` header, or a key that is unknown, revoked or
expired), the throttle's **429** `{"message":"Too Many Requests"}`, over API Gateway's 10 MB
payload limit **413** `{"message":"Request Entity Too Large"}`, and **400**
`{"message":"Bad Request"}` for a path whose percent-decoding fails. A valid key without the
scope a route needs gets our own 403 `forbidden`.

API Gateway percent-decodes a path (twice) before it routes it, so a path parameter cannot carry
`/`, `?` or `%`: encoded, they still end the segment, the path or the request (400). A known path
asked with a method it does not serve is 405 `method_not_allowed` with `Allow`.

Bodies are `application/json` (415 `unsupported_media_type` otherwise, or without a
Content-Type). A number in a body is one a DynamoDB item stores exactly: an integer within 64
bits, any other number 0 or from 1E-130 to below 1E126 in magnitude (422 otherwise); `2.0` is the
integer 2.

Names and identifiers refuse control characters; message texts accept line breaks and tabs only.
"""
SECURITY_SCHEMES: dict[str, SecurityScheme] = {
    "bearerAuth": HTTPBearer(description="An API key: `Authorization: Bearer sb_live_...`")
}


def build_documented_api() -> APIGatewayHttpResolver:
    routers = [import_module(f"switchboard.{name}").router for name in ROUTE_MODULES]
    return create_api(*routers)


def openapi_json(app: APIGatewayHttpResolver) -> str:
    document = json.loads(
        app.get_openapi_json_schema(
            title=TITLE,
            version=VERSION,
            description=DESCRIPTION,
            security_schemes=SECURITY_SCHEMES,
            security=[{"bearerAuth": []}],
        )
    )
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                _not_null(parameter["schema"])
    return json.dumps(document, indent=2, ensure_ascii=False)


def _not_null(schema: dict[str, Any]) -> None:
    """A path, query or header parameter is text on the wire and is never JSON's null: an optional
    one (`str | None` in Python) is documented as what it is when given, in place."""
    branches = [branch for branch in schema.get("anyOf", ()) if branch.get("type") != "null"]
    if "anyOf" in schema and len(branches) == 1:
        del schema["anyOf"]
        schema.update(branches[0])

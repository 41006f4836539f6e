"""Serves the OpenAPI document of every route (generated from the code) and a Swagger UI."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard.core.api.errors import UNMATCHED_ROUTE_KEY, unmatched_route_answer
from switchboard.core.api.openapi import build_documented_api, openapi_json
from switchboard.core.observability import logger

app = build_documented_api()


@app.get("/api/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_json(app))


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("routeKey") == UNMATCHED_ROUTE_KEY:
        return unmatched_route_answer()
    return app.resolve(event, context)

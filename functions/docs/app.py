"""Serves the OpenAPI document of every route and a Swagger UI.

The document is generated from the routers when the code changes (`make openapi` writes
`openapi.json` next to this module, and a test fails while it differs from what the routers
produce), so this function imports none of the API's routes, schemas or services.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard.core.api.unmatched import UNMATCHED_ROUTE_KEY, not_found_body, unmatched_route_answer
from switchboard.core.observability import logger

DOCUMENT = Path(__file__).with_name("openapi.json")

app = APIGatewayHttpResolver()


@cache
def document() -> str:
    return DOCUMENT.read_text(encoding="utf-8").rstrip("\n")


@app.get("/api/openapi.json")
def openapi_document() -> Response[str]:
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=document())


@app.get("/api/docs")
def swagger_ui() -> Response[str]:
    """The Swagger UI page with the document inline (`?format=json`: the document alone)."""
    # Imported here: only this page needs them (and they bring pydantic with them).
    from aws_lambda_powertools.event_handler.openapi.swagger_ui import (  # noqa: PLC0415
        generate_oauth2_redirect_html,
        generate_swagger_html,
    )

    query = app.current_event.query_string_parameters or {}
    if query.get("format") == "oauth2-redirect":
        return Response(status_code=200, content_type=content_types.TEXT_HTML, body=generate_oauth2_redirect_html())
    # `</` escaped so the document cannot close the page's <script> element.
    spec = document().replace("</", "<\\/")
    if query.get("format") == "json":
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=spec)
    javascript, stylesheet = swagger_assets()
    html = generate_swagger_html(spec, javascript, stylesheet, "", None, persist_authorization=False)
    return Response(status_code=200, content_type=content_types.TEXT_HTML, body=html)


@cache
def swagger_assets() -> tuple[str, str]:
    """Swagger UI's script and stylesheet, as Powertools ships them, inlined in the page."""
    from aws_lambda_powertools.event_handler.openapi import swagger_ui  # noqa: PLC0415

    folder = Path(swagger_ui.__file__).parent
    return (
        (folder / "swagger-ui-bundle.min.js").read_text(encoding="utf-8"),
        (folder / "swagger-ui.min.css").read_text(encoding="utf-8"),
    )


@app.not_found
def route_not_found(_: Exception) -> Response[dict[str, str]]:
    return Response(status_code=404, content_type=content_types.APPLICATION_JSON, body=not_found_body())


@cache
def served_routes() -> dict[str, list[str]]:
    """Every route of the API (path template -> methods): the document's and this function's own."""
    routes = {path: list(operations) for path, operations in json.loads(document())["paths"].items()}
    for route in app._static_routes + app._dynamic_routes:  # Powertools has no public accessor
        routes.setdefault(re.sub(r"<(\w+)>", r"{\1}", route.path), []).append(route.method)
    return routes


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("routeKey") == UNMATCHED_ROUTE_KEY:
        return unmatched_route_answer(event.get("rawPath") or "/", served_routes())
    return app.resolve(event, context)

"""One OpenAPI document for every route of every API function, generated from the routers."""

from __future__ import annotations

from importlib import import_module

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

from switchboard.core.api.app import create_api

TITLE = "switchboard"
VERSION = "1.0.0"
# Every module that defines a `router`, in documentation order.
ROUTE_MODULES = (
    "routing.routes",
    "catalog.routes",
    "call_limit.routes",
    "calls.routes",
    "webhooks.routes",
    "routing.replies",
    "usage.routes",
    "audit.routes",
    "pool.routes",
    "messages.routes",
)
SECURITY_SCHEMES = {"bearerAuth": HTTPBearer(description="An API key: `Authorization: Bearer sb_live_...`")}


def build_documented_api() -> APIGatewayHttpResolver:
    routers = [import_module(f"switchboard.{name}").router for name in ROUTE_MODULES]
    app = create_api(*routers)
    app.enable_swagger(
        path="/api/docs",
        title=TITLE,
        version=VERSION,
        security_schemes=SECURITY_SCHEMES,  # type: ignore[arg-type]
        security=[{"bearerAuth": []}],
    )
    return app


def openapi_json(app: APIGatewayHttpResolver) -> str:
    return app.get_openapi_json_schema(
        title=TITLE,
        version=VERSION,
        security_schemes=SECURITY_SCHEMES,  # type: ignore[arg-type]
        security=[{"bearerAuth": []}],
    )

"""Builds the Powertools resolver every API function uses: validation on, one error format."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.body import parse_api_json
from switchboard.core.api.errors import install_error_handlers
from switchboard.core.api.validation import MediaTypeValidation

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse


class HttpApiResolver(APIGatewayHttpResolver):
    """Powertools' resolver, matching a path parameter as API Gateway does: any characters but `/`.

    Powertools matches a parameter against a short list of characters only, so a path API Gateway
    did route here (a name holding a backtick or a space, once decoded) answered "no such route".
    Matched like this, the parameter reaches validation and its pattern: 422 naming it."""

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = "^{}$") -> re.Pattern[str]:
        return re.compile(base_regex.format(re.sub(r"<(\w+)>", r"(?P<\1>[^/]+)", rule)))


def create_api(*routers: APIGatewayHttpRouter) -> APIGatewayHttpResolver:
    # Bodies reach pydantic only through parse_api_json: size, depth and strict JSON checked first.
    app = HttpApiResolver(enable_validation=True, json_body_deserializer=parse_api_json)
    # Powertools has no hook for how a body is read: its request validation is replaced before any
    # route builds its middleware stack (tests/core/test_media_types.py pins that it is used).
    app._request_validation_middleware = MediaTypeValidation()  # type: ignore[no-untyped-call]  # Powertools' own no-argument constructor is unannotated
    install_error_handlers(app)
    for router in routers:
        app.include_router(router)
    _document_success(app)
    return app


def _document_success(app: APIGatewayHttpResolver) -> None:
    """Keep each route's success answer in the OpenAPI document next to its error answers.

    Powertools documents the return type only for routes without `responses=`; a response
    entry without `content` gets the return type's schema, so one is added per route.
    """
    for route in app._static_routes + app._dynamic_routes:  # Powertools has no public accessor
        if route.responses and route.status_code not in route.responses:
            success: OpenAPIResponse = {"description": "Success"}
            route.responses = {route.status_code: success, **route.responses}

"""Builds the Powertools resolver every API function uses: validation on, one error format."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.api.errors import install_error_handlers


def create_api(*routers: APIGatewayHttpRouter) -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver(enable_validation=True)
    install_error_handlers(app)
    for router in routers:
        app.include_router(router)
    return app

"""The catalog API: routes in switchboard.catalog.routes and switchboard.health.routes."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard.catalog import routes as catalog
from switchboard.core.api.app import create_api
from switchboard.core.observability import logger
from switchboard.health import routes as health
from switchboard.quotas.wiring import request_limiter

app = create_api(catalog.router, health.router, admission=request_limiter)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


imported()

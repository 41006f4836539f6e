"""The pool API: routes in switchboard.pool.routes."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard.core.api.app import create_api
from switchboard.core.observability import logger
from switchboard.pool import routes as pool
from switchboard.quotas.wiring import request_limiter

app = create_api(pool.router, admission=request_limiter)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


imported()

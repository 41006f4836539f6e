"""Usage summary and audit log: routes in switchboard.usage and switchboard.audit."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard.audit import routes as audit
from switchboard.core.api.app import create_api
from switchboard.core.observability import logger
from switchboard.quotas.wiring import request_limiter
from switchboard.usage import routes as usage

app = create_api(usage.router, audit.router, admission=request_limiter)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


imported()

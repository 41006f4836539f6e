"""Provider webhook ingest: routes in switchboard.webhooks.routes."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard.core.api.app import create_api
from switchboard.core.observability import logger, metrics
from switchboard.webhooks import routes as webhooks

app = create_api(webhooks.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


imported()

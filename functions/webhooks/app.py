"""Provider webhook ingest: routes in switchboard.api.routes.webhooks."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard.api.app import create_api
from switchboard.api.routes import webhooks
from switchboard.observability import logger, metrics

app = create_api(webhooks.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)

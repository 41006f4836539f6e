"""The users API: routes in switchboard.people.routes (the people who sign in to the console)."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.observability import logger

app = bootstrap.users_api()


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


imported()

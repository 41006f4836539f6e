"""The live WebSocket API's $connect, $disconnect and $default (API Gateway proxy events).

$connect trades `?ticket=` for a stored connection (any status but 200 refuses the handshake);
$disconnect forgets it; $default (the console's keep-alive ping) needs no answer. The event is
never logged whole: its query string holds the ticket.
"""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.errors import Unauthenticated
from switchboard.core.observability import logger

connections = bootstrap.live_connections()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = event.get("requestContext") or {}
    route, connection_id = request.get("routeKey"), str(request.get("connectionId") or "")
    if route == "$connect":
        ticket = (event.get("queryStringParameters") or {}).get("ticket")
        try:
            connections().connect(connection_id, ticket)
        except Unauthenticated:
            return {"statusCode": 401}
    elif route == "$disconnect":
        connections().disconnect(connection_id)
    return {"statusCode": 200}


imported()

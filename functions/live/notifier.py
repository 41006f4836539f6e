"""EventBridge rule target: every `switchboard` event of the bus, pushed to its tenant's live connections."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.observability import logger

notifier = bootstrap.live_notifier()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    detail_type, detail = str(event.get("detail-type", "")), dict(event.get("detail") or {})
    return notifier().notify(detail_type, detail, str(event.get("time", "")))


imported()

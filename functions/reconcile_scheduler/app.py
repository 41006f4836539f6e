"""Scheduled reconciliation (EventBridge `ReconcileSchedule`): one ReconcileQueue message per instance.

The fan-out only lists instances and sends batches of 10, so 10,000 instances cost about 1,000
SendMessageBatch requests per period; the per-instance work runs in the queue worker.
"""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.observability import logger

schedule = bootstrap.reconcile_scheduler()


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return {"instances": schedule()}


imported()

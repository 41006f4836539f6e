"""The scheduled sweep (RoutingSweepFunction): re-apply provider events left pending, then drain
or expire every outbox.

Apart from app.py, which serves the outgoing API, so that the sweep's container imports neither
the API's resolver nor its routes, and the API's containers none of the sweep's services."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.observability import logger, metrics

sweep = bootstrap.routing_sweep()


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """EventBridge schedule: re-apply pending provider events, then drain or expire every outbox."""
    reapplied = sweep.ingest().reapply_pending()
    drained = sweep.outbox().drain_all()
    metrics.add_metric(name="WebhookEventsReapplied", unit=MetricUnit.Count, value=reapplied)
    metrics.add_metric(name="OutboxesSwept", unit=MetricUnit.Count, value=len(drained))
    metrics.add_metric(name="OutboxDepth", unit=MetricUnit.Count, value=sum(result.left for result in drained.values()))
    summary = {"reapplied": reapplied, "outboxes": {name: result.model_dump() for name, result in drained.items()}}
    logger.info("routing sweep", extra=summary)
    return summary


imported()

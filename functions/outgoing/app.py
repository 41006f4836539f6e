"""Replies from the downstream through an instance (routes in switchboard.routing.replies),
and the scheduled sweep of the outbox and of provider events left pending (`sweep_handler`)."""

from __future__ import annotations

from typing import Any

from switchboard.coldstart import imported

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from switchboard import bootstrap
from switchboard.core.api.app import create_api
from switchboard.core.observability import logger, metrics
from switchboard.routing import replies as outgoing

app = create_api(outgoing.router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def sweep_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """EventBridge schedule: re-apply pending provider events, then drain or expire every outbox."""
    reapplied = bootstrap.ingest_service().reapply_pending()
    drained = bootstrap.outbox_service().drain_all()
    metrics.add_metric(name="WebhookEventsReapplied", unit=MetricUnit.Count, value=reapplied)
    metrics.add_metric(name="OutboxesSwept", unit=MetricUnit.Count, value=len(drained))
    summary = {"reapplied": reapplied, "outboxes": {name: result.model_dump() for name, result in drained.items()}}
    logger.info("routing sweep", extra=summary)
    return summary


imported()

"""`POST /webhooks/{provider_id}`: provider events, authenticated by their signature (no API key)."""

from __future__ import annotations

import base64
from typing import Annotated

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import StringConstraints

from switchboard.core.api.errors import documented
from switchboard.core.errors import SwitchboardError
from switchboard.core.observability import metrics
from switchboard.webhooks.service import IngestResult, IngestService
from switchboard.webhooks.wiring import ingest_service

router = APIGatewayHttpRouter()
Ingest = Annotated[IngestService, Depends(ingest_service)]
ProviderId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
METRIC_BY_OUTCOME = {"applied": "WebhookEventsAccepted", "duplicate": "WebhookEventsDuplicate", "ignored": None}


@router.post(
    "/webhooks/<provider_id>",
    tags=["provider webhooks"],
    responses=documented(400, 401, 404, 409, 413, 500),
    security=[],
)
def receive_webhook(ingest: Ingest, provider_id: Annotated[ProviderId, Path()]) -> IngestResult:
    """A signed provider event (`X-Webhook-Timestamp`, `X-Webhook-Signature: v1=<hex>`).

    2xx only once the event is durable; a redelivery of an applied event answers `duplicate`.
    """
    event = router.current_event
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
    headers = event.headers
    try:
        result = ingest.receive(
            provider_id, headers.get("x-webhook-timestamp"), headers.get("x-webhook-signature"), body
        )
    except SwitchboardError:
        metrics.add_metric(name="WebhookEventsRejected", unit=MetricUnit.Count, value=1)
        raise
    if result.instance:
        metrics.add_dimension(name="instance", value=result.instance)
    metric = METRIC_BY_OUTCOME[result.outcome]
    if metric:
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    return result

"""`POST /webhooks/{provider_id}`: provider events, authenticated by their signature (no API key)."""

from __future__ import annotations

import base64
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import StringConstraints

from switchboard.core.api.body import FORM, JSON, check_media_type
from switchboard.core.api.errors import NO_API_KEY, documented
from switchboard.core.errors import SwitchboardError
from switchboard.core.observability import metrics
from switchboard.providers.base import WebhookRequest
from switchboard.webhooks.deps import ingest_service
from switchboard.webhooks.service import IngestResult, IngestService

router = APIGatewayHttpRouter()
Ingest = Annotated[IngestService, Depends(ingest_service)]
ProviderId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
# wuzapi posts JSON (`WEBHOOK_FORMAT=json`) or `application/x-www-form-urlencoded` (its default
# form mode), Evolution API JSON (axios), the Meta Cloud API JSON, the calls-capable server JSON.
WEBHOOK_MEDIA_TYPES = frozenset({JSON, FORM})
METRIC_BY_OUTCOME = {
    "applied": "WebhookEventsAccepted",
    "duplicate": "WebhookEventsDuplicate",
    "in_flight": "WebhookEventsInFlight",
    "ignored": "WebhookEventsIgnored",
}


@router.post(
    "/webhooks/<provider_id>",
    tags=["provider webhooks"],
    responses=documented(400, 401, 404, 413, 415, 500),
    openapi_extensions=NO_API_KEY,
)
def receive_webhook(ingest: Ingest, provider_id: Annotated[ProviderId, Path()]) -> IngestResult:
    """A provider's webhook, in its own format and authenticated its own way: wuzapi (JSON or
    form, `x-hmac-signature`), its calls-capable variant (`X-Webhook-Timestamp`,
    `X-Webhook-Signature: v1=<hex>`), Evolution API (`Authorization: Bearer <JWT>` or the body's
    `apikey`) or the Meta Cloud API (`X-Hub-Signature-256`).

    200 only once the events are durable; a redelivery of an applied event answers `duplicate`,
    one arriving while another delivery of the same event is applying it `in_flight` (durable
    already: that delivery, the provider's retry or the sweep of pending events applies it), an
    event that cannot be mapped (media, reactions, groups) `ignored` with its reason. Always 200,
    never another 2xx: the Meta Cloud API retries anything else. A body is JSON or a form (wuzapi's
    form mode), with its Content-Type (415 otherwise): what every provider kind sends.
    """
    request = _request(router.current_event)
    try:
        check_media_type(request.headers.get("content-type"), request.body, WEBHOOK_MEDIA_TYPES)
        result = ingest.receive(provider_id, request)
    except SwitchboardError:
        metrics.add_metric(name="WebhookEventsRejected", unit=MetricUnit.Count, value=1)
        raise
    if result.instance:
        metrics.add_dimension(name="instance", value=result.instance)
    metrics.add_metric(name=METRIC_BY_OUTCOME[result.outcome], unit=MetricUnit.Count, value=1)
    return result


@router.get(
    "/webhooks/<provider_id>",
    tags=["provider webhooks"],
    responses=documented(403, 404),
    openapi_extensions=NO_API_KEY,
)
def verify_subscription(ingest: Ingest, provider_id: Annotated[ProviderId, Path()]) -> Response[str]:
    """The Meta Cloud API's subscription check: answers `hub.challenge` as text when `hub.mode` is
    `subscribe` and `hub.verify_token` is the provider's verify token; 403 otherwise."""
    query = dict(router.current_event.query_string_parameters or {})
    challenge = ingest.verify_subscription(provider_id, query)
    return Response(status_code=200, content_type=content_types.TEXT_PLAIN, body=challenge)


def _request(event: Any) -> WebhookRequest:
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
    headers = {name.lower(): value for name, value in (event.headers or {}).items()}
    return WebhookRequest(headers=headers, query=dict(event.query_string_parameters or {}), body=body)

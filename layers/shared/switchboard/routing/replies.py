"""Replies from the downstream through a named instance, and that instance's webhook secret."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote, urlencode

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import ValidationError

from switchboard.core.api.auth import requires
from switchboard.core.api.body import JSON, check_media_type, parse_json
from switchboard.core.api.errors import NO_API_KEY, documented
from switchboard.core.errors import InvalidInput, Unauthenticated
from switchboard.core.identity import Principal, Scope
from switchboard.core.observability import metrics
from switchboard.core.settings import get_settings
from switchboard.core.wire import InstanceName, OwnerTag
from switchboard.routing.deps import outbox_service
from switchboard.routing.outbox import OutboxService
from switchboard.routing.reply_schemas import (
    SECRET_HEADER,
    TOKEN_PARAMETER,
    InstanceWebhookSecretView,
    OutgoingView,
    OutgoingWebhook,
)

router = APIGatewayHttpRouter()
Outbox = Annotated[OutboxService, Depends(outbox_service)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]


@router.post(
    "/api/tenants/<owner_tag>/instances/<name>/webhook",
    tags=["outgoing"],
    responses=documented(400, 401, 415, 422),
    openapi_extensions=NO_API_KEY,
)
def outgoing_webhook(
    outbox: Outbox, owner_tag: Annotated[OwnerTag, Path()], name: Annotated[InstanceName, Path()]
) -> OutgoingView:
    """The downstream's outgoing-message webhook (Chatwoot's `message_created` from an API-channel
    inbox), authenticated by the instance's secret: in the `X-Switchboard-Secret` header, or as
    `?token=` (a Chatwoot inbox's webhook URL cannot carry a header; use the `webhookUrl` that
    `webhook-secret` answers). Agents' replies and the inbox's automatic messages (greeting,
    out-of-office, CSAT survey) are sent, in parts when longer than one message of the instance's
    kind: at once when the instance is connected, else kept in its outbox (in order) until it
    reconnects or the validity runs out.

    Attachments (`attachments[]`) are fetched at once from the helpdesk into the media bucket and
    leave after the text, the first with the text as its caption where it takes one: an image, a
    video, a document with its file name, a recording as a voice note (other than OGG/Opus only
    where the kind converts it, else as an audio file), a location as a location. One that cannot
    leave is told to the agent as a private note, and the rest goes on. A reply to a message
    (`content_attributes.in_reply_to`) quotes it.
    A `message_updated` whose `content_attributes.deleted` is set deletes the reply for everyone
    where the instance's kind can (wuzapi, Evolution; the Cloud API cannot: the agent is told)."""
    event = router.current_event
    presented = event.headers.get(SECRET_HEADER.lower()) or (event.query_string_parameters or {}).get(TOKEN_PARAMETER)
    try:
        instance = outbox.authenticate(owner_tag, name, presented)
    except Unauthenticated:
        metrics.add_metric(name="RepliesRejected", unit=MetricUnit.Count, value=1)
        raise
    # Chatwoot posts its webhooks as JSON (`Webhooks::Trigger`: `content_type: :json`).
    check_media_type(event.headers.get("content-type"), event.body, {JSON})
    try:
        payload = OutgoingWebhook.model_validate(parse_json(router.current_event.decoded_body or ""))
    except (ValueError, ValidationError) as exc:
        raise InvalidInput("the body is not a message webhook", code="invalid_webhook_body") from exc
    metrics.add_dimension(name="instance", value=instance.key)
    revocation = payload.revocation()
    if revocation is not None:
        revoked = outbox.revoke(instance, revocation)
        return OutgoingView(status=revoked.status, reason=revoked.reason)
    reply = payload.reply()
    metrics.add_metric(name="RepliesReceived", unit=MetricUnit.Count, value=0 if reply is None else 1)
    if reply is None:
        return OutgoingView(status="IGNORED")
    outcome = outbox.submit(instance, reply)
    return OutgoingView(status=outcome.status, reason=outcome.reason)


@router.post(
    "/api/instances/<name>/webhook-secret",
    status_code=201,
    tags=["outgoing"],
    responses=documented(401, 403, 404),
)
def rotate_webhook_secret(
    outbox: Outbox, name: Annotated[InstanceName, Path()], principal: Admin
) -> InstanceWebhookSecretView:
    """Generate the instance's outgoing webhook secret (the previous one stops working). Shown once,
    with `webhookUrl`: the URL to paste as the webhook of the instance's Chatwoot API-channel inbox."""
    created = outbox.new_webhook_secret(principal, name)
    metrics.add_metric(name="ReplySecretsRotated", unit=MetricUnit.Count, value=1)
    base = (get_settings().public_base_url or "").rstrip("/")
    query = urlencode({TOKEN_PARAMETER: created.secret})
    path = f"/api/tenants/{quote(principal.tenant, safe='')}/instances/{quote(name, safe='')}/webhook"
    webhook_url = f"{base}{path}?{query}"
    return InstanceWebhookSecretView(secret=created.secret, hint=created.hint, webhook_url=webhook_url)

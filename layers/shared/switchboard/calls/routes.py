"""Call control routes: dial (atomic slot reservation), claim/transfer, hangup, video stop, reconcile."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Body as BodyParam
from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.calls.deps import call_service, dialing_service, media_service, reconcile_on_demand
from switchboard.calls.schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    AttachmentView,
    CallView,
    ClaimCall,
    DialCall,
    DialView,
    ReconcileView,
    VideoAction,
)
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.errors import InvalidInput
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import InstanceName

if TYPE_CHECKING:
    # Each service is imported by the composition root when a route that takes it first runs.
    from switchboard.calls.dialing import DialService
    from switchboard.calls.media import MediaService
    from switchboard.calls.on_demand import ReconcileOnDemand
    from switchboard.calls.service import CallService
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    DialService = Any
    MediaService = Any
    ReconcileOnDemand = Any
    CallService = Any

router = APIGatewayHttpRouter()
Calls = Annotated[CallService, Depends(call_service)]
Dialing = Annotated[DialService, Depends(dialing_service)]
Reconciliation = Annotated[ReconcileOnDemand, Depends(reconcile_on_demand)]
Media = Annotated[MediaService, Depends(media_service)]
Agent = Annotated[Principal, Depends(requires(router, Scope.AGENT))]
AgentOrAdmin = Annotated[Principal, Depends(requires(router, Scope.AGENT, Scope.ADMIN))]
InstancePath = Annotated[InstanceName, Path()]
CallIdPath = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")]
DIAL_ERRORS = documented(400, 401, 403, 404, 409, 422, 502, 504)
CONTROL_ERRORS = documented(400, 401, 403, 404, 409, 422, 502, 504)
RECONCILE_ERRORS = documented(400, 401, 403, 404, 409, 422, 429, 502, 504)
ATTACH_ANSWER: dict[int, OpenAPIResponse] = {
    200: {"description": "The media URL", "content": {"application/json": {"model": AttachmentView}}}
}
# Passing `responses` replaces Powertools' generated success entry, so it is listed here too.
CALL_ANSWER: dict[int, OpenAPIResponse] = {
    200: {"description": "The call", "content": {"application/json": {"model": CallView}}}
}
RECONCILE_ANSWER: dict[int, OpenAPIResponse] = {
    200: {"description": "What was applied", "content": {"application/json": {"model": ReconcileView}}}
}
DIAL_ANSWERS: dict[int, OpenAPIResponse] = {
    201: {"description": "The call", "content": {"application/json": {"model": DialView}}},
    202: {
        "description": "Outcome unknown: the slot stays reserved; retry with the same key",
        "content": {"application/json": {"model": DialView}},
    },
}


IdempotencyKey = Annotated[
    str,
    Header(
        alias="idempotency-key",
        description="Required: a retry of a dial with the same key is the same dial (1..128 printable ASCII).",
    ),
]


def _idempotency_key(key: str) -> str:
    if not key:
        raise InvalidInput("the Idempotency-Key header is required to dial", code="idempotency_key_required")
    if not re.fullmatch(IDEMPOTENCY_KEY_PATTERN, key):
        raise InvalidInput("the Idempotency-Key must be 1..128 printable ASCII characters")
    return key


@router.post(
    "/api/connections/<instance>/calls",
    status_code=201,
    tags=["call control"],
    responses={**DIAL_ANSWERS, **DIAL_ERRORS},
)
def dial(
    dialing: Dialing, instance: InstancePath, body: DialCall, idempotency_key: IdempotencyKey, principal: Agent
) -> Response[DialView]:
    """Dial `to` from this connection (header `Idempotency-Key` required: a retry with it is the same dial).

    201 with the call; 202 `pending` when the provider's answer was lost (the slot stays reserved;
    retry with the same key); 409 `line_busy` with the limit and the occupants; 409
    `instance_disconnected`.
    """
    outcome = dialing.dial(principal, instance, body.to, body.video, _idempotency_key(idempotency_key))
    view = DialView.of(outcome)
    return Response(
        status_code=202 if outcome.call is None else 201,
        content_type=content_types.APPLICATION_JSON,
        body=view,
    )


@router.get("/api/calls/<instance>/<call_id>", tags=["call control"], responses={**CALL_ANSWER, **CONTROL_ERRORS})
def get_call(calls: Calls, instance: InstancePath, call_id: CallIdPath, principal: AgentOrAdmin) -> CallView:
    return CallView.of(calls.get(principal, instance, call_id))


@router.post(
    "/api/calls/<instance>/<call_id>/claim", tags=["call control"], responses={**CALL_ANSWER, **CONTROL_ERRORS}
)
def claim_call(
    calls: Calls,
    instance: InstancePath,
    call_id: CallIdPath,
    principal: AgentOrAdmin,
    body: Annotated[ClaimCall | None, BodyParam()] = None,
) -> CallView:
    """Take the call (409 `call_owned` if another attendant has it); `transferTo` hands it over (owner or admin)."""
    transfer_to = body.transfer_to if body else None
    return CallView.of(calls.claim(principal, instance, call_id, transfer_to))


@router.post(
    "/api/calls/<instance>/<call_id>/hangup", tags=["call control"], responses={**CALL_ANSWER, **CONTROL_ERRORS}
)
def hangup_call(calls: Calls, instance: InstancePath, call_id: CallIdPath, principal: AgentOrAdmin) -> CallView:
    """End the call at the provider (owner or admin); the slot frees when the provider confirms the end."""
    return CallView.of(calls.hangup(principal, instance, call_id))


@router.post(
    "/api/calls/<instance>/<call_id>/video", tags=["call control"], responses={**CALL_ANSWER, **CONTROL_ERRORS}
)
def call_video(
    calls: Calls, instance: InstancePath, call_id: CallIdPath, body: VideoAction, principal: AgentOrAdmin
) -> CallView:
    """`{"action": "stop"}` turns the camera off (owner or admin); the call keeps its slot."""
    return CallView.of(calls.stop_video(principal, instance, call_id))


@router.post(
    "/api/calls/<instance>/<call_id>/attach", tags=["call control"], responses={**ATTACH_ANSWER, **CONTROL_ERRORS}
)
def attach_media(media: Media, instance: InstancePath, call_id: CallIdPath, principal: AgentOrAdmin) -> AttachmentView:
    """A one-time media URL for the caller's own live call (connect within `expiresAt`).

    403 `not_call_owner`; 409 `call_not_claimed` (claim or answer first), `call_ended`; 422
    `not_supported` (the provider has no call media). A reattach by the owner within 25 s of a
    socket drop resumes the same media session (`resumed`).
    """
    return AttachmentView.of(media.attach(principal, instance, call_id))


@router.post(
    "/api/connections/<instance>/reconcile",
    tags=["call control"],
    responses={**RECONCILE_ANSWER, **RECONCILE_ERRORS},
)
def reconcile(reconciliation: Reconciliation, instance: InstancePath, principal: AgentOrAdmin) -> ReconcileView:
    """Read the provider now (status, active calls, ends, pending reservations) and apply it with the usual guards.

    At most once per connection every 10 s (all callers and replicas together): inside that
    window, 429 `rate_limited` with `Retry-After`; the connection's calls view is that fresh.
    """
    return ReconcileView.of(reconciliation.reconcile(principal, instance))

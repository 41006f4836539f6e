"""Send API: `POST /api/messages` (scope send, Idempotency-Key) and `GET /api/messages/{message_id}`."""

from __future__ import annotations

import re
from typing import Annotated

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard import bootstrap
from switchboard.catalog.domain import Principal, Scope
from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.errors import InvalidInput
from switchboard.messages.schemas import IDEMPOTENCY_KEY_PATTERN, AcceptedView, MessageView, SendMessage

router = APIGatewayHttpRouter()
Sender = Annotated[Principal, Depends(requires(router, Scope.SEND))]
Reader = Annotated[Principal, Depends(requires(router, Scope.SEND, Scope.ADMIN))]


@router.post(
    "/api/messages",
    status_code=202,
    tags=["messages"],
    responses=documented(400, 401, 403, 409, 422, 500),
)
def send_message(body: SendMessage, principal: Sender) -> AcceptedView:
    """Queue a text message; it leaves through the key's default number or its pool.

    Send an `Idempotency-Key` header (kept 24 h per API key) to retry safely: the same key and
    body answer the same message; another body is 422 `idempotency_key_reused`; a request still
    in progress is 409 `idempotency_key_in_flight`.
    """
    idempotency_key = router.current_event.headers.get("idempotency-key")
    if idempotency_key is not None and not re.fullmatch(IDEMPOTENCY_KEY_PATTERN, idempotency_key):
        raise InvalidInput(
            "Idempotency-Key must be 1 to 255 printable ASCII characters", code="invalid_idempotency_key"
        )
    accepted = bootstrap.message_service().submit(principal, body.to, body.text, idempotency_key)
    return AcceptedView(id=accepted.id, status=accepted.status)


@router.get("/api/messages/<message_id>", tags=["messages"], responses=documented(401, 403, 404))
def get_message(message_id: Annotated[str, Path(max_length=64)], principal: Reader) -> MessageView:
    """Status, source number, instance, attempts, failure reason and the trace of the pool decision."""
    return MessageView.of(bootstrap.message_service().get(principal, message_id))

"""Send API: `POST /api/messages` (scope send, Idempotency-Key) and `GET /api/messages/{message_id}`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from switchboard.core.api.auth import requires
from switchboard.core.api.errors import documented
from switchboard.core.api.query import statuses
from switchboard.core.clock import utcnow
from switchboard.core.errors import InvalidInput, UnsupportedByProvider
from switchboard.core.identity import Principal, Scope
from switchboard.core.wire import Instant
from switchboard.messages.deps import client_webhook_deliverer, media_uploads, message_service
from switchboard.messages.domain import (
    MAX_LOG_PAGE,
    RECIPIENT_PATTERN,
    Direction,
    LogFilter,
    MessageStatus,
    recipient_digits,
)
from switchboard.messages.log_schemas import LogPageView
from switchboard.messages.schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    AcceptedView,
    ClientWebhookSecretView,
    ContactWindowView,
    CreateUpload,
    MessageView,
    SendMessage,
    UploadView,
)
from switchboard.messages.service import MessageService

if TYPE_CHECKING:
    # Only the webhook secret's route takes it: the other routes' containers do not import it.
    from switchboard.media.uploads import MediaUploads
    from switchboard.messages.client_webhooks import ClientWebhookDeliverer
else:
    # Depends() never looks at the type, and the module is not imported before a route needs it.
    ClientWebhookDeliverer = Any
    MediaUploads = Any

router = APIGatewayHttpRouter()
Messages = Annotated[MessageService, Depends(message_service)]
ClientWebhooks = Annotated[ClientWebhookDeliverer, Depends(client_webhook_deliverer)]
Admin = Annotated[Principal, Depends(requires(router, Scope.ADMIN))]
ID = Annotated[str, Path(max_length=64)]
Sender = Annotated[Principal, Depends(requires(router, Scope.SEND))]
Uploads = Annotated[MediaUploads | None, Depends(media_uploads)]
Reader = Annotated[Principal, Depends(requires(router, Scope.SEND, Scope.ADMIN))]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="idempotency-key",
        description="Retry safely: the same key and body answer the same message for 24 h (1..255 printable ASCII).",
    ),
]


@router.post(
    "/api/messages",
    status_code=202,
    tags=["messages"],
    responses=documented(400, 401, 403, 409, 422, 500, 502),
)
def send_message(
    messages: Messages, body: SendMessage, principal: Sender, idempotency_key: IdempotencyKey = None
) -> AcceptedView:
    """Queue a message; it leaves through the key's default number or its pool.

    Exactly one of `text`, `media` (`mediaId` from `POST /api/media`, or an https `url`
    fetched once; `type` image, video, audio, voice, document or sticker; `caption`,
    `fileName`), `location`, `contacts` (each sent as a vCard), `reaction` (`emoji` "" removes
    it), `template` (an approved template of the key's Cloud API numbers, checked against its
    definition: 422 `unknown_template` or `template_parameters` says what is wrong) or
    `interactive` (reply buttons or a list), plus `replyTo` on any but a reaction. A reaction or
    a quoted reply leaves only through the number the conversation is on; when that number cannot
    send it, it ends FAILED.

    A Cloud API number sends free-form content (anything but a template) only within the
    contact's 24-hour customer-service window: outside it the pool tries the key's next number,
    else the message ends FAILED `outside_service_window`, or sends `fallbackTemplate` when given.

    Send an `Idempotency-Key` header (kept 24 h per API key) to retry safely: the same key and
    body answer the same message; another body is 422 `idempotency_key_reused`; a request still
    in progress is 409 `idempotency_key_in_flight`.

    With `validFor` (seconds, at most a day) a message that finds none of the key's numbers
    connected waits (status WAITING, client webhook `message.waiting`) and is tried again until
    it leaves or its validity ends (FAILED `expired`); without it, it fails at once.
    """
    if idempotency_key is not None and not re.fullmatch(IDEMPOTENCY_KEY_PATTERN, idempotency_key):
        raise InvalidInput(
            "Idempotency-Key must be 1 to 255 printable ASCII characters", code="invalid_idempotency_key"
        )
    content, media = body.content()
    fallback, fallback_media = body.fallback()
    accepted = messages.submit(
        principal,
        body.to,
        body.text,
        idempotency_key,
        valid_for=body.valid_for,
        content=content,
        reply_to=body.reply_to,
        media=media,
        fallback_template=fallback,
        fallback_media=fallback_media,
    )
    return AcceptedView(id=accepted.id, status=accepted.status)


INCOMING_STATUSES = ("RECEIVED", "FORWARDED", "NO_DOWNSTREAM", "IGNORED", "FAILED")
Phone = Annotated[str | None, Query(pattern=RECIPIENT_PATTERN)]
Cursor = Annotated[str | None, Query(max_length=2048)]
Limit = Annotated[int, Query(ge=1, le=MAX_LOG_PAGE)]


# What a message log entry's status may be, outgoing and incoming ("FAILED" is both).
LOG_STATUSES = (*(str(status) for status in MessageStatus), *INCOMING_STATUSES)


def _digits(phone: str | None) -> str | None:
    return None if phone is None else recipient_digits(phone)


@router.get("/api/messages", tags=["messages"], responses=documented(400, 401, 403, 422))
def list_messages(  # every filter is a query parameter, passed by name
    *,
    messages: Messages,
    principal: Admin,
    direction: Annotated[Direction | None, Query()] = None,
    status: Annotated[str | None, Query(max_length=200, description="One status or several, comma separated.")] = None,
    number: Annotated[str | None, Query(max_length=64, description="The tenant's number (id or digits).")] = None,
    instance: Annotated[str | None, Query(max_length=64)] = None,
    to: Phone = None,
    from_: Annotated[str | None, Query(alias="from", pattern=RECIPIENT_PATTERN)] = None,
    api_key: Annotated[str | None, Query(alias="apiKey", max_length=64)] = None,
    since: Annotated[Instant | None, Query()] = None,
    until: Annotated[Instant | None, Query()] = None,
    type_: Annotated[str | None, Query(alias="type", max_length=32)] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> LogPageView:
    """The tenant's messages, both directions, newest first, one page at a time.

    `to` (outgoing to) and `from` (incoming from) name a customer; every filter narrows the list.
    A page may hold fewer than `limit` rows and still have a `cursor`: a narrow filter stops
    reading after a few index pages rather than reading the whole log at once.
    """
    if to is not None and from_ is not None and _digits(to) != _digits(from_):
        raise InvalidInput("to and from name different customers", code="invalid_filter")
    if to is not None and from_ is not None:
        direction_filter = direction
    elif to is not None:
        direction_filter = direction or "out"
    elif from_ is not None:
        direction_filter = direction or "in"
    else:
        direction_filter = direction
    query = LogFilter(
        direction=direction_filter,
        status=statuses(status, LOG_STATUSES),
        number=number,
        instance=instance,
        contact=_digits(to or from_),
        api_key_id=api_key,
        since=since,
        until=until,
        kind=type_,
        limit=limit,
        cursor=cursor,
    )
    return LogPageView.of(messages.log(principal, query))


@router.get("/api/contacts/<number>/messages", tags=["messages"], responses=documented(400, 401, 403, 422))
def contact_messages(
    messages: Messages,
    number: Annotated[str, Path(pattern=RECIPIENT_PATTERN)],
    principal: Admin,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> LogPageView:
    """One customer's whole conversation across the pool, both directions, oldest first."""
    query = LogFilter(contact=_digits(number), limit=limit, cursor=cursor, oldest_first=True)
    return LogPageView.of(messages.log(principal, query))


@router.get("/api/contacts/<number>/window", tags=["messages"], responses=documented(400, 401, 403, 422))
def contact_window(
    messages: Messages, number: Annotated[str, Path(pattern=RECIPIENT_PATTERN)], principal: Reader
) -> ContactWindowView:
    """The customer-service window of each of the tenant's numbers with this contact: when they
    last wrote to it, and until when it may answer freely (24 h later). A Cloud API number
    (`serviceWindow`) sends anything but a template only while it is `open`."""
    contact = _digits(number) or number
    return ContactWindowView.of(contact, messages.windows(principal, contact), utcnow())


@router.get("/api/messages/<message_id>", tags=["messages"], responses=documented(401, 403, 404))
def get_message(
    messages: Messages, uploads: Uploads, message_id: Annotated[str, Path(max_length=64)], principal: Reader
) -> MessageView:
    """Status, source number, instance, attempts, failure reason, validity and the trace of the pool
    decision; for a media message its `media` (type, caption, file name, type and size as the
    bytes say, and for an image a `previewUrl` valid for a few minutes)."""
    preview = None if uploads is None else uploads.preview_url
    return MessageView.of(messages.get(principal, message_id), preview)


@router.post(
    "/api/api-keys/<key_id>/webhook-secret",
    status_code=201,
    tags=["number pool"],
    responses=documented(400, 401, 403, 404, 409, 422),
)
def rotate_webhook_secret(client_webhooks: ClientWebhooks, key_id: ID, principal: Admin) -> ClientWebhookSecretView:
    """A new signing secret for the key's client webhooks (Standard Webhooks), shown only here.

    The previous secret stops signing at once. Verify deliveries with any Standard Webhooks library.
    """
    secret = client_webhooks.rotate_secret(principal, key_id)
    return ClientWebhookSecretView(api_key_id=key_id, secret=secret)


@router.post("/api/media", status_code=201, tags=["messages"], responses=documented(400, 401, 403, 413, 422))
def create_upload(uploads: Uploads, body: CreateUpload, principal: Sender) -> UploadView:
    """An upload for one file a message will send: PUT its bytes to `uploadUrl` with exactly
    `uploadHeaders` (its type and length are signed in) within 5 minutes, then send it with
    `media: {mediaId, type}`. The file is checked when a message first uses it: its size, its
    sha256 when given here, its type by its bytes and its kind's limit (image 5 MB, audio and
    video 16 MB, document 100 MB, sticker 100 KB, animated 500 KB)."""
    if uploads is None:  # a deployment without the media bucket
        raise UnsupportedByProvider("media uploads are not configured here", code="media_unsupported")
    ticket = uploads.presign(principal.tenant, body.mime_type, body.size, file_name=body.file_name, sha256=body.sha256)
    return UploadView(
        media_id=ticket.media_id, upload_url=ticket.url, upload_headers=ticket.headers, expires_at=ticket.expires_at
    )

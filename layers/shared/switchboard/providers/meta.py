"""The Meta WhatsApp Cloud API: its `ProviderClient` (text messages only) and its webhooks.

Sending: `POST /{version}/{phone-number-id}/messages` with `Authorization: Bearer <token>` (the
target's instance token) and `{"messaging_product": "whatsapp", "recipient_type": "individual",
"to", "type": "text", "text": {"body", "preview_url": false}}`; the answer's `messages[0].id` (the
wamid) is the provider message id. The phone-number id is `target.meta_phone_id`, else
`provider_instance_id`. The Cloud API has no idempotency key: after a `ProviderTimeout` a retry
may send twice. Every request names the Graph API version the client was built with (the
`META_GRAPH_VERSION` setting). A Cloud API number has no session to lose, so `instance_status`
always answers connected; it reads the number's standing from its phone number node
(`GET /{version}/{phone-number-id}?fields=status,quality_rating,...`, the access token of the
target, else the provider's admin token), which the ban watch judges. Calls, call settings and
webhook subscriptions raise `UnsupportedByProvider`.

Errors are `{"error": {"message", "type", "code", "error_subcode"?, "error_data", "fbtrace_id"}}`
and are decided on `error.code`, not on the HTTP status (Meta answers the pair rate limit with 400
or 429 depending on the day): throttling codes are `ProviderUnavailable` (retryable), whatever
the status; then 5xx and 429 are `ProviderUnavailable` and anything else `ProviderRejected`. Only
the numeric code reaches our messages, never Meta's free text.

Webhooks: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app secret, raw body)>`, the app secret
being the provider's webhook secret. Meta signs no timestamp: a replayed delivery is caught by the
ingest's dedupe on event ids. Payloads are `{"object": "whatsapp_business_account", "entry":
[{"id", "changes": [{"field", "value"}]}]}`; each change of field `messages` is bound to our
instance by `value.metadata.phone_number_id` (`meta_phone_id` of the instance's number); each
message's content is mapped by `providers.meta_content` (a media by its media id, fetched later).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any

import httpx
from pydantic import BeforeValidator, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from switchboard.core.api.body import MAX_WEBHOOK_BODY_BYTES, parse_json
from switchboard.core.clock import Deadline
from switchboard.core.errors import (
    Forbidden,
    InvalidInput,
    ProviderError,
    ProviderRejected,
    ProviderThrottled,
    ProviderUnavailable,
    provider_text,
)
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.providers import envelope, meta_send
from switchboard.providers.base import (
    Credentials,
    DeliveryToken,
    DownloadedMedia,
    IgnoredKind,
    InboundEvent,
    InstanceStatus,
    KindDefaults,
    NumberStanding,
    OutgoingFile,
    ProviderClient,
    ProviderKindSpec,
    ProviderTarget,
    Quote,
    SentMessage,
    UploadedMedia,
    WebhookRequest,
    display_name,
)
from switchboard.providers.content import Content, MediaMessage, MediaSource, Text, content_data, header_file
from switchboard.providers.http import DEFAULT_READ_TIMEOUT_SECONDS, ProviderHttp, error_code, path_segment
from switchboard.providers.kinds import ProviderKind, WebhookScheme
from switchboard.providers.messaging_only import MessagingOnly
from switchboard.providers.meta_content import map_content

# Graph API v25.0: released 18 February 2026, available until 29 July 2028 (Meta's changelog).
DEFAULT_API_VERSION = "v25.0"
SEND_ROUTE = "/{version}/{phone-number-id}/messages"
MEDIA_ROUTE = "/{version}/{phone-number-id}/media"
META_TEXT_CHARS = 4096
NUMBER_ROUTE = "/{version}/{phone-number-id}"
TEMPLATES_ROUTE = "/{version}/{waba-id}/message_templates"
# What a listing asks of each template: enough to check a send against it and to show it.
TEMPLATE_FIELDS = "id,name,language,status,category,parameter_format,components"
TEMPLATE_PAGE_SIZE = 100
MAX_TEMPLATE_PAGES = 60  # 6,000 templates: more than Meta lets one account hold
# The phone number node's fields that tell its standing. The messaging limit tier is
# `whatsapp_business_manager_messaging_limit` (`messaging_limit_tier` is deprecated, and asking the
# Graph API for a field it no longer has fails the whole read with code 100).
NUMBER_FIELDS = "status,quality_rating,whatsapp_business_manager_messaging_limit,throughput,code_verification_status"
_WORD = re.compile(r"^[A-Z0-9_]{1,40}$")

# Throughput (130429), pair rate limit (131056), app (4) and business-account (80007) call limits:
# nothing was sent, the same request succeeds later.
RATE_LIMIT_CODES = frozenset({"4", "80007", "130429", "131056"})
# Of those, the number's own limits (throughput, pair rate): `ProviderThrottled`, a signal on the
# number's health, so the pool sends through another number meanwhile.
NUMBER_LIMIT_CODES = frozenset({"130429", "131056"})
# Expired or invalid access token: the provider's credentials, not this message, must change.
TOKEN_CODES = frozenset({"190"})
# Invalid parameter, undeliverable, outside the 24 h window, per-user marketing limit.
REFUSED_CODES = frozenset({"100", "131026", "131047", "131049"})
# "Re-engagement message": more than 24 h since the customer last wrote to this number, so only a
# template may reach them. Our reason for it, whether Meta answers it to the send or in a status.
OUTSIDE_WINDOW_CODE = "131047"
OUTSIDE_SERVICE_WINDOW = "outside_service_window"


class _Answer(Model):
    model_config = ConfigDict(extra="ignore")


class _MessageId(_Answer):
    id: StrictStr = Field(min_length=1, max_length=256)


class _SendAnswer(_Answer):
    messages: list[_MessageId] = Field(min_length=1)


class _Cursors(_Answer):
    after: StrictStr | None = None


class _Paging(_Answer):
    cursors: _Cursors | None = None
    next: StrictStr | None = None


class _TemplatePage(_Answer):
    data: list[Any] = Field(default_factory=list)
    paging: _Paging | None = None


class _Throughput(_Answer):
    level: Any = None


class _NumberAnswer(_Answer):
    """The phone number node; values are read as Meta's enum words, anything else as unknown."""

    status: Any = None
    quality_rating: Any = None
    whatsapp_business_manager_messaging_limit: Any = None
    throughput: _Throughput | None = None
    code_verification_status: Any = None

    def standing(self) -> NumberStanding:
        return NumberStanding(
            status=_word(self.status),
            quality_rating=_word(self.quality_rating),
            messaging_limit=_word(self.whatsapp_business_manager_messaging_limit),
            throughput=_word(self.throughput.level) if self.throughput else None,
            code_verification_status=_word(self.code_verification_status),
        )


def _word(value: object) -> str | None:
    """One of Meta's enum words (`RESTRICTED`, `TIER_1K`), else None: no free text goes further."""
    return value if isinstance(value, str) and _WORD.fullmatch(value) else None


class MetaCloudClient(MessagingOnly):
    provider_label = "the Meta Cloud API client"
    subscriptions_note = "Cloud API webhooks are configured in the Meta app, not per number"

    def __init__(
        self,
        *,
        local_mode: bool,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
        api_version: str = DEFAULT_API_VERSION,
    ) -> None:
        self._http = ProviderHttp("meta", local_mode=local_mode, read_timeout=read_timeout, transport=transport)
        self._api_version = api_version

    def close(self) -> None:
        self._http.close()

    def download_media(
        self, target: ProviderTarget, source: MediaSource, *, max_bytes: int, deadline: Deadline | None = None
    ) -> DownloadedMedia:
        from switchboard.providers import meta_media  # noqa: PLC0415 - only the forwarder fetches media

        return meta_media.download(self._http, self._api_version, target, source, max_bytes, deadline=deadline)

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        if not target.instance_token:
            raise InvalidInput("the target has no Cloud API access token")
        return self._send(target, meta_send.message_body(phone, Text(body=body)))

    def send_content(
        self,
        target: ProviderTarget,
        phone: str,
        content: Content,
        idempotency_key: str,
        *,
        quoted: Quote | None = None,
        file: OutgoingFile | None = None,
        uploaded: UploadedMedia | None = None,
    ) -> SentMessage:
        """Send `content` (`meta_send`); a media message's file is uploaded to the number first,
        unless `uploaded` holds a media id this number got for the same bytes."""
        media_id = None
        if isinstance(content, MediaMessage):
            if file is None:
                raise InvalidInput("a media message needs its file")
            meta_send.check_file(content.media, file)
            media_id = self._media_id(target, file, uploaded)
        elif header_file(content) is not None:
            if file is None:
                raise InvalidInput("a template or an interactive message with a file header needs its file")
            media_id = self._media_id(target, file, uploaded)
        return self._send(target, meta_send.message_body(phone, content, quoted=quoted, media_id=media_id))

    def list_templates(self, target: ProviderTarget, account_id: str) -> list[dict[str, Any]]:
        """Every template of the WhatsApp Business Account `account_id`, page after page
        (`GET /{version}/{waba-id}/message_templates`, the target's access token, else the
        provider's admin token); at most `MAX_TEMPLATE_PAGES` pages of `TEMPLATE_PAGE_SIZE`."""
        token = target.instance_token or target.admin_token
        if not token:
            raise InvalidInput("the target has no Cloud API access token")
        path = f"/{path_segment(self._api_version)}/{path_segment(account_id)}/message_templates"
        label = self._http.label("GET", TEMPLATES_ROUTE)
        params = {"fields": TEMPLATE_FIELDS, "limit": str(TEMPLATE_PAGE_SIZE)}
        templates: list[dict[str, Any]] = []
        for _ in range(MAX_TEMPLATE_PAGES):
            response = self._http.request(
                "GET",
                target.base_url,
                path,
                route=TEMPLATES_ROUTE,
                headers={"Authorization": f"Bearer {token}"},
                params=params,
            )
            if not response.is_success:
                raise error_for(response, label)
            page = self._http.answer(response, _TemplatePage, label)
            templates += [item for item in page.data if isinstance(item, dict)]
            after = page.paging.cursors.after if page.paging and page.paging.cursors else None
            if not (page.paging and page.paging.next and after):
                break
            params = {**params, "after": after}
        return templates

    def _media_id(self, target: ProviderTarget, file: OutgoingFile, uploaded: UploadedMedia | None) -> str:
        phone_id = target.meta_phone_id or target.provider_instance_id
        known = uploaded.media_id(phone_id, file.sha256) if uploaded is not None else None
        if known is not None:
            return known
        path = f"/{path_segment(self._api_version)}/{path_segment(phone_id)}/media"
        response = self._http.request(
            "POST",
            target.base_url,
            path,
            route=MEDIA_ROUTE,
            headers=self._auth(target),
            files=meta_send.upload_form(file),
        )
        media_id = self._http.answer(response, _MessageId, self._http.label("POST", MEDIA_ROUTE)).id
        if uploaded is not None:
            uploaded.remember(phone_id, file.sha256, media_id)
        return media_id

    @staticmethod
    def _auth(target: ProviderTarget) -> dict[str, str]:
        if not target.instance_token:
            raise InvalidInput("the target has no Cloud API access token")
        return {"Authorization": f"Bearer {target.instance_token}"}

    def _send(self, target: ProviderTarget, body: dict[str, Any]) -> SentMessage:
        phone_id = target.meta_phone_id or target.provider_instance_id
        path = f"/{path_segment(self._api_version)}/{path_segment(phone_id)}/messages"
        response = self._http.request(
            "POST", target.base_url, path, route=SEND_ROUTE, headers=self._auth(target), body=body
        )
        label = self._http.label("POST", SEND_ROUTE)
        if not response.is_success:
            raise error_for(response, label)
        answer = self._http.answer(response, _SendAnswer, label)
        return SentMessage(provider_message_id=answer.messages[0].id)

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        """Connected, with the number's standing as the Graph API reports it now."""
        token = target.instance_token or target.admin_token
        if not token:
            raise InvalidInput("the target has no Cloud API access token")
        phone_id = target.meta_phone_id or target.provider_instance_id
        response = self._http.request(
            "GET",
            target.base_url,
            f"/{path_segment(self._api_version)}/{path_segment(phone_id)}",
            route=NUMBER_ROUTE,
            headers={"Authorization": f"Bearer {token}"},
            params={"fields": NUMBER_FIELDS},
        )
        label = self._http.label("GET", NUMBER_ROUTE)
        if not response.is_success:
            raise error_for(response, label)
        answer = self._http.answer(response, _NumberAnswer, label)
        return InstanceStatus(connected=True, kind="meta", number=answer.standing())


def _error_words(response: httpx.Response) -> str | None:
    """Meta's `error.message` and, when it adds one, `error.error_data.details` (kept for the operator)."""
    try:
        payload = json.loads(response.content)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return None
    data = error.get("error_data")
    parts = [error.get("message"), data.get("details") if isinstance(data, dict) else None]
    return provider_text(" — ".join(part for part in parts if isinstance(part, str) and part))


def error_for(response: httpx.Response, label: str) -> ProviderError:
    """The error for a non-2xx answer, decided on Meta's `error.code` first (see the module doc)."""
    status = response.status_code
    code = error_code(response)
    suffix = f" ({status} {code})" if code else f" ({status})"
    details: dict[str, Any] = {"status": status, "provider_code": code, "provider_message": _error_words(response)}
    if code in NUMBER_LIMIT_CODES:
        return ProviderThrottled(f"{label}: the number's rate limit{suffix}", rate_limited=True, **details)
    if code in RATE_LIMIT_CODES:
        return ProviderUnavailable(f"{label}: rate limited{suffix}", rate_limited=True, **details)
    if code in TOKEN_CODES:
        return ProviderRejected(f"{label}: access token refused{suffix}", **details)
    if code == OUTSIDE_WINDOW_CODE:
        return ProviderRejected(
            f"{label}: outside the customer-service window{suffix}", code=OUTSIDE_SERVICE_WINDOW, **details
        )
    if code in REFUSED_CODES:
        return ProviderRejected(f"{label}: request refused{suffix}", **details)
    if status >= 500 or status == 429:
        return ProviderUnavailable(f"{label}: provider unavailable{suffix}", **details)
    if status in (401, 403):
        return ProviderRejected(f"{label}: credentials refused{suffix}", **details)
    return ProviderRejected(f"{label}: request refused{suffix}", **details)


# --- webhooks ---------------------------------------------------------------------------------

SIGNATURE_HEADER = "x-hub-signature-256"
_SIGNATURE = re.compile(r"sha256=([0-9a-fA-F]{64})")
_UNIX_SECONDS = re.compile(r"^[0-9]{1,12}$")
_CHALLENGE = re.compile(r"[!-~]{1,256}")  # printable ASCII, no spaces
_LABEL = re.compile(r"[^A-Za-z0-9_.-]")
_FIELDS = re.compile(r"[^A-Za-z0-9_., ]")
MAX_LABEL = 40


def _unix_seconds(value: object) -> object:
    """Unix seconds as Meta writes them: a digit string in most examples, a JSON number in others
    (`user_preferences`, `expiration_timestamp`); both read the same."""
    if isinstance(value, str) and _UNIX_SECONDS.fullmatch(value):
        return int(value)
    if type(value) is int and 0 <= value < 10**12:
        return value
    raise ValueError("not unix seconds")


def _code(value: object) -> object:
    """An error code: an integer, also when written as a digit string."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 12:
        return int(value)
    return value


UnixSeconds = Annotated[int, BeforeValidator(_unix_seconds)]
ErrorCode = Annotated[StrictInt, BeforeValidator(_code)]


class _Payload(Model):
    """Lenient on what we do not read, strict on what we do."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Metadata(_Payload):
    phone_number_id: StrictStr = Field(pattern=r"^[0-9]{1,32}$")


class _Text(_Payload):
    body: StrictStr


class _Message(_Payload):
    id: StrictStr = Field(min_length=1, max_length=200)
    sender: StrictStr | None = Field(default=None, alias="from")
    timestamp: UnixSeconds | None = None
    type: StrictStr = Field(min_length=1)
    text: _Text | None = None


class _StatusError(_Payload):
    code: ErrorCode | None = None
    title: StrictStr | None = None


class _Status(_Payload):
    id: StrictStr = Field(min_length=1, max_length=200)
    status: StrictStr = Field(min_length=1)
    timestamp: UnixSeconds | None = None
    errors: list[_StatusError] = Field(default_factory=list)


class _Profile(_Payload):
    name: StrictStr | None = None


class _Contact(_Payload):
    """`value.contacts[]`: who wrote; `wa_id` is absent when the user's phone number is hidden."""

    wa_id: StrictStr | None = None
    profile: _Profile | None = None


class _Change(_Payload):
    field: StrictStr = Field(min_length=1)
    value: dict[str, Any] = Field(default_factory=dict)


class _Notification(_Payload):
    object: StrictStr
    entry: list[Any]


def signature_matches(secret: str, body: bytes, header: str | None) -> bool:
    """True when `header` is `sha256=<hex>` of the HMAC of the raw body; compared in constant time."""
    if not secret or not header:
        return False
    match = _SIGNATURE.fullmatch(header.strip())
    if match is None:
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, match.group(1).lower())


def map_events(body: bytes) -> list[InboundEvent]:
    """Every message and status of the delivery, then one ignored event per other change.

    Only a body that is not a Cloud API notification at all is refused (InvalidInput): Meta
    retries a refused delivery for days, with every message in it. Below the envelope each
    change, message and status stands alone: one that does not map becomes an ignored event with
    its reason (or, without a `metadata.phone_number_id` to bind it to, is logged and dropped),
    and the others are applied."""
    try:
        notification = _Notification.model_validate(parse_json(body, limit=MAX_WEBHOOK_BODY_BYTES))
    except (ValueError, ValidationError) as exc:
        raise InvalidInput("the body is not a Cloud API notification", code="invalid_envelope") from exc
    events: list[InboundEvent] = []
    for entry in notification.entry:
        changes = entry.get("changes") if isinstance(entry, dict) else None
        if not isinstance(changes, list):
            logger.warning("Cloud API entry without a list of changes dropped")
            continue
        account = entry.get("id")
        for raw_change in changes:
            if _is_template_status(raw_change) and notification.object == "whatsapp_business_account":
                events += _template_status_events(account, raw_change)
                continue
            events += _change_events(notification.object, raw_change)
    return events


TEMPLATE_STATUS_FIELD = "message_template_status_update"
_WABA_ID = re.compile(r"^[0-9]{1,32}$")


class _TemplateStatus(_Payload):
    event: StrictStr = Field(pattern=r"^[A-Z_]{1,40}$")
    message_template_id: ErrorCode | None = None
    message_template_name: StrictStr = Field(min_length=1, max_length=512)
    message_template_language: StrictStr = Field(min_length=1, max_length=20)
    message_template_category: StrictStr | None = None
    reason: StrictStr | None = None


def _is_template_status(raw_change: object) -> bool:
    return isinstance(raw_change, dict) and raw_change.get("field") == TEMPLATE_STATUS_FIELD


def _template_status_events(account: object, raw_change: dict[str, Any]) -> list[InboundEvent]:
    """A template's new status (`APPROVED`, `REJECTED`, `PAUSED`, `DISABLED`, ...) in the WhatsApp
    Business Account `entry.id`: bound to the account (an instance on one of its numbers), not to a
    phone number. One that does not parse is logged and dropped: it names no template to update."""
    if not isinstance(account, str) or not _WABA_ID.fullmatch(account):
        logger.warning("template status change without an account id dropped")
        return []
    try:
        value = _TemplateStatus.model_validate(raw_change.get("value"))
    except ValidationError as exc:
        logger.warning("template status change not in the Cloud API format dropped", extra={"fields": _fields(exc)})
        return []
    data: dict[str, Any] = {
        "wabaId": account,
        "name": value.message_template_name,
        "language": value.message_template_language,
        "status": value.event,
    }
    if value.message_template_id is not None:
        data["id"] = str(value.message_template_id)
    if value.message_template_category is not None:
        data["category"] = _label(value.message_template_category)
    if value.reason is not None:
        data["reason"] = _label(value.reason)
    return [
        InboundEvent(
            name="template_status",
            binding=account,
            binding_field="waba_id",
            event_id=f"template_status:{_digest(raw_change)}",
            data=data,
        )
    ]


def _change_events(object_: str, raw_change: object) -> list[InboundEvent]:
    try:
        change = _Change.model_validate(raw_change)
    except ValidationError as exc:
        value = raw_change.get("value") if isinstance(raw_change, dict) else None
        return _ignored_change(raw_change, value, f"change not in the Cloud API format ({_fields(exc)})")
    if object_ != "whatsapp_business_account":
        return _ignored_change(change.model_dump(), change.value, f"{_label(object_)} object")
    if change.field != "messages":
        return _ignored_change(change.model_dump(), change.value, f"{_label(change.field)} field")
    return _messages_change(change)


def _messages_change(change: _Change) -> list[InboundEvent]:
    value = change.value
    try:
        binding = _Metadata.model_validate(value.get("metadata")).phone_number_id
    except ValidationError:
        logger.warning("Cloud API messages change without a phone number id dropped")
        return []
    messages, statuses = value.get("messages", []), value.get("statuses", [])
    if not isinstance(messages, list) or not isinstance(statuses, list):
        return _ignored_change(change.model_dump(), value, "messages change not in the Cloud API format")
    names = _profile_names(value.get("contacts"))
    events = [_message_event(binding, item, names) for item in messages]
    events += [_status_event(binding, item) for item in statuses]
    if not events:  # e.g. a change carrying only `errors`
        events += _ignored_change(change.model_dump(), value, "messages change without messages or statuses")
    return events


def _profile_names(contacts: object) -> dict[str | None, str]:
    """The WhatsApp profile name of each sender, by `wa_id` (None: the only contact, whatever its id).

    A contact that does not parse only loses its name: it never keeps its message from mapping."""
    if not isinstance(contacts, list):
        return {}
    names: dict[str | None, str] = {}
    for raw in contacts:
        try:
            contact = _Contact.model_validate(raw)
        except ValidationError:
            continue
        name = display_name(contact.profile.name if contact.profile else None)
        if name is not None:
            names[contact.wa_id] = name
    if len(contacts) == 1 and names:
        names[None] = next(iter(names.values()))
    return names


def _message_event(binding: str, raw: object, names: dict[str | None, str]) -> InboundEvent:
    try:
        message = _Message.model_validate(raw)
    except ValidationError as exc:
        return _malformed(binding, "message", raw, exc)
    seq = _millis(message.timestamp)
    ignored: str | None = None
    kind: IgnoredKind | None = None
    data: dict[str, Any] = {"id": message.id}
    sender = re.sub(r"[^0-9]", "", message.sender or "")
    mapped = map_content(raw) if isinstance(raw, dict) else "message not in the Cloud API format"
    if isinstance(mapped, str):
        ignored = mapped
    elif not sender:
        ignored, kind = "sender has no phone number", "no_sender"
    else:
        content, quoted = mapped
        data = {"id": message.id, "from": sender, "content": content_data(content)}
        if quoted is not None:
            data["replyTo"] = quoted
        if message.timestamp is not None:
            data["timestamp"] = _iso(message.timestamp)
        name = names.get(message.sender) or names.get(sender) or names.get(None)
        if name is not None:
            data["name"] = name
    return InboundEvent(
        name="message",
        binding=binding,
        binding_field="meta_phone_id",
        event_id=message.id,
        seq=seq,
        data=data,
        ignored=ignored,
        ignored_kind=kind,
    )


def _status_event(binding: str, raw: object) -> InboundEvent:
    try:
        status = _Status.model_validate(raw)
    except ValidationError as exc:
        return _malformed(binding, "receipt", raw, exc)
    mapped = {"delivered": "delivered", "read": "read", "played": "read", "failed": "failed"}.get(status.status)
    data: dict[str, Any] = {"id": status.id, "status": mapped or _label(status.status)}
    ignored = None
    if mapped is None:
        ignored = f"{_label(status.status)} status"
    elif mapped == "failed":
        data["errors"] = [{"code": error.code, "title": error.title} for error in status.errors]
        if any(str(error.code) == OUTSIDE_WINDOW_CODE for error in status.errors):
            data["reason"] = OUTSIDE_SERVICE_WINDOW
    return InboundEvent(
        name="receipt",
        binding=binding,
        binding_field="meta_phone_id",
        event_id=f"{status.id}:{_label(status.status)}",
        seq=_millis(status.timestamp),
        data=data,
        ignored=ignored,
    )


def _malformed(binding: str, name: str, raw: object, error: ValidationError) -> InboundEvent:
    """One item that does not map: recorded as ignored under a digest of its content (a redelivery
    of the same bytes is the same event), with the fields that failed as its reason."""
    item_id = raw.get("id") if isinstance(raw, dict) else None
    return InboundEvent(
        name=name,
        binding=binding,
        binding_field="meta_phone_id",
        event_id=f"malformed:{_digest(raw)}",
        data={"id": item_id} if isinstance(item_id, str) and 0 < len(item_id) <= 200 else {},
        ignored=f"{name} item not in the Cloud API format ({_fields(error)})",
        ignored_kind="malformed",
    )


def _ignored_change(change: object, value: object, reason: str) -> list[InboundEvent]:
    """One ignored event for a change we do not map, if its `metadata` says which number it is for."""
    try:
        metadata = _Metadata.model_validate(value.get("metadata") if isinstance(value, dict) else None)
    except ValidationError:
        return []
    field = change.get("field") if isinstance(change, dict) else None
    label = _label(field) if isinstance(field, str) else ""
    return [
        InboundEvent(
            name=label or "change",
            binding=metadata.phone_number_id,
            binding_field="meta_phone_id",
            event_id=f"{label}:{_digest(change)}",
            data={"field": label},
            ignored=reason,
        )
    ]


def _digest(value: object) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:40]


def _fields(error: ValidationError) -> str:
    """The names of the fields that failed: ours, from the model, never the provider's text."""
    names = {".".join(str(part) for part in item["loc"] if isinstance(part, str)) for item in error.errors()}
    return _FIELDS.sub("_", ", ".join(sorted(names - {""})) or "shape")[:80]


def _label(value: str) -> str:
    """A provider-chosen word made safe to record and log: short, no free text."""
    return _LABEL.sub("_", value)[:MAX_LABEL]


def _millis(seconds: int | None) -> int | None:
    return seconds * 1000 if seconds is not None else None


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def verified_challenge(query: dict[str, str], expected_token: str | None) -> str:
    """`hub.challenge` when the query is a subscription check with our verify token, else Forbidden."""
    token = query.get("hub.verify_token") or ""
    token_matches = bool(expected_token) and hmac.compare_digest((expected_token or "").encode(), token.encode())
    challenge = query.get("hub.challenge") or ""
    if query.get("hub.mode") != "subscribe" or not token or not token_matches or not _CHALLENGE.fullmatch(challenge):
        raise Forbidden("subscription verification failed", code="verification_failed")
    return challenge


class MetaKind(KindDefaults):
    name: ProviderKind = "meta"
    retry_safe = False
    always_connected = True
    service_window = True
    # Reply buttons and lists are the Cloud API's own interactive messages.
    interactive_native = frozenset({"buttons", "list"})
    # Meta documents 4,096 characters for a text message's `text.body`; it refuses a longer one.
    text_limit = META_TEXT_CHARS
    schemes: tuple[WebhookScheme, ...] = ("meta-signature",)

    def client(
        self,
        *,
        local_mode: bool,
        read_timeout: float,
        transport: httpx.BaseTransport | None = None,
        api_version: str | None = None,
    ) -> ProviderClient:
        return MetaCloudClient(
            local_mode=local_mode,
            read_timeout=read_timeout,
            transport=transport,
            api_version=api_version or DEFAULT_API_VERSION,
        )

    def authenticate(
        self, request: WebhookRequest, credentials: Credentials, now: float, scheme: WebhookScheme
    ) -> DeliveryToken | None:
        """`X-Hub-Signature-256` over the raw body. The Cloud API posts JSON objects: signed bytes
        of another shape (an envelope's `timestamp.body`, an Evolution JWT's) are refused unread."""
        header = request.headers.get(SIGNATURE_HEADER)
        if scheme != "meta-signature" or not header or not request.body.startswith(b"{"):
            raise envelope.refused()
        if not signature_matches(credentials.webhook_secret() or "", request.body, header):
            raise envelope.refused()
        return None

    def events(self, request: WebhookRequest, scheme: WebhookScheme) -> list[InboundEvent]:
        return map_events(request.body)

    def verify_subscription(self, query: dict[str, str], credentials: Credentials) -> str:
        return verified_challenge(query, credentials.verify_token())


KIND: ProviderKindSpec = MetaKind()

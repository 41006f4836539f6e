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
instance by `value.metadata.phone_number_id` (`meta_phone_id` of the instance's number).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import ConfigDict, Field, StrictInt, StrictStr, ValidationError

from switchboard.core.api.body import MAX_WEBHOOK_BODY_BYTES, parse_json
from switchboard.core.errors import (
    Forbidden,
    InvalidInput,
    ProviderError,
    ProviderRejected,
    ProviderThrottled,
    ProviderUnavailable,
)
from switchboard.core.model import Model
from switchboard.providers import envelope
from switchboard.providers.base import (
    Credentials,
    InboundEvent,
    InstanceStatus,
    KindDefaults,
    NumberStanding,
    ProviderClient,
    ProviderKindSpec,
    ProviderTarget,
    SentMessage,
    WebhookRequest,
)
from switchboard.providers.http import DEFAULT_READ_TIMEOUT_SECONDS, ProviderHttp, error_code, path_segment
from switchboard.providers.kinds import ProviderKind
from switchboard.providers.messaging_only import MessagingOnly

# Graph API v25.0: released 18 February 2026, available until 29 July 2028 (Meta's changelog).
DEFAULT_API_VERSION = "v25.0"
SEND_ROUTE = "/{version}/{phone-number-id}/messages"
NUMBER_ROUTE = "/{version}/{phone-number-id}"
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


class _Answer(Model):
    model_config = ConfigDict(extra="ignore")


class _MessageId(_Answer):
    id: StrictStr = Field(min_length=1, max_length=256)


class _SendAnswer(_Answer):
    messages: list[_MessageId] = Field(min_length=1)


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

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        if not target.instance_token:
            raise InvalidInput("the target has no Cloud API access token")
        phone_id = target.meta_phone_id or target.provider_instance_id
        path = f"/{path_segment(self._api_version)}/{path_segment(phone_id)}/messages"
        response = self._http.request(
            "POST",
            target.base_url,
            path,
            route=SEND_ROUTE,
            headers={"Authorization": f"Bearer {target.instance_token}"},
            body={
                "messaging_product": "whatsapp",
                "recipient_type": "individual",
                "to": phone,
                "type": "text",
                "text": {"body": body, "preview_url": False},
            },
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


def error_for(response: httpx.Response, label: str) -> ProviderError:
    """The error for a non-2xx answer, decided on Meta's `error.code` first (see the module doc)."""
    status = response.status_code
    code = error_code(response)
    suffix = f" ({status} {code})" if code else f" ({status})"
    details: dict[str, Any] = {"status": status, "provider_code": code}
    if code in NUMBER_LIMIT_CODES:
        return ProviderThrottled(f"{label}: the number's rate limit{suffix}", rate_limited=True, **details)
    if code in RATE_LIMIT_CODES:
        return ProviderUnavailable(f"{label}: rate limited{suffix}", rate_limited=True, **details)
    if code in TOKEN_CODES:
        return ProviderRejected(f"{label}: access token refused{suffix}", **details)
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
MAX_LABEL = 40


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
    timestamp: StrictStr | None = Field(default=None, pattern=_UNIX_SECONDS.pattern)
    type: StrictStr = Field(min_length=1)
    text: _Text | None = None


class _StatusError(_Payload):
    code: StrictInt | None = None
    title: StrictStr | None = None


class _Status(_Payload):
    id: StrictStr = Field(min_length=1, max_length=200)
    status: StrictStr = Field(min_length=1)
    timestamp: StrictStr | None = Field(default=None, pattern=_UNIX_SECONDS.pattern)
    errors: list[_StatusError] = Field(default_factory=list)


class _MessagesValue(_Payload):
    metadata: _Metadata
    messages: list[_Message] = Field(default_factory=list)
    statuses: list[_Status] = Field(default_factory=list)


class _Change(_Payload):
    field: StrictStr = Field(min_length=1)
    value: dict[str, Any] = Field(default_factory=dict)


class _Entry(_Payload):
    changes: list[_Change] = Field(default_factory=list)


class _Notification(_Payload):
    object: StrictStr
    entry: list[_Entry]


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
    """Every message and status of the delivery, then one ignored event per other change."""
    try:
        notification = _Notification.model_validate(parse_json(body, limit=MAX_WEBHOOK_BODY_BYTES))
    except (ValueError, ValidationError) as exc:
        raise InvalidInput("the body is not a Cloud API notification", code="invalid_envelope") from exc
    events: list[InboundEvent] = []
    for entry in notification.entry:
        for change in entry.changes:
            if notification.object == "whatsapp_business_account" and change.field == "messages":
                events += _messages_change(change)
            else:
                reason = (
                    f"{_label(change.field)} field"
                    if notification.object == "whatsapp_business_account"
                    else f"{_label(notification.object)} object"
                )
                events += _ignored_change(change, reason)
    return events


def _messages_change(change: _Change) -> list[InboundEvent]:
    try:
        value = _MessagesValue.model_validate(change.value)
    except ValidationError as exc:
        raise InvalidInput("a messages change is not in the Cloud API format", code="invalid_envelope") from exc
    binding = value.metadata.phone_number_id
    events = [_message_event(binding, message) for message in value.messages]
    events += [_status_event(binding, status) for status in value.statuses]
    if not events:  # e.g. a change carrying only `errors`
        events += _ignored_change(change, "messages change without messages or statuses")
    return events


def _message_event(binding: str, message: _Message) -> InboundEvent:
    seq = _millis(message.timestamp)
    ignored = None
    data: dict[str, Any] = {"id": message.id}
    sender = re.sub(r"[^0-9]", "", message.sender or "")
    if message.type != "text":
        ignored = f"{_label(message.type)} message"
    elif message.text is None:
        ignored = "text message without a body"
    elif not sender:
        ignored = "sender has no phone number"
    else:
        data = {"id": message.id, "from": sender, "text": message.text.body}
        if message.timestamp is not None:
            data["timestamp"] = _iso(message.timestamp)
    return InboundEvent(
        name="message",
        binding=binding,
        binding_field="meta_phone_id",
        event_id=message.id,
        seq=seq,
        data=data,
        ignored=ignored,
    )


def _status_event(binding: str, status: _Status) -> InboundEvent:
    mapped = {"delivered": "delivered", "read": "read", "played": "read", "failed": "failed"}.get(status.status)
    data: dict[str, Any] = {"id": status.id, "status": mapped or _label(status.status)}
    ignored = None
    if mapped is None:
        ignored = f"{_label(status.status)} status"
    elif mapped == "failed":
        data["errors"] = [{"code": error.code, "title": error.title} for error in status.errors]
    return InboundEvent(
        name="receipt",
        binding=binding,
        binding_field="meta_phone_id",
        event_id=f"{status.id}:{_label(status.status)}",
        seq=_millis(status.timestamp),
        data=data,
        ignored=ignored,
    )


def _ignored_change(change: _Change, reason: str) -> list[InboundEvent]:
    """One ignored event for a change we do not map, if its `metadata` says which number it is for."""
    try:
        metadata = _Metadata.model_validate(change.value.get("metadata"))
    except ValidationError:
        return []
    canonical = json.dumps(change.model_dump(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:40]
    return [
        InboundEvent(
            name=_label(change.field) or "change",
            binding=metadata.phone_number_id,
            binding_field="meta_phone_id",
            event_id=f"{_label(change.field)}:{digest}",
            data={"field": _label(change.field)},
            ignored=reason,
        )
    ]


def _label(value: str) -> str:
    """A provider-chosen word made safe to record and log: short, no free text."""
    return _LABEL.sub("_", value)[:MAX_LABEL]


def _millis(timestamp: str | None) -> int | None:
    return int(timestamp) * 1000 if timestamp is not None else None


def _iso(timestamp: str) -> str:
    return datetime.fromtimestamp(int(timestamp), UTC).isoformat()


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

    def authenticate(self, request: WebhookRequest, credentials: Credentials, now: float) -> None:
        header = request.headers.get(SIGNATURE_HEADER)
        if not header or not signature_matches(credentials.webhook_secret() or "", request.body, header):
            raise envelope.refused()

    def events(self, request: WebhookRequest) -> list[InboundEvent]:
        return map_events(request.body)

    def verify_subscription(self, query: dict[str, str], credentials: Credentials) -> str:
        return verified_challenge(query, credentials.verify_token())


KIND: ProviderKindSpec = MetaKind()

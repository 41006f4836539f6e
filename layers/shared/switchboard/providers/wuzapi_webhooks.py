"""Deliveries of a plain wuzapi server: HMAC check and the mapping of its events to ours.

Wire contract (what wuzapi posts to the user's webhook URL):

- the body is either JSON (`WEBHOOK_FORMAT=json`): the event map `{"event", "type", ...extras}`
  plus `instanceName` and `userID` at the top level; or a form (any other format, the default):
  the fields `jsonData` (that event map as JSON), `instanceName` and `userID`;
- `X-Hmac-Signature` is the lowercase hex HMAC-SHA256 of the exact body bytes under the user's
  `hmac_key`, with no timestamp: there is no replay protection, and a retry resends identical
  bytes. wuzapi posts without the header when it cannot sign, so a missing header is refused;
- the instance is `instanceName` (the wuzapi user's name; empty when that user was not in the
  server's cache), else `userID`: set an instance's providerInstanceId to the wuzapi user name;
- the event fields are Go field names (`Info`, `IsFromMe`, `MessageIDs`); message content is
  protobuf JSON with the proto field names (`conversation`, `imageMessage.URL`, `fileSHA256`, bytes
  in base64); times are RFC 3339 strings;
- a media message's file comes as the user's `media_delivery` says (`media.go` `processMedia`):
  `base64` puts `base64`, `mimeType` and `fileName` (`<message id><ext>`, not the sender's name)
  at the top level; `s3` puts an `s3` object `{url, key, bucket, size, mimeType, fileName}`;
  `both` puts both. The bytes inline go to `InboundEvent.media_bytes`; an S3 URL is the media's
  source; without either the source is the `/chat/download*` route's body.

Mapping:

| wuzapi `type` | condition | our event |
| --- | --- | --- |
| `Message` | a kind `wa_message` maps, 1:1, from a phone | `message` `{id, from, content, replyTo?, ...}` |
| `Message` | from us, group/broadcast, a kind not mapped, no phone, ... | ignored with the reason |
| `ReadReceipt` | `state` `Delivered` / `Read`, not from us | one `receipt` per id in `MessageIDs` |
| `ReadReceipt` | `ReadSelf`, from us, in a group | ignored |
| `Connected` / `Disconnected` | | `connection` `{connected}` |
| `LoggedOut` | | `connection` `{connected: false, reason: "logged_out:<Reason>"}` |
| anything else | | ignored `unsupported event <type>` |

A message's `lid` is whichever of `Sender`/`SenderAlt` is a LID, its `name` the sender's
`Info.PushName`.

wuzapi posts each event from its own goroutine and retries failed deliveries, so events arrive
in any order and more than once: messages deduplicate on `Info.ID`, receipts on id and status.
Connection events carry no id nor time and every reconnect posts the same bytes, so each
delivery of one gets its own id (its effect is an idempotent state write).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from switchboard.core.api.body import MAX_WEBHOOK_BODY_BYTES, parse_json
from switchboard.core.errors import InvalidInput
from switchboard.core.model import Model
from switchboard.providers import envelope, wa_message
from switchboard.providers.base import Credentials, IgnoredKind, InboundEvent, WebhookRequest, display_name
from switchboard.providers.content import Content, MediaMessage, MediaSource, content_data

SIGNATURE_HEADER = "x-hmac-signature"
_SIGNED_SHAPE = re.compile(rb"\{|[A-Za-z]+=")  # a JSON object, or a form's first field name
PHONE_SERVER = "s.whatsapp.net"

# --- authentication --------------------------------------------------------------------------


def sign(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def authenticate(request: WebhookRequest, credentials: Credentials) -> None:
    """Refuse unless `X-Hmac-Signature` is the HMAC of the raw body under the webhook secret.

    A body of another shape than wuzapi's is refused before any hashing: wuzapi's start with `{`
    (JSON) or a form field name and `=` (`instanceName=` first, as `url.Values.Encode` sorts its
    keys), while the bytes an envelope signature covers start with its timestamp and a dot, and
    those of an Evolution JWT are base64url. Accepting such a body would make every observed
    envelope signature a valid signature here of `timestamp.body`."""
    supplied = request.headers.get(SIGNATURE_HEADER)
    if not supplied or not _SIGNED_SHAPE.match(request.body):
        raise envelope.refused()
    secret = credentials.webhook_secret()
    if not secret:
        raise envelope.refused()
    expected = sign(secret, request.body)
    if not hmac.compare_digest(expected.encode(), supplied.strip().lower().encode()):
        raise envelope.refused()


# --- payload models --------------------------------------------------------------------------


class _Wire(Model):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Delivery(_Wire):
    """The event map, whichever format carried it."""

    type: StrictStr = Field(min_length=1, max_length=64)
    event: Any = None
    state: Any = None
    instance_name: StrictStr = Field(default="", alias="instanceName")
    user_id: StrictStr = Field(default="", alias="userID")
    # A message's file, by the user's `media_delivery`: inline (base64) and/or in its S3 bucket.
    base64: Any = None
    mime_type: StrictStr = Field(default="", alias="mimeType")
    s3: Any = None


class _MessageInfo(_Wire):
    id: StrictStr = Field(alias="ID", min_length=1, max_length=128)
    chat: StrictStr = Field(default="", alias="Chat")
    sender: StrictStr = Field(default="", alias="Sender")
    sender_alt: StrictStr = Field(default="", alias="SenderAlt")
    is_from_me: StrictBool = Field(default=False, alias="IsFromMe")
    is_group: StrictBool = Field(default=False, alias="IsGroup")
    timestamp: StrictStr = Field(default="", alias="Timestamp")
    push_name: StrictStr = Field(default="", alias="PushName")


class _MessageEvent(_Wire):
    info: _MessageInfo = Field(alias="Info")
    message: dict[str, Any] | None = Field(default=None, alias="Message")
    is_edit: StrictBool = Field(default=False, alias="IsEdit")


class _ReceiptEvent(_Wire):
    message_ids: list[StrictStr] | None = Field(default=None, alias="MessageIDs")
    is_from_me: StrictBool = Field(default=False, alias="IsFromMe")
    is_group: StrictBool = Field(default=False, alias="IsGroup")
    timestamp: StrictStr = Field(default="", alias="Timestamp")


class _LoggedOutEvent(_Wire):
    reason: StrictInt | None = Field(default=None, alias="Reason")


# --- events ----------------------------------------------------------------------------------


def events(request: WebhookRequest) -> list[InboundEvent]:
    """The delivery's events; InvalidInput when the body is neither wuzapi format."""
    delivery = _delivery(request)
    binding = delivery.instance_name or delivery.user_id
    if not binding:
        raise InvalidInput("the delivery names no instance", code="invalid_payload")
    try:
        return _map(delivery, binding, request.body)
    except ValidationError as exc:
        raise InvalidInput(f"malformed {delivery.type} event", code="invalid_payload") from exc


def _delivery(request: WebhookRequest) -> _Delivery:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type == "application/x-www-form-urlencoded":
        payload = _form_payload(request.body)
    elif media_type == "application/json" or request.body.lstrip().startswith(b"{"):
        payload = _json_object(request.body)
    else:
        payload = _form_payload(request.body)
    try:
        return _Delivery.model_validate(payload)
    except ValidationError as exc:
        raise InvalidInput("the body is not a wuzapi event", code="invalid_payload") from exc


def _json_object(raw: bytes | str) -> dict[str, Any]:
    try:
        payload = parse_json(raw, limit=MAX_WEBHOOK_BODY_BYTES)
    except ValueError as exc:
        raise InvalidInput("the body is not valid JSON", code="invalid_payload") from exc
    if not isinstance(payload, dict):
        raise InvalidInput("the body is not a JSON object", code="invalid_payload")
    return payload


def _form_payload(body: bytes) -> dict[str, Any]:
    try:
        fields = parse_qs(
            body.decode("ascii"), keep_blank_values=True, strict_parsing=True, errors="strict", max_num_fields=8
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput("the body is not a form", code="invalid_payload") from exc
    if any(len(values) != 1 for values in fields.values()) or "jsonData" not in fields:
        raise InvalidInput("the form has no single jsonData field", code="invalid_payload")
    payload = _json_object(fields["jsonData"][0])
    for name in ("instanceName", "userID"):
        if name in fields:
            payload[name] = fields[name][0]
    return payload


def _map(delivery: _Delivery, binding: str, body: bytes) -> list[InboundEvent]:
    if delivery.type == "Message":
        return [_message(_MessageEvent.model_validate(delivery.event), binding, delivery)]
    if delivery.type == "ReadReceipt":
        return _receipts(_ReceiptEvent.model_validate(delivery.event), delivery.state, binding, body)
    if delivery.type in ("Connected", "Disconnected"):
        return [_connection(binding, body, {"connected": delivery.type == "Connected"})]
    if delivery.type == "LoggedOut":
        reason = _LoggedOutEvent.model_validate(delivery.event or {}).reason
        data = {"connected": False, "reason": f"logged_out:{reason if reason is not None else 'unknown'}"}
        return [_connection(binding, body, data)]
    return [
        InboundEvent(
            name=delivery.type,
            binding=binding,
            event_id=_body_digest(body),
            ignored=f"unsupported event {delivery.type}",
        )
    ]


def _message(event: _MessageEvent, binding: str, delivery: _Delivery) -> InboundEvent:
    info = event.info
    timestamp = _parse_time(info.timestamp)
    kind, ignored = _message_ignored(event) or (None, None)
    mapped = wa_message.map_message(event.message) if ignored is None else None
    if isinstance(mapped, str):
        kind, ignored = "unsupported", mapped
    phone = _phone(info.sender, info.sender_alt)
    if ignored is None and phone is None:
        kind, ignored = "no_sender", "sender has no phone number"
    data: dict[str, Any] = {"id": info.id}
    media_bytes = None
    if ignored is None and isinstance(mapped, wa_message.Mapped):
        content, media_bytes = _with_media(mapped, delivery)
        data.update({"from": phone, "content": content_data(content)})
        if mapped.reply_to is not None:
            data["replyTo"] = mapped.reply_to
        if timestamp is not None:
            data["timestamp"] = timestamp.isoformat()
        if (lid := _lid(info.sender, info.sender_alt)) is not None:
            data["lid"] = lid
        if (name := display_name(info.push_name)) is not None:
            data["name"] = name
    return InboundEvent(
        name="message",
        binding=binding,
        event_id=info.id,
        seq=_millis(timestamp),
        data=data,
        ignored=ignored,
        ignored_kind=kind,
        media_bytes=media_bytes,
    )


def _message_ignored(event: _MessageEvent) -> tuple[IgnoredKind, str] | None:
    info = event.info
    server = info.chat.rpartition("@")[2]
    if info.is_from_me:
        return "from_us", "sent from the phone"
    if server == "g.us":
        return "group", "group message"
    if server == "newsletter":
        return "group", "newsletter message"
    if info.is_group or server == "broadcast":
        return "group", "broadcast message"
    if server not in (PHONE_SERVER, "lid"):
        return "group", "not a direct chat"
    return None


# The body of wuzapi's `/chat/download{image,video,audio,document}` (Go decodes its keys
# case-insensitively, the `[]byte` ones from base64): what the message carries to fetch its file.
DOWNLOAD_FIELDS = (
    ("Url", ("URL", "url")),
    ("DirectPath", ("directPath",)),
    ("MediaKey", ("mediaKey",)),
    ("Mimetype", ("mimetype",)),
    ("FileEncSHA256", ("fileEncSHA256", "fileEncSha256")),
    ("FileSHA256", ("fileSHA256", "fileSha256")),
    ("FileLength", ("fileLength",)),
)
_BYTE_FIELDS = frozenset({"MediaKey", "FileEncSHA256", "FileSHA256"})


def download_fields(media: dict[str, Any]) -> dict[str, Any]:
    """The download route's body from the message's media object (bytes as base64)."""
    fields: dict[str, Any] = {}
    for name, keys in DOWNLOAD_FIELDS:
        value = wa_message.field(media, *keys)
        if name in _BYTE_FIELDS:
            raw = wa_message.as_bytes(value)
            value = base64.b64encode(raw).decode("ascii") if raw is not None else None
        elif name == "FileLength":
            value = wa_message.as_int(value)
        if value is not None:
            fields[name] = value
    return fields


def _with_media(mapped: wa_message.Mapped, delivery: _Delivery) -> tuple[Content, bytes | None]:
    """The content with where its file is: wuzapi's inline base64 (`media_delivery` base64 or
    both), its S3 object's URL (s3 or both), else the download route's fields."""
    content = mapped.content
    if not isinstance(content, MediaMessage):
        return content, None
    media = content.media
    inline = _decoded(delivery.base64)
    s3_url = delivery.s3.get("url") if isinstance(delivery.s3, dict) else None
    source: MediaSource | None
    if isinstance(s3_url, str) and s3_url.startswith(("https://", "http://")) and len(s3_url) <= 4096:
        source = MediaSource(via="url", url=s3_url)
    elif inline is None and mapped.media_fields is not None:
        source = MediaSource(via="provider_download", fields=download_fields(mapped.media_fields))
    else:
        source = None
    mime = media.mime_type or (delivery.mime_type if 0 < len(delivery.mime_type) <= 255 else None)
    updated = media.model_copy(update={"inline": inline is not None, "source": source, "mime_type": mime})
    return MediaMessage(media=updated), inline


def _decoded(value: object) -> bytes | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _phone(*jids: str) -> str | None:
    """The digits of whichever JID is a phone number (`5511...:7@s.whatsapp.net` -> `5511...`)."""
    for jid in jids:
        user, _, server = jid.rpartition("@")
        if server != PHONE_SERVER:
            continue
        number = user.split(":", 1)[0].split(".", 1)[0]
        if number.isascii() and number.isdigit():
            return number
    return None


def _lid(*jids: str) -> str | None:
    """Whichever JID is a LID (`123...:7@lid` -> `123...@lid`): the sender's hidden-number address."""
    for jid in jids:
        user, _, server = jid.rpartition("@")
        number = user.split(":", 1)[0].split(".", 1)[0]
        if server == "lid" and number.isascii() and number.isdigit():
            return f"{number}@lid"
    return None


_RECEIPT_STATUS = {"Delivered": "delivered", "Read": "read"}


def _receipts(event: _ReceiptEvent, state: Any, binding: str, body: bytes) -> list[InboundEvent]:
    state_name = state if isinstance(state, str) else ""
    status = _RECEIPT_STATUS.get(state_name)
    ignored, kind = None, None
    if state_name == "ReadSelf":
        ignored, kind = "read on another of our devices", "from_us"
    elif status is None:
        ignored = f"unsupported receipt {state_name or 'state'}"
    elif event.is_from_me:
        kind = "from_us"
        ignored = "our own read of an incoming message" if status == "read" else "receipt from our own account"
    elif event.is_group:
        ignored, kind = "group receipt", "group"
    seq = _millis(_parse_time(event.timestamp))
    suffix = status or state_name.lower() or "unknown"
    ids = [message_id for message_id in event.message_ids or [] if message_id]
    if not ids:
        return [
            InboundEvent(
                name="receipt",
                binding=binding,
                event_id=_body_digest(body),
                seq=seq,
                ignored="receipt without ids",
                ignored_kind="malformed",
            )
        ]
    return [
        InboundEvent(
            name="receipt",
            binding=binding,
            event_id=f"{message_id}:{suffix}",
            seq=seq,
            data={"id": message_id, "status": status} if status and not ignored else {"id": message_id},
            ignored=ignored,
            ignored_kind=kind,
        )
        for message_id in ids
    ]


def _connection(binding: str, body: bytes, data: dict[str, Any]) -> InboundEvent:
    # Same bytes on every reconnect: the digest names the content, the suffix this delivery.
    return InboundEvent(
        name="connection",
        binding=binding,
        event_id=f"{_body_digest(body)}:{uuid.uuid4().hex[:16]}",
        data=data,
    )


def _body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:32]


def _parse_time(value: str) -> datetime | None:
    """An RFC 3339 time with its offset; None for a missing, zero (year 1) or naive value."""
    try:
        parsed = datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
    if parsed is None or parsed.tzinfo is None or parsed.year < 1971:
        return None
    return parsed


def _millis(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)

"""The calls-capable server's signed envelope: `{event, eventId, instanceId, seq, data, instance?}`.

Signed with HMAC-SHA256 over `timestamp + "." + raw body`.

`X-Webhook-Signature` holds one or more comma-separated `v1=<hex>` entries (two while the
provider rotates its secret); any one matching is enough. `X-Webhook-Timestamp` is unix seconds,
digits only, within `tolerance` of now. Every refusal is the same `Unauthenticated` so a caller
cannot learn which check failed.

The signed bytes always start with ASCII digits and a dot. Every other scheme signs bytes of
another shape, and refuses a delivery whose signed bytes are not of its own shape (a plain
wuzapi: a JSON object or a form; the Cloud API: a JSON object; Evolution: `<base64url>.<base64url>`):
so no signature made here verifies under another scheme, nor one made there here, whatever the
secrets.

A `message` event's `data` holds one message of a `type` (text, a media kind, location,
contacts, reaction, button, list) with that type's object (`message_data` below; the same table
is in the simulator's README): mapped to `providers.content`, its inline bytes to
`InboundEvent.media_bytes`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from typing import Any

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from switchboard.core.api.body import parse_json
from switchboard.core.errors import InvalidInput, PayloadTooLarge, Unauthenticated
from switchboard.core.model import Model
from switchboard.providers.base import Credentials, InboundEvent, WebhookRequest
from switchboard.providers.content import (
    Choice,
    ContactCard,
    Contacts,
    Content,
    Location,
    Media,
    MediaMessage,
    MediaSource,
    Reaction,
    Text,
    content_data,
)

# What one Lambda invocation takes (6 MB of request payload, the whole event): a larger body never
# reaches the function. Base64 media up to about 4.5 MB fits and goes to the media bucket.
MAX_BODY_BYTES = 6 * 1024 * 1024
TOLERANCE_SECONDS = 300
MAX_SIGNATURE_ENTRIES = 8
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_ENTRY = re.compile(r"v1=([0-9a-f]{64})")
_LABEL = re.compile(r"[^A-Za-z0-9_.-]")


def refused() -> Unauthenticated:
    """The one answer to every signature failure."""
    return Unauthenticated("invalid webhook signature", code="invalid_signature")


def check_size(body: bytes) -> None:
    """Refuse a body over the limit before any hashing (413)."""
    if len(body) > MAX_BODY_BYTES:
        raise PayloadTooLarge("webhook body over 6 MB")


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def check_timestamp(timestamp: str | None, now: float, tolerance: int = TOLERANCE_SECONDS) -> str:
    """The timestamp if it is digits only and within +/- tolerance of `now`, else refused."""
    if timestamp is None or not _TIMESTAMP.fullmatch(timestamp):
        raise refused()
    if abs(int(timestamp) - now) > tolerance:
        raise refused()
    return timestamp


def signature_entries(header: str | None) -> list[str]:
    """The hex digests of a `v1=<hex>[,v1=<hex>]` header; anything malformed is refused."""
    if not header:
        raise refused()
    parts = [part.strip() for part in header.split(",")]
    if len(parts) > MAX_SIGNATURE_ENTRIES:
        raise refused()
    digests = []
    for part in parts:
        match = _ENTRY.fullmatch(part)
        if match is None:
            raise refused()
        digests.append(match.group(1))
    return digests


def matches(secret: str, timestamp: str, body: bytes, digests: list[str]) -> bool:
    """True when any entry is the HMAC of this body under `secret`; compared in constant time."""
    if not secret:
        return False
    expected = sign(secret, timestamp, body)
    found = False
    for digest in digests:  # no early exit: every entry is compared
        found |= hmac.compare_digest(expected, digest)
    return found


SIGNATURE_HEADER = "x-webhook-signature"
TIMESTAMP_HEADER = "x-webhook-timestamp"


class Envelope(Model):
    """The signed body. Identifiers used for dedupe and binding come from here only."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    event: str = Field(min_length=1, max_length=64)
    event_id: str = Field(alias="eventId", min_length=1, max_length=128)
    instance_id: str = Field(alias="instanceId", min_length=1, max_length=128)
    seq: int | None = Field(default=None, ge=0, lt=2**63)
    data: dict[str, Any] = Field(default_factory=dict)
    instance: dict[str, Any] | None = None


def authenticate(request: WebhookRequest, credentials: Credentials, now: float) -> None:
    stamp = check_timestamp(request.headers.get(TIMESTAMP_HEADER), now)
    digests = signature_entries(request.headers.get(SIGNATURE_HEADER))
    if not matches(credentials.webhook_secret() or "", stamp, request.body, digests):
        raise refused()


KNOWN_EVENTS = frozenset({"message", "receipt", "connection", "call", "call_settings"})


def events(request: WebhookRequest) -> list[InboundEvent]:
    try:
        envelope = Envelope.model_validate(parse_json(request.body, limit=MAX_BODY_BYTES))
    except (ValueError, ValidationError) as exc:
        raise InvalidInput("the signed body is not a valid event envelope", code="invalid_envelope") from exc
    ignored = None if envelope.event in KNOWN_EVENTS else f"unknown event {envelope.event}"
    data, media_bytes = envelope.data, None
    if envelope.event == "message":
        mapped = message_data(envelope.data)
        if isinstance(mapped, str):
            ignored, data = mapped, {key: envelope.data[key] for key in ("id",) if key in envelope.data}
        else:
            data, media_bytes = mapped
    return [
        InboundEvent(
            name=envelope.event,
            binding=envelope.instance_id,
            event_id=envelope.event_id,
            seq=envelope.seq,
            data=data,
            instance=envelope.instance,
            ignored=ignored,
            media_bytes=media_bytes,
        )
    ]


# --- the message event's data ---------------------------------------------------------------
#
# `data: {"id", "from", "lid"?, "name"?, "timestamp"?, "type", "text"?, "media"?, "location"?,
# "contacts"?, "reaction"?, "choice"?, "replyTo"?}`:
# - `type`: text | image | video | audio | voice | document | sticker | location | contacts |
#   reaction | button | list;
# - `text`: the text, or a media's caption;
# - `media`: `{"mimeType", "fileName"?, "size"?, "sha256"? (hex), "seconds"?, "animated"?,
#   "base64"? (the bytes inline) | "url"? (the server's own media URL)}`;
# - `location`: `{"latitude", "longitude", "name"?, "address"?, "live"?}`;
# - `contacts`: `[{"name", "phones": [...], "vcard"?}]`;
# - `reaction`: `{"messageId", "emoji"}` (`""` removes it);
# - `choice`: `{"id", "title"}` (the button or list row the customer tapped);
# - `replyTo`: the id of the message quoted.
# Mapped to `{"id", "from", "lid"?, "name"?, "timestamp"?, "content", "replyTo"?}`; the inline
# bytes go to `InboundEvent.media_bytes`, never into the stored data.

_MEDIA_TYPES = frozenset({"image", "video", "audio", "voice", "document", "sticker"})
_KEPT = ("id", "from", "lid", "name", "timestamp")


class _EnvelopeMedia(Model):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    mime_type: StrictStr | None = Field(default=None, alias="mimeType", max_length=255)
    file_name: StrictStr | None = Field(default=None, alias="fileName", max_length=255)
    size: StrictInt | None = Field(default=None, ge=0)
    sha256: StrictStr | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")
    seconds: StrictInt | None = Field(default=None, ge=0)
    animated: StrictBool = False
    base64: StrictStr | None = None
    url: StrictStr | None = Field(default=None, max_length=4096, pattern=r"^https?://")


class _EnvelopeContact(Model):
    model_config = ConfigDict(extra="ignore")

    name: StrictStr | None = Field(default=None, max_length=255)
    phones: list[StrictStr] = Field(default_factory=list, max_length=32)
    vcard: StrictStr | None = None


class _EnvelopeMessage(Model):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    type: StrictStr = "text"
    text: StrictStr | None = None
    media: _EnvelopeMedia | None = None
    location: dict[str, Any] | None = None
    contacts: list[_EnvelopeContact] | None = Field(default=None, max_length=50)
    reaction: dict[str, Any] | None = None
    choice: dict[str, Any] | None = None
    reply_to: StrictStr | None = Field(default=None, alias="replyTo", max_length=256)


def message_data(data: dict[str, Any]) -> tuple[dict[str, Any], bytes | None] | str:
    """A `message` event's data as ours (and its inline bytes), or the reason it is not mapped."""
    try:
        message = _EnvelopeMessage.model_validate(data)
        content, media_bytes = _content(message)
    except ValidationError as exc:
        location = ".".join(str(part) for part in exc.errors()[0]["loc"]) or "data"
        return f"message data not in the envelope format ({location[:60]})"
    if isinstance(content, str):
        return content
    mapped = {key: data[key] for key in _KEPT if key in data}
    mapped["content"] = content_data(content)
    if message.reply_to:
        mapped["replyTo"] = message.reply_to
    return mapped, media_bytes


def _content(message: _EnvelopeMessage) -> tuple[Content | str, bytes | None]:
    kind = message.type
    if kind == "text":
        return (Text(body=message.text) if message.text else "text message without a text"), None
    if kind in _MEDIA_TYPES:
        return _media(kind, message)
    if kind == "location" and message.location is not None:
        place = message.location
        return Location(
            latitude=place.get("latitude"),
            longitude=place.get("longitude"),
            name=place.get("name"),
            address=place.get("address"),
            live=place.get("live") is True,
        ), None
    if kind == "contacts" and message.contacts:
        cards = [ContactCard(name=card.name, phones=card.phones, vcard=card.vcard) for card in message.contacts]
        return Contacts(cards=cards), None
    if kind == "reaction" and message.reaction is not None:
        return Reaction(target_id=message.reaction.get("messageId"), emoji=message.reaction.get("emoji") or ""), None
    if kind in ("button", "list") and message.choice is not None:
        choice = message.choice
        return Choice(source=kind, id=choice.get("id"), title=choice.get("title")), None
    return f"{_LABEL.sub('_', kind)[:40] or 'untyped'} message", None


def _media(kind: str, message: _EnvelopeMessage) -> tuple[Content | str, bytes | None]:
    announced = message.media
    if announced is None:
        return f"{kind} message without its media", None
    inline = None
    if announced.base64:
        try:
            inline = base64.b64decode(announced.base64, validate=True)
        except (binascii.Error, ValueError):
            return f"{kind} message with invalid base64", None
    media = Media.model_validate(
        {
            "kind": kind,
            "mime_type": announced.mime_type,
            "file_name": announced.file_name,
            "caption": message.text,
            "size": announced.size,
            "sha256": announced.sha256.lower() if announced.sha256 else None,
            "seconds": announced.seconds,
            "animated": announced.animated,
            "inline": inline is not None,
            "source": MediaSource(via="url", url=announced.url) if announced.url else None,
        }
    )
    return MediaMessage(media=media), inline

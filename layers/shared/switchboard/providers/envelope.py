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
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from switchboard.core.api.body import parse_json
from switchboard.core.errors import InvalidInput, PayloadTooLarge, Unauthenticated
from switchboard.core.model import Model
from switchboard.providers.base import Credentials, InboundEvent, WebhookRequest

# What one Lambda invocation takes (6 MB of request payload, the whole event): a larger body never
# reaches the function. Base64 media up to about 4.5 MB fits and goes to the media bucket.
MAX_BODY_BYTES = 6 * 1024 * 1024
TOLERANCE_SECONDS = 300
MAX_SIGNATURE_ENTRIES = 8
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_ENTRY = re.compile(r"v1=([0-9a-f]{64})")


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
    if envelope.event == "message" and not isinstance(envelope.data.get("text"), str):
        ignored = "not a text message"
    return [
        InboundEvent(
            name=envelope.event,
            binding=envelope.instance_id,
            event_id=envelope.event_id,
            seq=envelope.seq,
            data=envelope.data,
            instance=envelope.instance,
            ignored=ignored,
        )
    ]

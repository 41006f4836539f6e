"""Byte-exact encodings of the real servers: Go's encoding/json and url.Values, JWT HS256, ids.

A receiver verifies a signature over the raw body, so the bytes matter: these functions produce
what wuzapi (Go), Evolution (Node) and Meta put on the wire, not merely equivalent JSON.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote_plus, urlencode

# wuzapi's Docker image runs with TZ=America/Sao_Paulo: event times carry -03:00.
WUZAPI_TZ = timezone(timedelta(hours=-3))
_GO_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_json(value: Any, *, sort_keys: bool) -> bytes:
    """Go's `json.Marshal`: compact, UTF-8, `<`, `>`, `&`, U+2028/2029 escaped.

    `sort_keys=True` is a Go map (every level sorted); False keeps the given (struct) order.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    for raw, escaped in _GO_HTML_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text.encode()


def go_top_sorted_json(value: dict[str, Any]) -> bytes:
    """A Go map whose values are structs: the top level sorted, nested objects in struct order."""
    return go_json(dict(sorted(value.items())), sort_keys=False)


def go_form(values: dict[str, str]) -> bytes:
    """Go's `url.Values.Encode()`: keys sorted, `QueryEscape` (space as `+`)."""
    return urlencode(sorted(values.items()), quote_via=quote_plus).encode()


def meta_json(value: Any) -> bytes:
    """Meta's webhook serialization: compact, non-ASCII as `\\uXXXX`, `/` escaped as `\\/`."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).replace("/", "\\/").encode()


def node_json(value: Any) -> bytes:
    """Node's `JSON.stringify` (axios): compact, UTF-8, insertion order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def evolution_jwt(secret: str, now: int | None = None) -> str:
    """The token Evolution puts in `Authorization: Bearer` (jsonwebtoken, HS256, 10 minutes)."""
    iat = int(time.time()) if now is None else now
    header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    claims = {"iat": iat, "exp": iat + 600, "app": "evolution", "action": "webhook"}
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = _b64url(hmac.new(secret.encode(), signing_input, hashlib.sha256).digest())
    return f"{header}.{payload}.{signature}"


def hex_hmac(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --- ids and times ---------------------------------------------------------------------------


def whatsapp_message_id() -> str:
    """What whatsmeow and Baileys generate for an outgoing message: `3EB0` + 18 upper-case hex."""
    return "3EB0" + secrets.token_hex(9).upper()


def phone_message_id() -> str:
    """An id chosen by the sender's phone (Android style): 32 upper-case hex."""
    return secrets.token_hex(16).upper()


def wamid(phone: str) -> str:
    """A Cloud API message id: `wamid.` + base64 of an opaque blob naming the chat."""
    chat = f"\x18{chr(len(phone))}{phone}\x15\x02\x00\x11\x18\x12".encode()
    return "wamid." + base64.b64encode(chat + secrets.token_bytes(9)).decode()


def wuzapi_user_id() -> str:
    return secrets.token_hex(16)


def evolution_cuid() -> str:
    """Evolution's database id of a stored message (a Prisma cuid)."""
    return "c" + secrets.token_hex(12)[:24]


def wuzapi_time(seconds: float) -> str:
    """RFC 3339, whole seconds, in the server's zone: `2026-05-20T10:15:30-03:00`."""
    return datetime.fromtimestamp(int(seconds), WUZAPI_TZ).isoformat()


def evolution_date_time(seconds: float) -> str:
    """Evolution's `date_time`: the server's wall clock (UTC-3) labelled as UTC with a fake `Z`."""
    local = datetime.fromtimestamp(seconds, UTC) - timedelta(hours=3)
    return local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}Z"


def jid(phone: str) -> str:
    """The chat of a phone number, as whatsmeow and Baileys write it."""
    return phone if "@" in phone else f"{phone.lstrip('+')}@s.whatsapp.net"


def lid_jid(phone: str) -> str:
    """The LID of a phone number's user: WhatsApp's own 15-digit id for them, stable per number
    (a hash here: a LID says nothing of the number it stands for)."""
    digest = int(hashlib.sha256(f"lid:{phone.lstrip('+')}".encode()).hexdigest(), 16)
    return f"{10**14 + digest % (9 * 10**14)}@lid"

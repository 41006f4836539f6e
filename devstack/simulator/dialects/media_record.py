"""What a simulated provider received for a message that is not a text, as `/_sim/sent` shows it:
the message's `body` is this record as JSON (its type, the file's bytes in base64 with their
sha256 and size, its caption, file name, location, contacts or reaction, and the quoted id), so
tests compare what left byte for byte."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any


def file_fields(data: bytes, mime_type: str | None) -> dict[str, Any]:
    return {
        "mimeType": mime_type,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "base64": base64.b64encode(data).decode(),
    }


def from_data_url(value: str) -> tuple[bytes, str]:
    """A `data:<mime>;base64,<bytes>` URL's bytes and type; ValueError when it is not one."""
    head, _, encoded = value.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        raise ValueError("not a base64 data URL")
    return base64.b64decode(encoded, validate=True), head[5:].removesuffix(";base64")


def record(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **{k: v for k, v in fields.items() if v is not None}}, sort_keys=True)

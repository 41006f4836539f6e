"""Request bodies read with limits: media type, size, strict UTF-8 and nesting depth, before any parser.

Every JSON body switchboard reads goes through `parse_json`: the API routes (as the resolver's
JSON deserializer), the reply webhook and every provider webhook mapping. Python's `json`
recurses once per nesting level, so a body of a few thousand `[` would end in a RecursionError
inside the parser (and pydantic recurses again over what it returns); the depth is therefore
measured by a scan of the text before `json.loads` ever sees it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from decimal import Decimal
from itertools import accumulate
from typing import Any

from switchboard.core.errors import InvalidInput, PayloadTooLarge, UnsupportedMediaType

# API bodies are small objects (the longest field is a message text); 256 KB leaves room.
MAX_API_BODY_BYTES = 256 * 1024
# Provider webhook bodies carry media as base64, up to what one Lambda invocation takes (6 MB).
MAX_WEBHOOK_BODY_BYTES = 6 * 1024 * 1024
# Our schemas nest a few levels; providers' payloads (Meta, Evolution) about ten.
MAX_DEPTH = 32
# A server's answer can list every instance of an Evolution server; still bounded, it is read whole.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
INTEGRAL_DIGITS = 40

# A JSON string literal (escapes included), written without nested quantifiers so the scan is linear.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
# RFC 9110's media-type: `type "/" subtype` (tokens, case-insensitive), then `;` parameters.
_MEDIA_NAME = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_MEDIA_TYPE = re.compile(rf"[ \t]*({_MEDIA_NAME}/{_MEDIA_NAME})[ \t]*(?:;.*)?", re.DOTALL)


class InvalidBody(InvalidInput, ValueError):
    """A body that is not strict UTF-8 or not JSON within the limits (400).

    Also a ValueError, so a parser's caller that already turns malformed JSON into its own
    error code (a provider's `invalid_payload`) keeps doing so."""


def media_type(content_type: str | None) -> str | None:
    """The `type/subtype` of a Content-Type, lowercased, its parameters dropped (`charset` says
    nothing about JSON, which is UTF-8 by definition); None when there is none; "" when malformed."""
    if content_type is None or not content_type.strip():
        return None
    found = _MEDIA_TYPE.fullmatch(content_type)
    return found.group(1).lower() if found else ""


def is_json(found: str) -> bool:
    """`application/json` or a structured `+json` type (RFC 6839), such as `application/merge-patch+json`."""
    return found == JSON or (found.endswith("+json") and "/" in found)


def check_media_type(content_type: str | None, body: bytes | str | None, accepted: Collection[str]) -> None:
    """Refuse a body (415 `unsupported_media_type`) whose media type is none of `accepted`, or that
    comes without a Content-Type. No body and no Content-Type: nothing to refuse."""
    found = media_type(content_type)
    if found is None and not body:
        return
    if found in accepted:
        return
    wanted = " or ".join(sorted(accepted))
    if found is None:
        raise UnsupportedMediaType(f"a body needs a Content-Type: {wanted}")
    if not found:
        raise UnsupportedMediaType(f"the Content-Type is not a media type; send {wanted}")
    raise UnsupportedMediaType(f"the body must be {wanted}, not {found}")


def _refuse_constant(name: str) -> Any:
    raise InvalidBody(f"{name} is not JSON", code="invalid_json")


def decode_utf8(body: bytes) -> str:
    """The body as text; bytes that are not strict UTF-8 are 400 `invalid_encoding`."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidBody("the body is not valid UTF-8", code="invalid_encoding") from exc


def check_size(body: bytes | str, limit: int) -> None:
    """Refuse a body over `limit` bytes (413 `payload_too_large`)."""
    size = len(body) if isinstance(body, bytes) else len(body.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise PayloadTooLarge(f"the body is over {limit // 1024} KB")


def nesting_depth(text: str) -> int:
    """How deeply arrays and objects nest in `text`, brackets inside strings not counted."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(_STEP[bracket] for bracket in brackets), default=0)


def _json_number(text: str) -> int | float:
    """A JSON number written with a fraction or an exponent. JSON has one number type, and JSON
    Schema counts 2.0 and 2e3 as integers: read without a fractional part, it is an int (exactly:
    through Decimal, never a float), so a field the document calls an integer takes it."""
    exact = Decimal(text)
    # Past 10^40 no field of ours is an integer, and int() of 1e999999 would build a million digits.
    if exact.adjusted() < INTEGRAL_DIGITS and exact == exact.to_integral_value():
        return int(exact)
    return float(text)


def parse_json(raw: bytes | str, *, limit: int = MAX_API_BODY_BYTES, integral_numbers: bool = False) -> Any:
    """Parse a JSON document within the limits.

    With `integral_numbers` (the API's bodies, validated against the OpenAPI document), a number
    without a fractional part is an int however it is written (`2.0`, `2e3`).

    Raises PayloadTooLarge (413) over `limit` bytes, InvalidInput `invalid_encoding` (400) for
    bytes that are not UTF-8 and `invalid_json` (400) for a document that is not JSON or nests
    deeper than MAX_DEPTH.
    """
    check_size(raw, limit)
    text = decode_utf8(raw) if isinstance(raw, bytes) else raw
    if nesting_depth(text) > MAX_DEPTH:
        raise InvalidBody(f"the body nests deeper than {MAX_DEPTH} levels", code="invalid_json")
    try:
        # NaN and Infinity are not JSON and no field of ours can hold them.
        document = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_json_number if integral_numbers else None
        )
    except InvalidBody:
        raise
    except ValueError as exc:
        raise InvalidBody("the body is not valid JSON", code="invalid_json") from exc
    if _SURROGATE_ESCAPE.search(text):
        _check_encodable(document)
    return document


def _check_encodable(document: Any) -> None:
    """A `\\ud800` escape alone decodes to a lone surrogate, which no UTF-8 encoder (DynamoDB's,
    a provider's, a log's) accepts later: refuse it here, as a body that is not UTF-8."""
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidBody("the body holds a lone surrogate escape", code="invalid_encoding") from exc


def parse_api_json(raw: bytes | str) -> Any:
    """An API request body: `parse_json` within the API's limit, integral numbers read as ints."""
    return parse_json(raw, integral_numbers=True)


def read_answer(content: bytes) -> Any:
    """A server's answer (a provider's, the downstream's) read with the same limits as a request.

    A hostile or broken server must not crash a worker with a RecursionError or an endless body;
    anything unreadable is a ValueError, which callers already treat as "no usable answer".
    """
    try:
        return parse_json(content, limit=MAX_ANSWER_BYTES)
    except PayloadTooLarge as exc:
        raise ValueError(exc.message) from exc

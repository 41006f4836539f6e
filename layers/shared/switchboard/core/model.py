"""The base of every pydantic model in switchboard, the string types every schema shares, and the
numbers a DynamoDB item holds exactly."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict

if TYPE_CHECKING:
    from pydantic import GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import CoreSchema

# C0 and C1 control characters (DEL included) and lone surrogates: a NUL ends a C string in a
# provider, an escape sequence rewrites a terminal or a log line, and a lone surrogate cannot be
# encoded to UTF-8 at all (DynamoDB, HTTP bodies).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# Message texts keep their layout: WhatsApp carries line breaks and tabs.
_CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _no_control(value: str) -> str:
    if _CONTROL.search(value):
        raise ValueError("control characters are not allowed")
    return value


def _no_control_in_text(value: str) -> str:
    if _CONTROL_IN_TEXT.search(value):
        raise ValueError("control characters other than line breaks and tabs are not allowed")
    return value


class _DocumentedAs:
    """Puts `pattern` in a string's JSON Schema, unless a tighter pattern of its own is there: the
    document then refuses the control characters the validator refuses (a lone surrogate cannot be
    sent in a JSON body at all: the body parser refuses it first)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema.setdefault("pattern", self.pattern)
        return schema


# A single-line value a person or a system gives: names, identifiers, tokens. No control character.
Name = Annotated[str, AfterValidator(_no_control), _DocumentedAs(r"^[^\u0000-\u001f\u007f-\u009f]*$")]
# A message text or caption: line breaks (\n, \r) and tabs allowed, no other control character.
Text = Annotated[
    str,
    AfterValidator(_no_control_in_text),
    _DocumentedAs(r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]*$"),
]

# Whole numbers are identifiers, counters and versions: 64-bit signed, what every client language
# and DynamoDB (38 digits) hold exactly.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# A DynamoDB number is 0 or of a magnitude from 1E-130 to 9.99...E+125 (38 significant digits);
# anything else is refused by boto3's Decimal context (an Underflow or Overflow trap) when the
# item is written, long after the request was accepted.
STORABLE_MAGNITUDE_MIN = Decimal("1E-130")
STORABLE_MAGNITUDE_LIMIT = Decimal("1E126")  # exclusive
STORABLE_DIGITS = 38


def storable_number_problem(value: Any) -> str | None:
    """Why `value` (a number, or a list or mapping holding some) cannot be stored exactly, or None.

    Booleans and strings are not numbers here; nested models check their own fields."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            return f"must be a whole number from {INT64_MIN} to {INT64_MAX}"
        return None
    if isinstance(value, (float, Decimal)):
        return _decimal_problem(value)
    if isinstance(value, Mapping):
        return next(filter(None, map(storable_number_problem, value.values())), None)
    if isinstance(value, (list, tuple, set, frozenset)):
        return next(filter(None, map(storable_number_problem, value)), None)
    return None


def _decimal_problem(value: float | Decimal) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    # repr() is the shortest text that reads back as the same float: what `core.store` stores.
    exact = Decimal(repr(value)) if isinstance(value, float) else value
    if not exact.is_finite():
        return "must be a finite number"
    if exact.is_zero():
        return None
    magnitude = abs(exact)
    if magnitude < STORABLE_MAGNITUDE_MIN:
        return f"must be 0 or at least {STORABLE_MAGNITUDE_MIN:.0E} in magnitude"
    if magnitude >= STORABLE_MAGNITUDE_LIMIT:
        return f"must be below {STORABLE_MAGNITUDE_LIMIT:.0E} in magnitude"
    # Counted without trailing zeros, and not through normalize(): it rounds to the context's 28 digits.
    if len("".join(map(str, exact.as_tuple().digits)).rstrip("0")) > STORABLE_DIGITS:
        return f"must have at most {STORABLE_DIGITS} significant digits"
    return None


def storable_bounds(schema: dict[str, Any]) -> None:
    """Write the storable range into a JSON Schema, in place: every integer gets the 64-bit bounds
    it lacks, every number the magnitudes DynamoDB refuses. Does not follow `$ref` (each model
    documents its own fields)."""
    kind = schema.get("type")
    if kind == "integer":
        if "minimum" not in schema and "exclusiveMinimum" not in schema:
            schema["minimum"] = INT64_MIN
        if "maximum" not in schema and "exclusiveMaximum" not in schema:
            schema["maximum"] = INT64_MAX
    elif kind == "number":
        _number_bounds(schema)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            storable_bounds(schema[key])
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for branch in schema.get(key, ()):
            if isinstance(branch, dict):
                storable_bounds(branch)
    for branch in (schema.get("properties") or {}).values():
        if isinstance(branch, dict):
            storable_bounds(branch)


def _number_bounds(schema: dict[str, Any]) -> None:
    limit = float(STORABLE_MAGNITUDE_LIMIT)
    smallest = float(STORABLE_MAGNITUDE_MIN)
    upper = min(schema.get("maximum", math.inf), schema.get("exclusiveMaximum", math.inf))
    lower = max(schema.get("minimum", -math.inf), schema.get("exclusiveMinimum", -math.inf))
    if upper >= limit:
        schema.pop("maximum", None)
        schema["exclusiveMaximum"] = limit
    if lower <= -limit:
        schema.pop("minimum", None)
        schema["exclusiveMinimum"] = -limit
    # Magnitudes between 0 and 1E-130 are refused unless the bounds already leave them out.
    if lower < smallest and upper > -smallest:
        schema["not"] = {"exclusiveMinimum": -smallest, "exclusiveMaximum": smallest, "not": {"const": 0}}


class Model(BaseModel):
    """Schemas are built on first use rather than at import: a Lambda container then pays at
    cold start only for the models its function actually validates."""

    model_config = ConfigDict(defer_build=True)

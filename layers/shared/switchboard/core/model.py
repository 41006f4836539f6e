"""The base of every pydantic model in switchboard, and the string types every schema shares."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

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


# A single-line value a person or a system gives: names, identifiers, tokens. No control character.
Name = Annotated[str, AfterValidator(_no_control)]
# A message text or caption: line breaks (\n, \r) and tabs allowed, no other control character.
Text = Annotated[str, AfterValidator(_no_control_in_text)]


class Model(BaseModel):
    """Schemas are built on first use rather than at import: a Lambda container then pays at
    cold start only for the models its function actually validates."""

    model_config = ConfigDict(defer_build=True)

"""Message templates: a WhatsApp Business Account's approved templates, and whether a send fits one.

A template is defined in the account (WhatsApp Manager, or the Graph API's
`/{waba-id}/message_templates`) with its components as Meta lists them:

- `HEADER`, `format` TEXT (its `text` holds at most one placeholder), IMAGE, VIDEO, DOCUMENT,
  LOCATION, GIF or PRODUCT;
- `BODY`, whose `text` holds the placeholders `{{1}}`, `{{2}}`, ... (positional) or
  `{{first_name}}` (named, `parameter_format: NAMED`);
- `FOOTER`, no placeholder;
- `BUTTONS`: QUICK_REPLY (a payload may be sent with it), URL (a placeholder in its `url` takes
  a text), COPY_CODE (a coupon code), OTP (the code, sent as a URL button's text), and those that
  take nothing at send time (PHONE_NUMBER, VOICE_CALL, ...).

A send names it by name and language and gives each placeholder its value (`providers.content.
Template`); `problems` says everything that does not fit, so the client learns it from one
answer, before the message is queued. Only an APPROVED template is sent.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from switchboard.core.model import Model
from switchboard.providers.content import Template, TemplateComponent

APPROVED = "APPROVED"
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")
# Header formats a send fills with a file, as the parameter type that carries it.
_MEDIA_HEADERS = {"IMAGE": "image", "VIDEO": "video", "DOCUMENT": "document"}
# Buttons whose send takes an action switchboard does not build (a catalog's thumbnail, a flow's
# token, products): a template with one is refused rather than refused by Meta.
_UNSUPPORTED_BUTTONS = frozenset({"CATALOG", "MPM", "SPM", "FLOW"})
# Buttons and the sub type and parameter a send gives them (None: the button takes nothing).
_BUTTON_PARAMETERS: dict[str, tuple[str, str] | None] = {
    "QUICK_REPLY": ("quick_reply", "payload"),
    "URL": ("url", "text"),
    "COPY_CODE": ("copy_code", "coupon_code"),
    "OTP": ("url", "text"),
}


class TemplateDefinition(Model):
    """One template as the Graph API lists it; `components` as Meta wrote them."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str | None = None
    name: str
    language: str
    status: str
    category: str | None = None
    parameter_format: str | None = None  # POSITIONAL (the default) or NAMED
    components: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def approved(self) -> bool:
        return self.status == APPROVED

    def component(self, kind: str) -> dict[str, Any] | None:
        return next((c for c in self.components if str(c.get("type", "")).upper() == kind), None)

    def header_format(self) -> str | None:
        header = self.component("HEADER")
        return None if header is None else str(header.get("format") or "TEXT").upper()

    def header_placeholders(self) -> list[str]:
        header = self.component("HEADER")
        if header is None or self.header_format() != "TEXT":
            return []
        return placeholders(header.get("text"))

    def body_placeholders(self) -> list[str]:
        body = self.component("BODY")
        return [] if body is None else placeholders(body.get("text"))

    def buttons(self) -> list[dict[str, Any]]:
        component = self.component("BUTTONS")
        buttons = component.get("buttons") if component else None
        return [button for button in buttons if isinstance(button, dict)] if isinstance(buttons, list) else []


class TemplateList(Model):
    """A WhatsApp Business Account's templates as last read from the Graph API, and when."""

    waba_id: str
    templates: list[TemplateDefinition] = Field(default_factory=list)
    fetched_at: datetime
    from_cache: bool = False  # read from the cache (a hit), not from the Graph API

    def find(self, name: str, language: str) -> TemplateDefinition | None:
        return next((t for t in self.templates if t.name == name and t.language == language), None)

    def languages_of(self, name: str) -> list[str]:
        return sorted(t.language for t in self.templates if t.name == name)


def placeholders(text: object) -> list[str]:
    """The placeholders of a component's text, in order, each once (`{{1}}` -> `1`)."""
    if not isinstance(text, str):
        return []
    return list(dict.fromkeys(match.group(1) for match in _PLACEHOLDER.finditer(text)))


def button_takes(button: dict[str, Any]) -> tuple[str, str] | None:
    """The sub type and the parameter type a send gives `button` (None: it takes nothing)."""
    kind = str(button.get("type", "")).upper()
    if kind == "URL":
        return _BUTTON_PARAMETERS["URL"] if placeholders(button.get("url")) else None
    return _BUTTON_PARAMETERS.get(kind)


def problems(definition: TemplateDefinition, template: Template) -> list[str]:
    """Everything in `template` that does not fit `definition`, in words; empty when it fits."""
    found: list[str] = []
    if not definition.approved:
        found.append(f"the template is {definition.status}, not APPROVED")
    by_type = {c.type: c for c in template.components if c.type != "button"}
    found += _header_problems(definition, by_type.get("header"))
    named = (definition.parameter_format or "").upper() == "NAMED"
    found += _text_problems("body", definition.body_placeholders(), by_type.get("body"), named=named)
    found += _button_problems(definition, [c for c in template.components if c.type == "button"])
    return found


def _header_problems(definition: TemplateDefinition, given: TemplateComponent | None) -> list[str]:
    header = definition.header_format()
    if header is None:
        return ["the template has no header"] if given is not None else []
    if header == "TEXT":
        named = (definition.parameter_format or "").upper() == "NAMED"
        return _text_problems("header", definition.header_placeholders(), given, named=named)
    expected = _MEDIA_HEADERS.get(header)
    if expected is None:
        return [f"a {header.lower()} header is not supported by switchboard"]
    types: list[str] = [p.type for p in given.parameters] if given is not None else []
    if types != [expected]:
        return [f"the header takes one {expected} (mediaId or url), got {_listed(types)}"]
    return []


def _text_problems(part: str, wanted: list[str], given: TemplateComponent | None, *, named: bool) -> list[str]:
    parameters = given.parameters if given is not None else []
    if not wanted:
        return [f"the {part} takes no parameters, got {len(parameters)}"] if parameters else []
    if any(p.type != "text" for p in parameters):
        return [f"the {part} takes text parameters only"]
    if len(parameters) != len(wanted):
        return [f"the {part} takes {len(wanted)} parameter{'s' if len(wanted) != 1 else ''}, got {len(parameters)}"]
    if named:
        names = [p.name for p in parameters]
        if sorted(n or "" for n in names) != sorted(wanted):
            return [f"the {part}'s parameters are named {', '.join(wanted)}; give each once as parameterName"]
    elif any(p.name is not None for p in parameters):
        return [f"the {part}'s parameters are positional: no parameterName"]
    return []


def _button_problems(definition: TemplateDefinition, given: list[TemplateComponent]) -> list[str]:
    buttons = definition.buttons()
    by_index = {c.index: c for c in given}
    found: list[str] = []
    for index in sorted(i for i in by_index if i is not None and i >= len(buttons)):
        found.append(f"the template has no button {index}")
    for index, button in enumerate(buttons):
        takes = button_takes(button)
        kind = str(button.get("type", "")).upper()
        component = by_index.get(index)
        if kind in _UNSUPPORTED_BUTTONS:
            found.append(f"button {index} ({kind}) is not supported by switchboard")
            continue
        if takes is None:
            if component is not None:
                found.append(f"button {index} ({kind}) takes no parameters")
            continue
        sub_type, parameter = takes
        if component is None:
            if kind != "QUICK_REPLY":  # a quick reply's payload is optional
                found.append(f"button {index} ({kind}) takes one {parameter} (subType {sub_type})")
            continue
        types: list[str] = [p.type for p in component.parameters]
        if component.sub_type != sub_type or types != [parameter]:
            found.append(f"button {index} ({kind}) takes subType {sub_type} with one {parameter}, got {_listed(types)}")
    return found


def _listed(types: list[str]) -> str:
    return ", ".join(types) if types else "none"


def summary(definition: TemplateDefinition) -> dict[str, Any]:
    """What a send of `definition` gives: the header's kind and placeholders, the body's, and
    each button's sub type and parameter (the console and the API's listing show it)."""
    header = definition.header_format()
    return {
        "header": None
        if header is None
        else {"format": header, "parameters": definition.header_placeholders() if header == "TEXT" else []},
        "body": definition.body_placeholders(),
        "buttons": [
            {
                "index": index,
                "type": str(button.get("type", "")).upper(),
                "text": button.get("text") if isinstance(button.get("text"), str) else None,
                "subType": takes[0] if (takes := button_takes(button)) else None,
                "parameter": takes[1] if takes else None,
            }
            for index, button in enumerate(definition.buttons())
        ],
    }

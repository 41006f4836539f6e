"""A Cloud API webhook's message (`value.messages[]`) as `providers.content`.

`type` names the object holding the message: `text.body`; `image|video|audio|document|sticker`
with `id` (the media id: `GET /{version}/{media-id}` answers its short-lived URL), `mime_type`,
`sha256` (base64 of the file's digest), `caption`, `filename` (a document's), `voice` (an audio
recorded as a voice note), `animated` (a sticker's); `location` (`latitude`, `longitude`,
`name`, `address`, `url`); `contacts[]` (`name.formatted_name`, `phones[].wa_id|phone`);
`interactive` (`button_reply`/`list_reply` `{id, title}`, `nfm_reply` `{name, body,
response_json}`: a flow's answers); `button` (a template's quick reply `{payload, text}`);
`reaction` (`message_id`, `emoji`; no emoji removes it); `edit` (`original_message_id` and the
new `message`) and `revoke` (`original_message_id`). `context.id` is the quoted message.
Anything else (`unsupported`, `order`, `system`, ...) is not mapped: the reason says which.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError

from switchboard.providers.content import (
    Choice,
    ContactCard,
    Contacts,
    Content,
    Edit,
    Location,
    Media,
    MediaKind,
    MediaMessage,
    MediaSource,
    Reaction,
    Revoke,
    Text,
)
from switchboard.providers.wa_message import flow_response, sha256_hex, text_field

_MEDIA_TYPES: dict[str, MediaKind] = {
    "image": "image",
    "video": "video",
    "audio": "audio",
    "document": "document",
    "sticker": "sticker",
}
_MAX_FIELD = 255


def map_content(message: dict[str, Any]) -> tuple[Content, str | None] | str:
    """The content and the quoted message id of a Cloud API message, or why it is not mapped."""
    kind = message.get("type")
    context = message.get("context")
    quoted = text_field(context, "id", limit=256)
    try:
        content = _content(kind, message)
    except ValidationError as exc:
        location = ".".join(str(part) for part in exc.errors()[0]["loc"]) or "content"
        return f"{_label(kind)} message out of bounds ({location[:60]})"
    if isinstance(content, str):
        return content
    return content, quoted


def _content(kind: object, message: dict[str, Any]) -> Content | str:
    body = message.get(kind) if isinstance(kind, str) else None
    if kind == "text":
        text = text_field(body, "body")
        return Text(body=text) if text is not None else "text message without a body"
    if isinstance(kind, str) and kind in _MEDIA_TYPES:
        return _media(_MEDIA_TYPES[kind], body) if isinstance(body, dict) else f"{kind} message without its media"
    if kind == "location":
        return _location(body)
    if kind == "contacts":
        return _contacts(message.get("contacts"))
    if kind == "interactive":
        return _interactive(body)
    if kind == "button":
        title = text_field(body, "text", limit=1024)
        payload = text_field(body, "payload", limit=_MAX_FIELD)
        if title is None and payload is None:
            return "button message without a choice"
        return Choice(source="template_button", id=payload, title=title)
    if kind == "reaction":
        target = text_field(body, "message_id", limit=256)
        if target is None:
            return "reaction without its message"
        emoji = body.get("emoji") if isinstance(body, dict) else None
        return Reaction(target_id=target, emoji=emoji if isinstance(emoji, str) else "")
    if kind == "edit":
        return _edit(body)
    if kind == "revoke":
        target = text_field(body, "original_message_id", limit=256)
        return Revoke(target_id=target) if target is not None else "revoke without its message"
    if kind == "unsupported":
        return f"unsupported message{_error_code(message)}"
    return f"{_label(kind)} message"


def _media(kind: MediaKind, body: dict[str, Any]) -> Content | str:
    media_id = text_field(body, "id", limit=256)
    if media_id is None:
        return f"{kind} message without a media id"
    if kind == "audio" and body.get("voice") is True:
        kind = "voice"
    mime = text_field(body, "mime_type")
    media = Media(
        kind=kind,
        mime_type=mime if mime and len(mime) <= _MAX_FIELD else None,
        file_name=text_field(body, "filename", limit=_MAX_FIELD),
        caption=text_field(body, "caption"),
        sha256=sha256_hex(body.get("sha256")),
        animated=body.get("animated") is True,
        source=MediaSource(via="meta_media_id", media_id=media_id),
    )
    return MediaMessage(media=media)


def _location(body: object) -> Content | str:
    if not isinstance(body, dict):
        return "location message without coordinates"
    latitude, longitude = _number(body.get("latitude")), _number(body.get("longitude"))
    if latitude is None or longitude is None:
        return "location message without coordinates"
    return Location(
        latitude=latitude,
        longitude=longitude,
        name=text_field(body, "name", limit=1024),
        address=text_field(body, "address", limit=1024),
        url=text_field(body, "url", limit=2048),
    )


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _contacts(raw: object) -> Content | str:
    cards: list[ContactCard] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        formatted = text_field(name, "formatted_name", limit=_MAX_FIELD)
        if formatted is None and isinstance(name, dict):
            parts = [text_field(name, "first_name"), text_field(name, "last_name")]
            formatted = " ".join(part for part in parts if part)[:_MAX_FIELD] or None
        phones_raw = item.get("phones")
        phones = [
            phone[:64]
            for entry in (phones_raw if isinstance(phones_raw, list) else [])
            if (phone := text_field(entry, "wa_id") or text_field(entry, "phone")) is not None
        ]
        cards.append(ContactCard(name=formatted, phones=phones[:32]))
    return Contacts(cards=cards[:50]) if cards else "contacts message without cards"


def _interactive(body: object) -> Content | str:
    kind = body.get("type") if isinstance(body, dict) else None
    reply = body.get(kind) if isinstance(body, dict) and isinstance(kind, str) else None
    if kind == "button_reply":
        return Choice(source="button", id=text_field(reply, "id", limit=_MAX_FIELD), title=text_field(reply, "title"))
    if kind == "list_reply":
        return Choice(source="list", id=text_field(reply, "id", limit=_MAX_FIELD), title=text_field(reply, "title"))
    if kind == "nfm_reply":
        return Choice(
            source="flow",
            id=text_field(reply, "name", limit=_MAX_FIELD),
            title=text_field(reply, "body", limit=1024),
            response=flow_response(text_field(reply, "response_json")),
        )
    return f"interactive {_label(kind)} message"


def _edit(body: object) -> Content | str:
    target = text_field(body, "original_message_id", limit=256)
    new = body.get("message") if isinstance(body, dict) else None
    if target is None or not isinstance(new, dict):
        return "edit without its message"
    edited = _content(new.get("type"), new)
    if isinstance(edited, Text):
        return Edit(target_id=target, body=edited.body)
    if isinstance(edited, MediaMessage) and edited.media.caption is not None:
        return Edit(target_id=target, body=edited.media.caption)
    return "edit without text"


def _error_code(message: dict[str, Any]) -> str:
    errors = message.get("errors")
    first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
    code = first.get("code")
    return f" ({code})" if type(code) is int else ""


def _label(value: object) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", value)[:40] if isinstance(value, str) and value else "untyped"

"""The WhatsApp message JSON that whatsmeow (wuzapi) and Baileys (Evolution) both emit, mapped
to `providers.content`.

Both serialise the same `waE2E.Message` protobuf, each its own way:
- whatsmeow (Go `encoding/json` on the generated structs) keeps the proto field names (`URL`,
  `fileSHA256`, `PTT`, `stanzaID`, `ID`, `selectedButtonID`), enums as numbers, bytes as base64
  strings, 64-bit integers as numbers;
- Baileys (protobufjs objects, as Evolution posts them) uses camelCase (`url`, `fileSha256`,
  `ptt`, `stanzaId`, `id`, `selectedButtonId`), bytes as `{"0": n, ...}` objects (or base64
  strings), 64-bit integers as `{"low", "high"}` objects (or strings), enums as numbers or names.

Every reader below accepts both. `map_message` returns a `Mapped` (the content, the quoted
message id, and the raw media object for the provider's download route) or the reason the
message is not mapped.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass
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
    Poll,
    Reaction,
    Revoke,
    Text,
)

# Containers whose `message` is the real message (view once, disappearing, captioned document,
# an edit as Baileys delivers it).
WRAPPERS = (
    "ephemeralMessage",
    "viewOnceMessage",
    "viewOnceMessageV2",
    "viewOnceMessageV2Extension",
    "documentWithCaptionMessage",
    "editedMessage",
    "deviceSentMessage",
)
_MEDIA_KEYS: tuple[tuple[str, MediaKind], ...] = (
    ("imageMessage", "image"),
    ("videoMessage", "video"),
    ("ptvMessage", "video"),
    ("audioMessage", "audio"),
    ("documentMessage", "document"),
    ("stickerMessage", "sticker"),
)
# `ProtocolMessage.Type`: the two a customer's edit and "delete for everyone" are.
_REVOKE = (0, "REVOKE")
_MESSAGE_EDIT = (14, "MESSAGE_EDIT")
_MAX_FIELD = 255
_MAX_DEPTH = 4
_HEX = re.compile(r"^[0-9a-fA-F]{64}$")
_TEL = re.compile(r"^(?:item\d+\.)?TEL[;:]", re.IGNORECASE)


@dataclass(frozen=True)
class Mapped:
    content: Content
    reply_to: str | None = None
    media_fields: dict[str, Any] | None = None  # the raw media object (its download route's input)


# --- readers of both serialisations -----------------------------------------------------------


def field(obj: object, *names: str) -> Any:
    """The first of `names` present (not None) in `obj`: whatsmeow's and Baileys' spellings."""
    if not isinstance(obj, dict):
        return None
    for name in names:
        value = obj.get(name)
        if value is not None:
            return value
    return None


def text_field(obj: object, *names: str, limit: int | None = None) -> str | None:
    value = field(obj, *names)
    if not isinstance(value, str) or not value:
        return None
    return value[:limit] if limit else value


def as_bytes(value: object) -> bytes | None:
    """Protobuf bytes: a base64 string, a `{"0": n, ...}` object or a list of byte values."""
    try:
        if isinstance(value, str):
            return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        if isinstance(value, dict) and value:
            items = sorted((int(key), item) for key, item in value.items())
            if [key for key, _ in items] != list(range(len(items))):
                return None
            return bytes(int(item) for _, item in items)
        if isinstance(value, list):
            return bytes(int(item) for item in value)
    except (binascii.Error, ValueError, TypeError, OverflowError):
        return None
    return None


def sha256_hex(value: object) -> str | None:
    """An announced SHA-256 as hex: from 32 raw bytes (base64, as WhatsApp and Meta send it), or
    already hex; None when it is neither (a claim that cannot be checked is no claim)."""
    if isinstance(value, str) and _HEX.fullmatch(value):
        return value.lower()
    raw = as_bytes(value)
    return raw.hex() if raw is not None and len(raw) == 32 else None


def as_int(value: object) -> int | None:
    """A protobuf integer: a number, a digit string or a Long `{low, high}`; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        return int(value)
    if isinstance(value, dict):
        low, high = value.get("low"), value.get("high")
        if type(low) is int and type(high) is int:
            return ((high & 0xFFFFFFFF) << 32) | (low & 0xFFFFFFFF)
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if type(value) is int else None


def _flag(obj: object, *names: str) -> bool:
    return field(obj, *names) is True


# --- the mapping --------------------------------------------------------------------------------


def unwrap(message: dict[str, Any]) -> dict[str, Any]:
    """The innermost message under the wrapper containers."""
    for _ in range(_MAX_DEPTH):
        inner = next(
            (
                wrapped["message"]
                for key in WRAPPERS
                if isinstance(wrapped := message.get(key), dict) and isinstance(wrapped.get("message"), dict)
            ),
            None,
        )
        if inner is None:
            return message
        message = inner
    return message


def reply_to(context_info: object) -> str | None:
    """The id of the message quoted (`contextInfo.stanzaID` / `stanzaId`)."""
    stanza = text_field(context_info, "stanzaID", "stanzaId", limit=256)
    return stanza


def map_message(message: object, *, context_info: object = None) -> Mapped | str:
    """`message` (a `waE2E.Message`) as content, or the reason it is not mapped.

    `context_info`: the quoting context where the provider moved it out of the message
    (Evolution's `data.contextInfo`); else the content's own `contextInfo` is read."""
    if not isinstance(message, dict) or not message:
        return "message without content"
    message = unwrap(message)
    try:
        return _map(message, context_info)
    except ValidationError as exc:
        # A field out of its bounds (a latitude of 200): the message is recorded, not applied.
        location = ".".join(str(part) for part in exc.errors()[0]["loc"]) or "content"
        return f"message content out of bounds ({location[:60]})"


def _map(message: dict[str, Any], context_info: object) -> Mapped | str:
    conversation = message.get("conversation")
    extended = message.get("extendedTextMessage")
    for key, kind in _MEDIA_KEYS:
        obj = message.get(key)
        if isinstance(obj, dict):
            return _media(obj, kind, _context(obj, context_info))
    if isinstance(conversation, str) and conversation:
        return Mapped(Text(body=conversation), reply_to(context_info))
    if isinstance(extended, dict) and (text := text_field(extended, "text")) is not None:
        return Mapped(Text(body=text), _context(extended, context_info))
    for key, mapper in _OTHERS:
        obj = message.get(key)
        if isinstance(obj, dict):
            return mapper(obj, context_info)
    if "pollUpdateMessage" in message:
        return "poll vote (encrypted)"
    if "encReactionMessage" in message:
        return "encrypted reaction"
    known = next((key for key in message if key not in ("messageContextInfo", "senderKeyDistributionMessage")), None)
    return f"unsupported message {re.sub(r'[^A-Za-z0-9_]', '', known or 'empty')[:48] or 'unknown'}"


def _context(obj: dict[str, Any], outer: object) -> str | None:
    return reply_to(obj.get("contextInfo")) or reply_to(outer)


def _media(obj: dict[str, Any], kind: MediaKind, quoted: str | None) -> Mapped:
    if kind == "audio" and _flag(obj, "PTT", "ptt"):
        kind = "voice"
    mime = text_field(obj, "mimetype", "mimeType")
    media = Media(
        kind=kind,
        mime_type=mime if mime and len(mime) <= _MAX_FIELD else None,
        file_name=text_field(obj, "fileName", limit=_MAX_FIELD),
        caption=text_field(obj, "caption"),
        size=_non_negative(as_int(field(obj, "fileLength"))),
        sha256=sha256_hex(field(obj, "fileSHA256", "fileSha256")),
        seconds=_non_negative(as_int(field(obj, "seconds"))),
        animated=_flag(obj, "isAnimated"),
    )
    return Mapped(MediaMessage(media=media), quoted, obj)


def _non_negative(value: int | None) -> int | None:
    return value if value is not None and value >= 0 else None


def _location(obj: dict[str, Any], outer: object, *, live: bool = False) -> Mapped | str:
    latitude, longitude = field(obj, "degreesLatitude"), field(obj, "degreesLongitude")
    if not _number(latitude) or not _number(longitude):
        return "location without coordinates"
    content = Location(
        latitude=float(latitude),
        longitude=float(longitude),
        name=text_field(obj, "name", limit=1024) if not live else text_field(obj, "caption", limit=1024),
        address=text_field(obj, "address", limit=1024),
        url=text_field(obj, "URL", "url", limit=2048),
        live=live,
    )
    return Mapped(content, _context(obj, outer))


def _live_location(obj: dict[str, Any], outer: object) -> Mapped | str:
    return _location(obj, outer, live=True)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def vcard_card(vcard: str | None, name: str | None) -> ContactCard:
    """A contact card from its vCard: the formatted name (`FN`) and every `TEL` (its `waid`
    parameter's digits when present, else the number as written)."""
    phones: list[str] = []
    card_name = name
    for line in (vcard or "").replace("\r\n", "\n").split("\n"):
        if card_name is None and line.upper().startswith("FN:"):
            card_name = line[3:].strip() or None
        if _TEL.match(line):
            params, _, number = line.partition(":")
            waid = re.search(r"waid=([0-9]+)", params, re.IGNORECASE)
            phone = waid.group(1) if waid else number.strip()
            if phone and phone not in phones:
                phones.append(phone[:64])
    return ContactCard(name=card_name[:_MAX_FIELD] if card_name else None, phones=phones[:32], vcard=vcard)


def _contact(obj: dict[str, Any], outer: object) -> Mapped | str:
    card = vcard_card(text_field(obj, "vcard"), text_field(obj, "displayName"))
    return Mapped(Contacts(cards=[card]), _context(obj, outer))


def _contacts(obj: dict[str, Any], outer: object) -> Mapped | str:
    raw = obj.get("contacts")
    cards = [
        vcard_card(text_field(item, "vcard"), text_field(item, "displayName"))
        for item in (raw if isinstance(raw, list) else [])
        if isinstance(item, dict)
    ]
    if not cards:
        return "contact message without cards"
    return Mapped(Contacts(cards=cards[:50]), _context(obj, outer))


def _buttons_response(obj: dict[str, Any], outer: object) -> Mapped | str:
    choice = Choice(
        source="button",
        id=text_field(obj, "selectedButtonID", "selectedButtonId", limit=_MAX_FIELD),
        title=text_field(obj, "selectedDisplayText", limit=1024),
    )
    return Mapped(choice, _context(obj, outer))


def _list_response(obj: dict[str, Any], outer: object) -> Mapped | str:
    reply = obj.get("singleSelectReply")
    choice = Choice(
        source="list",
        id=text_field(reply, "selectedRowID", "selectedRowId", limit=_MAX_FIELD),
        title=text_field(obj, "title", limit=1024) or text_field(obj, "description", limit=1024),
    )
    return Mapped(choice, _context(obj, outer))


def _template_reply(obj: dict[str, Any], outer: object) -> Mapped | str:
    choice = Choice(
        source="template_button",
        id=text_field(obj, "selectedID", "selectedId", limit=_MAX_FIELD),
        title=text_field(obj, "selectedDisplayText", limit=1024),
    )
    return Mapped(choice, _context(obj, outer))


def _interactive_response(obj: dict[str, Any], outer: object) -> Mapped | str:
    flow = obj.get("nativeFlowResponseMessage")
    params = text_field(flow, "paramsJSON", "paramsJson")
    response = flow_response(params)
    choice = Choice(
        source="flow",
        id=text_field(flow, "name", limit=_MAX_FIELD),
        title=text_field(obj.get("body"), "text", limit=1024),
        response=response,
    )
    return Mapped(choice, _context(obj, outer))


def flow_response(raw: str | None) -> dict[str, Any] | None:
    """A flow's answers: its JSON object, or None when it is not one."""
    if not raw:
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _poll(obj: dict[str, Any], outer: object) -> Mapped | str:
    question = text_field(obj, "name")
    if question is None:
        return "poll without a question"
    options = obj.get("options")
    names = [
        name
        for item in (options if isinstance(options, list) else [])
        if (name := text_field(item, "optionName", limit=1024)) is not None
    ]
    # `selectableOptionsCount` 0 lets the voter pick any number of options.
    selectable = as_int(field(obj, "selectableOptionsCount"))
    return Mapped(Poll(question=question, options=names[:64], multiple=selectable != 1), _context(obj, outer))


def _reaction(obj: dict[str, Any], outer: object) -> Mapped | str:
    target = text_field(obj.get("key"), "ID", "id", limit=256)
    if target is None:
        return "reaction without its message"
    emoji = field(obj, "text")
    return Mapped(Reaction(target_id=target, emoji=emoji if isinstance(emoji, str) else ""))


def _protocol(obj: dict[str, Any], outer: object) -> Mapped | str:
    kind = field(obj, "type")
    target = text_field(obj.get("key"), "ID", "id", limit=256)
    if kind in _REVOKE:
        return Mapped(Revoke(target_id=target)) if target else "revoke without its message"
    if kind in _MESSAGE_EDIT:
        if target is None:
            return "edit without its message"
        edited = obj.get("editedMessage")
        mapped = map_message(edited) if isinstance(edited, dict) else "edit without its new content"
        if isinstance(mapped, str):
            return mapped
        body = _edited_body(mapped.content)
        return Mapped(Edit(target_id=target, body=body)) if body is not None else "edit without text"
    return f"protocol message {re.sub(r'[^A-Za-z0-9_]', '', str(kind))[:32] or 'unknown'}"


def _edited_body(content: Content) -> str | None:
    """The new text of an edit: a text's body, or a media's caption."""
    if isinstance(content, Text):
        return content.body
    if isinstance(content, MediaMessage):
        return content.media.caption
    return None


_OTHERS = (
    ("locationMessage", _location),
    ("liveLocationMessage", _live_location),
    ("contactMessage", _contact),
    ("contactsArrayMessage", _contacts),
    ("buttonsResponseMessage", _buttons_response),
    ("listResponseMessage", _list_response),
    ("templateButtonReplyMessage", _template_reply),
    ("interactiveResponseMessage", _interactive_response),
    ("pollCreationMessage", _poll),
    ("pollCreationMessageV2", _poll),
    ("pollCreationMessageV3", _poll),
    ("reactionMessage", _reaction),
    ("protocolMessage", _protocol),
)

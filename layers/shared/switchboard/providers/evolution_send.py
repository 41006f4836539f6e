"""A content as Evolution API v2's send routes take it (EvolutionAPI/evolution-api
`src/api/dto/sendMessage.dto.ts`, `src/validate/message.schema.ts`, `src/api/routes/
sendMessage.router.ts`, `whatsapp.baileys.service.ts`):

- `sendMedia` (`mediatype` image|video|audio|document, `mimetype`, `caption`, `fileName`,
  `media` as base64 or a URL): the bytes go as base64 (they are in our bucket, not on the web);
- `sendWhatsAppAudio` (`audio`): a voice note, which Evolution converts to Opus and sends as PTT;
- `sendSticker` (`sticker`);
- `sendLocation`: its schema requires `name` and `address`, so an absent one is sent empty;
- `sendContact` (`contact: [{fullName, wuid, phoneNumber}]`): one phone per contact entry, so a
  card's first phone is the one sent;
- `sendReaction` (`key: {remoteJid, fromMe, id}`, `reaction`; an empty reaction removes it);
- `sendList` (`title`, `description`, `footerText`, `buttonText`, `sections[{title, rows[{title,
  description, rowId}]}]`; `footerText`, `buttonText` and each section's `title` required): a list,
  native. Evolution sends it as a `PRODUCT_LIST` (its `listType: 2`) and turns its own device's
  copy back into a `SINGLE_SELECT` (`patchMessageBeforeSending`): the way a list still reaches
  recipients from an unofficial client (whatsmeow #461). The tap comes back as a
  `listResponseMessage` with the row's id;
- reply buttons as a numbered text menu through `sendText` (`providers.menu`): its `sendButtons`
  sends a native-flow `interactiveMessage` inside a `viewOnceMessage`, which many WhatsApp apps
  do not show (iOS, WhatsApp Web), so the customer could not answer at all;
- no templates: they belong to a Cloud API number's business account;
- a quote: `quoted: {key: {id, remoteJid, fromMe}}` without `message`: Evolution finds the
  quoted message in its own store by its key.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from switchboard.core.errors import UnsupportedByProvider
from switchboard.providers.base import OutgoingFile, Quote
from switchboard.providers.content import Contacts, Content, Interactive, Location, Media, MediaMessage, Reaction, Text
from switchboard.providers.menu import text_menu


@dataclass(frozen=True)
class EvolutionRequest:
    action: str  # the route's last segment before the instance: `sendMedia`, `sendReaction`, ...
    body: dict[str, Any]


def jid(digits: str) -> str:
    return f"{digits}@s.whatsapp.net"


def _key(phone: str, quoted: Quote) -> dict[str, Any]:
    return {"remoteJid": jid(phone), "fromMe": quoted.from_me, "id": quoted.id}


def _media_fields(body: dict[str, Any], media: Media, file: OutgoingFile | None) -> str:
    """Adds a media message's fields to `body`; its action."""
    if file is None:
        raise UnsupportedByProvider("a media message needs its file")
    encoded = base64.b64encode(file.data).decode()
    if media.kind == "voice":
        body["audio"] = encoded
        return "sendWhatsAppAudio"
    if media.kind == "sticker":
        body["sticker"] = encoded
        return "sendSticker"
    body.update({"mediatype": media.kind, "mimetype": file.mime_type, "media": encoded})
    if media.caption and media.kind != "audio":
        body["caption"] = media.caption
    if media.kind == "document":
        body["fileName"] = media.file_name or file.file_name or "file"
    return "sendMedia"


def _list_fields(content: Interactive) -> dict[str, Any]:
    """`sendList`'s fields: its schema requires `footerText`, `buttonText` and a non-empty title
    for each section (a single untitled section is titled with the list's button)."""
    sections = []
    for section in content.sections:
        rows = []
        for row in section.rows:
            item: dict[str, Any] = {"title": row.title, "rowId": row.id}
            if row.description:
                item["description"] = row.description
            rows.append(item)
        sections.append({"title": section.title or content.button or content.body[:24], "rows": rows})
    return {
        "title": content.header or "",
        "description": content.body,
        "footerText": content.footer or "",
        "buttonText": content.button or "",
        "sections": sections,
    }


def request_for(
    phone: str, content: Content, *, quoted: Quote | None = None, file: OutgoingFile | None = None
) -> EvolutionRequest:
    """The route and body that send `content` to `phone`. Raises `UnsupportedByProvider`."""
    if isinstance(content, Reaction):
        reacted = quoted or Quote(id=content.target_id)
        return EvolutionRequest("sendReaction", {"key": _key(phone, reacted), "reaction": content.emoji})
    body: dict[str, Any] = {"number": phone}
    match content:
        case Text(body=text):
            action = "sendText"
            body["text"] = text
        case Interactive(kind="list"):
            action = "sendList"
            body.update(_list_fields(content))
        case Interactive():
            action = "sendText"
            body["text"] = text_menu(content)
        case MediaMessage(media=media):
            action = _media_fields(body, media, file)
        case Location(latitude=latitude, longitude=longitude, name=name, address=address):
            action = "sendLocation"
            body.update({"latitude": latitude, "longitude": longitude, "name": name or "", "address": address or ""})
        case Contacts(cards=cards):
            action = "sendContact"
            entries = []
            for card in cards:
                if not card.phones:
                    raise UnsupportedByProvider("Evolution sends a contact only with a phone number")
                digits = "".join(ch for ch in card.phones[0] if ch.isdigit())
                entries.append({"fullName": card.name or f"+{digits}", "wuid": digits, "phoneNumber": f"+{digits}"})
            body["contact"] = entries
        case _:
            raise UnsupportedByProvider(f"Evolution cannot send a {content.type}")
    if quoted is not None:
        body["quoted"] = {"key": _key(phone, quoted)}
    return EvolutionRequest(action, body)

"""A content as wuzapi's send routes take it (asternic/wuzapi `handlers.go`); the calls-capable
server extends the same `/chat/send/*` routes with the same bodies.

- media: `/chat/send/{image,video,audio,document,sticker}` with the bytes as a data URL
  (`data:<mime>;base64,...`; the server checks the prefix: `data:image` for an image,
  `data:audio/` for an audio, `data:` for the others), `Caption`, `FileName` (a document needs
  one), `MimeType` (`mimetype` for an audio), and `ptt` for an audio: true makes a voice note
  (the server's default), false a plain audio file;
- `/chat/send/location` (`Latitude`, `Longitude`, `Name`): the server refuses a coordinate that
  is exactly 0, so such a location is not sent here (another kind may send it);
- `/chat/send/contact` (`Name`, `Vcard`): one contact per message;
- `/chat/react` (`Body` the emoji, `"remove"` to take it back; `Id` prefixed `me:` when the
  message reacted to is our own);
- reply buttons and lists as a numbered text menu through `/chat/send/text` (`providers.menu`):
  the server's `/chat/send/buttons` is marked in its own code "not implemented, does not work",
  and its `/chat/send/list` sends a `SINGLE_SELECT` list that WhatsApp shows only to the sender
  or refuses (whatsmeow #305, #439; its rows without an id all get the id "1");
- no templates: they belong to a Cloud API number's business account;
- a quote: `ContextInfo: {StanzaId, Participant}` (the server refuses one without the other;
  `Participant` is the JID of the quoted message's author).

`Id` carries our message id, as `/chat/send/text` does: a resend after a timeout reuses it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from switchboard.core.errors import UnsupportedByProvider
from switchboard.providers.base import OutgoingFile, Quote
from switchboard.providers.content import Contacts, Content, Interactive, Location, Media, MediaMessage, Reaction, Text
from switchboard.providers.menu import text_menu
from switchboard.providers.vcard import vcard_of

_MEDIA_ROUTES = {
    "image": ("/chat/send/image", "Image"),
    "video": ("/chat/send/video", "Video"),
    "audio": ("/chat/send/audio", "Audio"),
    "voice": ("/chat/send/audio", "Audio"),
    "document": ("/chat/send/document", "Document"),
    "sticker": ("/chat/send/sticker", "Sticker"),
}
REACTION_REMOVED = "remove"


@dataclass(frozen=True)
class WuzapiRequest:
    route: str
    body: dict[str, Any]


def jid(digits: str) -> str:
    return f"{digits}@s.whatsapp.net"


def data_url(file: OutgoingFile) -> str:
    return f"data:{file.mime_type};base64,{base64.b64encode(file.data).decode()}"


def _media_fields(body: dict[str, Any], media: Media, file: OutgoingFile | None) -> str:
    """Adds a media message's fields to `body`; its route."""
    if file is None:
        raise UnsupportedByProvider("a media message needs its file")
    route, field = _MEDIA_ROUTES[media.kind]
    body[field] = data_url(file)
    if media.kind in {"audio", "voice"}:
        body["ptt"] = media.kind == "voice"
        body["mimetype"] = file.mime_type
    else:
        body["MimeType"] = file.mime_type
    if media.caption and media.kind in {"image", "video", "document"}:
        body["Caption"] = media.caption
    if media.kind == "document":
        body["FileName"] = media.file_name or file.file_name or "file"
    return route


def request_for(
    phone: str, content: Content, message_id: str, *, quoted: Quote | None = None, file: OutgoingFile | None = None
) -> WuzapiRequest:
    """The route and body that send `content` to `phone`. Raises `UnsupportedByProvider`."""
    body: dict[str, Any] = {"Phone": phone}
    match content:
        case Reaction(target_id=target_id, emoji=emoji):
            mine = quoted is not None and quoted.from_me
            body.update({"Body": emoji or REACTION_REMOVED, "Id": f"me:{target_id}" if mine else target_id})
            return WuzapiRequest("/chat/react", body)
        case Text(body=text):
            route = "/chat/send/text"
            body["Body"] = text
        case Interactive():
            route = "/chat/send/text"
            body["Body"] = text_menu(content)
        case MediaMessage(media=media):
            route = _media_fields(body, media, file)
        case Location(latitude=latitude, longitude=longitude, name=name):
            if latitude == 0 or longitude == 0:
                raise UnsupportedByProvider("wuzapi refuses a latitude or longitude of exactly 0")
            route = "/chat/send/location"
            body.update({"Latitude": latitude, "Longitude": longitude})
            if name:
                body["Name"] = name
        case Contacts(cards=cards):
            if len(cards) != 1:
                raise UnsupportedByProvider("wuzapi sends one contact per message")
            route = "/chat/send/contact"
            card = cards[0]
            body.update({"Name": card.name or (card.phones[0] if card.phones else "contact"), "Vcard": vcard_of(card)})
        case _:
            raise UnsupportedByProvider(f"wuzapi cannot send a {content.type}")
    body["Id"] = message_id
    if quoted is not None:
        body["ContextInfo"] = {"StanzaId": quoted.id, "Participant": jid(quoted.author or phone)}
    return WuzapiRequest(route, body)

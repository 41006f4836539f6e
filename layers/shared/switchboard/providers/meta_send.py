"""A content as the WhatsApp Cloud API's `POST /{phone-number-id}/messages` takes it (Meta's
messages and media references; david-lev/pywa `pywa/api.py` `send_message`, `upload_media`):

- media: the file is uploaded first (`POST /{phone-number-id}/media`, multipart `file`,
  `type`, `messaging_product`), and the message names the answer's id (`{"image": {"id",
  "caption"}}`, a document's `filename`). A media id belongs to the number that uploaded it and
  stays usable 30 days, so it is kept per number and file (`UploadedMedia`) and reused;
- a voice note: Meta plays an audio as a voice message only when it is OGG with the Opus codec.
  Every sender turns a voice note in another format into an audio first (`providers.voice`);
  one that reaches this module still is refused, with that reason, rather than sent unplayable;
- a sticker must be WebP (Meta refuses any other);
- `location` (`latitude`, `longitude`, `name`, `address`); `contacts` (`name.formatted_name`,
  `phones[{phone, type, wa_id}]`); `reaction` (`message_id`, `emoji`; an empty emoji removes it);
- `template` (`name`, `language.code`, `components[]`: `header`/`body` with their
  `parameters[]`, `button` with `sub_type`, `index` and its parameter; a header's file uploaded
  like a media message's and named by its id; no `components` when nothing is filled in), as
  Meta's messages reference documents it (`facebook/openapi`, "Send Message Template ...");
- `interactive`: reply buttons (`type: button`, `action.buttons[].reply {id, title}`) or a list
  (`type: list`, `action.button` and `action.sections[].rows[] {id, title, description}`), with
  `header: {type: text, text}`, `body: {text}` and `footer: {text}`; reply buttons' file header
  `{type: image|video|document, <type>: {id, filename?}}` (Meta's `HeaderObject`, `facebook/openapi`),
  uploaded like a media message's file;
- a quote: `context: {message_id}`.
"""

from __future__ import annotations

from typing import Any

from switchboard.core.errors import UnsupportedByProvider
from switchboard.providers.base import OutgoingFile, Quote
from switchboard.providers.content import (
    ContactCard,
    Contacts,
    Content,
    Interactive,
    Location,
    Media,
    MediaMessage,
    Reaction,
    Template,
    TemplateComponent,
    TemplateParameter,
    Text,
)
from switchboard.providers.voice import VOICE_MIME

STICKER_MIME = "image/webp"


def check_file(media: Media, file: OutgoingFile) -> None:
    """Raise `UnsupportedByProvider` for a file the Cloud API would not send as `media.kind`."""
    mime = file.mime_type.split(";")[0].strip().lower()
    if media.kind == "voice" and mime != VOICE_MIME:
        raise UnsupportedByProvider(
            f"the Cloud API sends a voice note only as OGG/Opus, not {mime}", code="voice_format_unsupported"
        )
    if media.kind == "sticker" and mime != STICKER_MIME:
        raise UnsupportedByProvider(f"the Cloud API sends a sticker only as WebP, not {mime}")


def message_body(
    phone: str, content: Content, *, quoted: Quote | None = None, media_id: str | None = None
) -> dict[str, Any]:
    """The `/messages` body that sends `content` to `phone` (a media message: its uploaded `media_id`)."""
    body: dict[str, Any] = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": phone}
    structured = _structured(content, media_id)
    if structured is not None:
        body.update(structured)
        return _quoting(body, quoted)
    match content:
        case Reaction(target_id=target_id, emoji=emoji):
            body.update({"type": "reaction", "reaction": {"message_id": target_id, "emoji": emoji}})
            return body
        case Text(body=text):
            body.update({"type": "text", "text": {"body": text, "preview_url": False}})
        case MediaMessage(media=media):
            if media_id is None:
                raise UnsupportedByProvider("a media message needs its uploaded media id")
            kind = "audio" if media.kind == "voice" else media.kind
            part: dict[str, Any] = {"id": media_id}
            if media.caption and kind in ("image", "video", "document"):
                part["caption"] = media.caption
            if kind == "document" and media.file_name:
                part["filename"] = media.file_name
            body.update({"type": kind, kind: part})
        case Location(latitude=latitude, longitude=longitude, name=name, address=address):
            location: dict[str, Any] = {"latitude": latitude, "longitude": longitude}
            if name:
                location["name"] = name
            if address:
                location["address"] = address
            body.update({"type": "location", "location": location})
        case Contacts(cards=cards):
            body.update({"type": "contacts", "contacts": [_contact(card) for card in cards]})
        case _:
            raise UnsupportedByProvider(f"the Cloud API cannot send a {content.type}")
    return _quoting(body, quoted)


def _structured(content: Content, media_id: str | None) -> dict[str, Any] | None:
    """A template's or an interactive message's fields of the body; None for other contents."""
    if isinstance(content, Template):
        return {"type": "template", "template": template_object(content, media_id)}
    if isinstance(content, Interactive):
        return {"type": "interactive", "interactive": interactive_object(content, media_id)}
    return None


def _quoting(body: dict[str, Any], quoted: Quote | None) -> dict[str, Any]:
    if quoted is not None:
        body["context"] = {"message_id": quoted.id}
    return body


def template_object(template: Template, media_id: str | None = None) -> dict[str, Any]:
    """The `template` object of a send: its header's file by `media_id` (uploaded first)."""
    if template.header_media() is not None and media_id is None:
        raise UnsupportedByProvider("a template with a file header needs its uploaded media id")
    obj: dict[str, Any] = {"name": template.name, "language": {"code": template.language}}
    components = [_component(component, media_id) for component in template.components if component.parameters]
    if components:
        obj["components"] = components
    return obj


def _component(component: TemplateComponent, media_id: str | None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": component.type}
    if component.type == "button":
        part["sub_type"] = component.sub_type
        part["index"] = str(component.index)
    part["parameters"] = [_parameter(parameter, media_id) for parameter in component.parameters]
    return part


def _parameter(parameter: TemplateParameter, media_id: str | None) -> dict[str, Any]:
    kind = parameter.type
    if kind == "text":
        value: dict[str, Any] = {"type": "text", "text": parameter.text}
        if parameter.name is not None:
            value["parameter_name"] = parameter.name
        return value
    if kind == "payload":
        return {"type": "payload", "payload": parameter.payload}
    if kind == "coupon_code":
        return {"type": "coupon_code", "coupon_code": parameter.coupon_code}
    media: dict[str, Any] = {"id": media_id}
    if kind == "document" and parameter.media is not None and parameter.media.file_name:
        media["filename"] = parameter.media.file_name
    return {"type": kind, kind: media}


def interactive_object(content: Interactive, media_id: str | None = None) -> dict[str, Any]:
    """The `interactive` object of reply buttons or a list: a file header by its uploaded `media_id`."""
    obj: dict[str, Any] = {"type": "button" if content.kind == "buttons" else "list"}
    if (media := content.header_media) is not None:
        if media_id is None:
            raise UnsupportedByProvider("an interactive message with a file header needs its uploaded media id")
        if media.kind not in ("image", "video", "document"):
            raise UnsupportedByProvider(f"an interactive message's header cannot be a {media.kind}")
        part: dict[str, Any] = {"id": media_id}
        if media.kind == "document" and media.file_name:
            part["filename"] = media.file_name
        obj["header"] = {"type": media.kind, media.kind: part}
    elif content.header:
        obj["header"] = {"type": "text", "text": content.header}
    obj["body"] = {"text": content.body}
    if content.footer:
        obj["footer"] = {"text": content.footer}
    if content.kind == "buttons":
        obj["action"] = {
            "buttons": [{"type": "reply", "reply": {"id": b.id, "title": b.title}} for b in content.buttons]
        }
    else:
        sections = []
        for section in content.sections:
            rows = []
            for row in section.rows:
                item = {"id": row.id, "title": row.title}
                if row.description:
                    item["description"] = row.description
                rows.append(item)
            sections.append({"title": section.title, "rows": rows} if section.title else {"rows": rows})
        obj["action"] = {"button": content.button, "sections": sections}
    return obj


def _contact(card: ContactCard) -> dict[str, Any]:
    digits = ["".join(ch for ch in phone if ch.isdigit()) for phone in card.phones]
    name = card.name or (f"+{digits[0]}" if digits else "contact")
    return {
        "name": {"formatted_name": name, "first_name": name},
        "phones": [{"phone": f"+{d}", "type": "CELL", "wa_id": d} for d in digits],
    }


def upload_form(file: OutgoingFile) -> dict[str, tuple[str | None, bytes | str, str | None]]:
    """The multipart fields of `POST /{phone-number-id}/media`, as pywa's `upload_media` sends them."""
    return {
        "file": (file.file_name or "file", file.data, file.mime_type),
        "messaging_product": (None, "whatsapp", None),
        "type": (None, file.mime_type, None),
    }

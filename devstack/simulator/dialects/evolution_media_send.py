"""Evolution API v2's media, location, contact and reaction routes (EvolutionAPI/evolution-api
`sendMessage.router.ts` and its schemas in `message.schema.ts`), and the deletion of a sent
message for everyone (`chat.router.ts`, `deleteMessageSchema`), recorded as `media_record` says.
`media`, `audio` and `sticker` are taken as base64 (Evolution also fetches a URL; switchboard
never sends one)."""

from __future__ import annotations

import base64
import binascii
import json
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import payloads, wire
from devstack.simulator.dialects import media_record
from devstack.simulator.responses import raw_answer

if TYPE_CHECKING:
    from collections.abc import Iterable

    from devstack.simulator.dialects.evolution import EvolutionServer

ACTIONS = (
    "sendMedia",
    "sendWhatsAppAudio",
    "sendSticker",
    "sendLocation",
    "sendContact",
    "sendReaction",
    "sendList",
)
# What each action's schema requires.
REQUIRED = {
    "sendMedia": ("number", "mediatype"),
    "sendWhatsAppAudio": ("number",),
    "sendSticker": ("number",),
    "sendLocation": ("number", "latitude", "longitude", "name", "address"),
    "sendContact": ("number", "contact"),
    "sendReaction": ("key", "reaction"),
    "sendList": ("number", "title", "footerText", "buttonText", "sections"),
}


def _file(value: Any) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise payloads.evolution_refused(400, ["Owned media must be a url or base64"]) from None


def _quoted(payload: dict[str, Any]) -> str | None:
    key = (payload.get("quoted") or {}).get("key") or {}
    return str(key["id"]) if key.get("id") else None


def _list(payload: dict[str, Any]) -> dict[str, Any]:
    """`listMessageSchema`: each section's `title` and each row's `title` and `rowId` required and
    not empty (`description` not empty when given)."""
    sections = payload["sections"]
    if not isinstance(sections, list) or not sections:
        raise payloads.evolution_refused(400, [["instance.sections does not meet minimum length of 1"]])
    for section in sections:
        if not isinstance(section, dict) or not section.get("title") or not section.get("rows"):
            raise payloads.evolution_refused(400, [['instance.sections[0] requires property "title"']])
        for row in section["rows"]:
            if (
                not isinstance(row, dict)
                or not row.get("title")
                or not row.get("rowId")
                or row.get("description") == ""
            ):
                raise payloads.evolution_refused(400, [['instance.sections[0].rows[0] requires property "rowId"']])
    return {
        "title": payload["title"],
        "description": payload.get("description"),
        "footerText": payload["footerText"],
        "buttonText": payload["buttonText"],
        "sections": sections,
    }


def _content(action: str, payload: dict[str, Any]) -> tuple[str, str]:
    """(the recipient's digits, the record of what the action received)."""
    number = str(payload.get("number") or "")
    quoted = _quoted(payload)
    if action == "sendMedia":
        data = _file(payload.get("media"))
        fields = media_record.file_fields(data, payload.get("mimetype"))
        return number, media_record.record(
            str(payload["mediatype"]),
            caption=payload.get("caption"),
            fileName=payload.get("fileName"),
            quoted=quoted,
            **fields,
        )
    if action in ("sendWhatsAppAudio", "sendSticker"):
        field, kind = ("audio", "voice") if action == "sendWhatsAppAudio" else ("sticker", "sticker")
        data = _file(payload.get(field))
        return number, media_record.record(kind, quoted=quoted, **media_record.file_fields(data, None))
    if action == "sendLocation":
        return number, media_record.record(
            "location",
            latitude=payload["latitude"],
            longitude=payload["longitude"],
            name=payload["name"] or None,
            address=payload["address"] or None,
            quoted=quoted,
        )
    if action == "sendContact":
        return number, media_record.record("contacts", contacts=payload["contact"], quoted=quoted)
    if action == "sendList":
        return number, media_record.record("list", **_list(payload), quoted=quoted)
    key = payload["key"]
    jid = str(key.get("remoteJid") or "")
    return jid.split("@", maxsplit=1)[0], media_record.record(
        "reaction", messageId=key.get("id"), fromMe=bool(key.get("fromMe")), emoji=payload["reaction"]
    )


def _validated(raw: bytes, required: Iterable[str]) -> dict[str, Any]:
    """The body as Evolution's JSON schema validator takes it: an object with the `required`
    properties, or a 400 in its words."""
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        raise payloads.evolution_refused(400, [["instance is not of a type(s) object"]])
    for name in required:
        if name not in payload:
            raise payloads.evolution_refused(400, [[f'instance requires property "{name}"']])
    return payload


def send(server: EvolutionServer, request: Request, instance: str, action: str) -> Response:
    raw, apikey, idempotency_key = (
        request.get_data(),
        request.headers.get("apikey"),
        request.headers.get("Idempotency-Key"),
    )
    with server._state.locked() as records:
        found = server._instance(records, instance, apikey)
        payload = _validated(raw, REQUIRED[action])
        number, body = _content(action, payload)
        if not found.connected:
            raise payloads.evolution_refused(500, "Connection Closed")
        message = records.record_send(found, number, body, wire.whatsapp_message_id(), idempotency_key)
        data = payloads.evolution_sent(message.id, number, "", time.time(), found.uuid)
        data["message"] = json.loads(body)
        data["messageType"] = "listMessage" if action == "sendList" else json.loads(body)["type"]
    return raw_answer(wire.node_json(data), "application/json; charset=utf-8", 201)


def delete_for_everyone(server: EvolutionServer, request: Request, instance: str) -> Response:
    """`DELETE /chat/deleteMessageForEveryone/{instance}` `{id, fromMe, remoteJid, participant?}`:
    Baileys sends `{delete: key}`, a protocol message of type REVOKE, answered 201 as sent."""
    raw, apikey = request.get_data(), request.headers.get("apikey")
    with server._state.locked() as records:
        found = server._instance(records, instance, apikey)
        payload = _validated(raw, ("id", "fromMe", "remoteJid"))
        if not found.connected:
            raise payloads.evolution_refused(500, "Connection Closed")
        number = str(payload["remoteJid"]).split("@", maxsplit=1)[0]
        body = media_record.record("revoke", messageId=str(payload["id"]), fromMe=bool(payload["fromMe"]))
        message = records.record_send(found, number, body, wire.whatsapp_message_id(), None)
        data = payloads.evolution_sent(message.id, number, "", time.time(), found.uuid)
        key = {"remoteJid": payload["remoteJid"], "fromMe": payload["fromMe"], "id": payload["id"]}
        data["message"] = {"protocolMessage": {"key": key, "type": "REVOKE"}}
        data["messageType"] = "protocolMessage"
    return raw_answer(wire.node_json(data), "application/json; charset=utf-8", 201)


def rules(server: EvolutionServer, prefix: str) -> list[Rule]:
    return [
        *(
            Rule(
                f"{prefix}/message/{action}/<instance>", methods=["POST"], endpoint=partial(send, server, action=action)
            )
            for action in ACTIONS
        ),
        Rule(
            f"{prefix}/chat/deleteMessageForEveryone/<instance>",
            methods=["DELETE"],
            endpoint=partial(delete_for_everyone, server),
        ),
    ]

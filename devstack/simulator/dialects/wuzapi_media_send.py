"""wuzapi's media, location, contact and reaction routes (asternic/wuzapi `handlers.go`:
`SendImage`, `SendAudio`, `SendDocument`, `SendVideo`, `SendSticker`, `SendLocation`,
`SendContact`, `React`, `DeleteMessage`), with their checks in their order, recorded as `media_record` says.
The calls-capable server takes the same routes (`flavour`)."""

from __future__ import annotations

import json
import time
from functools import partial
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import payloads, wire
from devstack.simulator.dialects import media_record
from devstack.simulator.dialects.wuzapi import NOT_CONNECTED_TEXT, WUZAPI_JSON, user
from devstack.simulator.model import Instance
from devstack.simulator.responses import raw_answer
from devstack.simulator.state import Records, SimulatorState

# route -> the body's file field, and the data URL prefix the handler checks
MEDIA = {
    "image": ("Image", "data:image"),
    "audio": ("Audio", "data:audio/"),
    "document": ("Document", "data:"),
    "video": ("Video", "data:"),
    "sticker": ("Sticker", "data:"),
}


def _payload(raw: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        raise payloads.wuzapi_refused(400, "could not decode Payload")
    return payload


def _phone(payload: dict[str, Any]) -> str:
    """The chat's `Phone`, digits as given ("" when absent)."""
    return str(payload.get("Phone") or "").removeprefix("+")


def _with_session(records: Records, request: Request, flavour: str) -> Instance:
    """The user the request's token names, with a client running (500 `no session` otherwise)."""
    instance = user(records, request, flavour)
    if not instance.session:
        raise payloads.wuzapi_refused(500, "no session")
    return instance


def _quoted(payload: dict[str, Any]) -> str | None:
    context = payload.get("ContextInfo") or {}
    stanza, participant = context.get("StanzaId") or context.get("StanzaID"), context.get("Participant")
    if (stanza is None) != (participant is None):
        raise payloads.wuzapi_refused(
            400, "missing Participant in ContextInfo" if stanza else "missing StanzaID in ContextInfo"
        )
    return str(stanza) if stanza else None


def _content(route: str, payload: dict[str, Any]) -> str:
    """The record of what the route received; raises the handler's 400s."""
    if route in MEDIA:
        field, prefix = MEDIA[route]
        value = payload.get(field)
        if not value:
            raise payloads.wuzapi_refused(400, f"missing {field} in Payload")
        if route == "document" and not payload.get("FileName"):
            raise payloads.wuzapi_refused(400, "missing FileName in Payload")
        if not isinstance(value, str) or not value.startswith(prefix):
            raise payloads.wuzapi_refused(400, f'{field.lower()} data should start with "{prefix}"')
        try:
            data, mime = media_record.from_data_url(value)
        except ValueError:
            raise payloads.wuzapi_refused(400, "could not decode base64 encoded data from payload") from None
        kind = ("voice" if payload.get("ptt", True) else "audio") if route == "audio" else route
        fields = media_record.file_fields(data, payload.get("MimeType") or payload.get("mimetype") or mime)
        return media_record.record(
            kind, caption=payload.get("Caption"), fileName=payload.get("FileName"), quoted=_quoted(payload), **fields
        )
    if route == "location":
        for name in ("Latitude", "Longitude"):
            if not payload.get(name):
                raise payloads.wuzapi_refused(400, f"missing {name} in Payload")
        return media_record.record(
            "location",
            latitude=payload["Latitude"],
            longitude=payload["Longitude"],
            name=payload.get("Name"),
            quoted=_quoted(payload),
        )
    for name in ("Name", "Vcard"):
        if not payload.get(name):
            raise payloads.wuzapi_refused(400, f"missing {name} in Payload")
    return media_record.record("contacts", name=payload["Name"], vcard=payload["Vcard"], quoted=_quoted(payload))


def send(state: SimulatorState, request: Request, flavour: str, route: str) -> Response:
    raw, idempotency_key = request.get_data(), request.headers.get("Idempotency-Key")
    with state.locked() as records:
        instance = _with_session(records, request, flavour)
        payload = _payload(raw)
        phone = _phone(payload)
        if not phone:
            raise payloads.wuzapi_refused(400, "missing Phone in Payload")
        body = _content(route, payload)
        if not instance.connected:
            raise payloads.wuzapi_refused(500, NOT_CONNECTED_TEXT)
        message_id = str(payload.get("Id") or wire.whatsapp_message_id())
        message = records.record_send(instance, phone, body, message_id, idempotency_key)
        data = {"Details": "Sent", "Id": message.id, "Timestamp": int(time.time())}
    return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)


def react(state: SimulatorState, request: Request, flavour: str) -> Response:
    raw, idempotency_key = request.get_data(), request.headers.get("Idempotency-Key")
    with state.locked() as records:
        instance = user(records, request, flavour)
        payload = _payload(raw)
        phone = _phone(payload)
        for name, value in (("Phone", phone), ("Body", payload.get("Body")), ("Id", payload.get("Id"))):
            if not value:
                raise payloads.wuzapi_refused(400, f"missing {name} in Payload")
        if not instance.connected:
            raise payloads.wuzapi_refused(500, NOT_CONNECTED_TEXT)
        target = str(payload["Id"])
        emoji = "" if payload["Body"] == "remove" else str(payload["Body"])
        body = media_record.record(
            "reaction", messageId=target.removeprefix("me:"), fromMe=target.startswith("me:"), emoji=emoji
        )
        message = records.record_send(instance, phone, body, wire.whatsapp_message_id(), idempotency_key)
        data = {"Details": "Sent", "Id": target.removeprefix("me:"), "Timestamp": int(time.time())}
        del message
    return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)


def delete(state: SimulatorState, request: Request, flavour: str) -> Response:
    """`POST /chat/delete` `{Phone, Id}` (handlers.go `DeleteMessage`): a revoke of our own message
    `Id` in the chat with `Phone`, recorded as a `revoke` naming it; answers the deleted `Id`."""
    raw = request.get_data()
    with state.locked() as records:
        instance = _with_session(records, request, flavour)
        payload = _payload(raw)
        phone = _phone(payload)
        for name, value in (("Phone", phone), ("Id", payload.get("Id"))):
            if not value:
                raise payloads.wuzapi_refused(400, f"missing {name} in Payload")
        if not instance.connected:
            raise payloads.wuzapi_refused(500, NOT_CONNECTED_TEXT)
        target = str(payload["Id"])
        body = media_record.record("revoke", messageId=target)
        records.record_send(instance, phone, body, wire.whatsapp_message_id(), None)
        data = {"Details": "Deleted", "Id": target, "Timestamp": int(time.time())}
    return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)


def rules(state: SimulatorState, prefix: str, flavour: str) -> list[Rule]:
    routes = [*MEDIA, "location", "contact"]
    found = [
        Rule(
            f"{prefix}/chat/send/{route}",
            methods=["POST"],
            endpoint=partial(send, state, flavour=flavour, route=route if route != "contact" else "contacts"),
        )
        for route in routes
    ]
    return [
        *found,
        Rule(f"{prefix}/chat/react", methods=["POST"], endpoint=partial(react, state, flavour=flavour)),
        Rule(f"{prefix}/chat/delete", methods=["POST"], endpoint=partial(delete, state, flavour=flavour)),
    ]

"""The Cloud API's media upload (`POST /{version}/{phone-number-id}/media`, multipart `file`,
`type`, `messaging_product`) and its messages that are not texts (image, video, audio, document,
sticker by uploaded `id`; location; contacts; reaction; `context.message_id`), recorded as
`media_record` says. An uploaded id is kept with the number that uploaded it: another number's
id is refused, as Meta does."""

from __future__ import annotations

import json
import secrets
from functools import partial
from typing import TYPE_CHECKING, Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import payloads, wire
from devstack.simulator.dialects import media_record, meta_templates
from devstack.simulator.responses import raw_answer

if TYPE_CHECKING:
    from devstack.simulator.dialects.meta import MetaServer


META_JSON = "application/json; charset=UTF-8"
MEDIA_TYPES = ("image", "video", "audio", "document", "sticker")
# media id -> (the phone number id that uploaded it, its bytes, its type)
_UPLOADS: dict[str, tuple[str, bytes, str]] = {}


def is_content(raw: bytes) -> bool:
    """Whether a `/messages` body is one of the types handled here (a text goes its own way)."""
    try:
        payload = json.loads(raw)
    except ValueError:
        return False
    return isinstance(payload, dict) and payload.get("type") not in (None, "text")


def upload(server: MetaServer, request: Request, version: str, phone_number_id: str) -> Response:
    with server._state.locked() as records:
        server._owner(records, request, version, phone_number_id, "post")
        file = request.files.get("file")
        mime = request.form.get("type")
        if request.form.get("messaging_product") != "whatsapp" or file is None or not mime:
            raise payloads.meta_refused(400, 100, "(#100) The parameter file is required.")
        media_id = str(secrets.randbelow(10**16))
        _UPLOADS[media_id] = (phone_number_id, file.read(), mime)
    return raw_answer(json.dumps({"id": media_id}).encode(), META_JSON)


def quoted_id(payload: dict[str, Any]) -> str | None:
    return (payload.get("context") or {}).get("message_id")


def _record(phone_number_id: str, payload: dict[str, Any]) -> str:
    kind = payload["type"]
    quoted = (payload.get("context") or {}).get("message_id")
    if kind in MEDIA_TYPES:
        part = payload.get(kind) or {}
        known = _UPLOADS.get(str(part.get("id")))
        if known is None or known[0] != phone_number_id:
            raise payloads.meta_refused(400, 131053, "Media upload error")
        _, data, mime = known
        return media_record.record(
            kind,
            caption=part.get("caption"),
            fileName=part.get("filename"),
            quoted=quoted,
            mediaId=part["id"],
            **media_record.file_fields(data, mime),
        )
    if kind == "location":
        return media_record.record("location", quoted=quoted, **payload["location"])
    if kind == "contacts":
        return media_record.record("contacts", contacts=payload["contacts"], quoted=quoted)
    if kind == "reaction":
        reaction = payload["reaction"]
        return media_record.record("reaction", messageId=reaction["message_id"], emoji=reaction.get("emoji", ""))
    if kind == "interactive":
        return media_record.record("interactive", interactive=payload.get("interactive"), quoted=quoted)
    raise payloads.meta_refused(400, 100, f"(#100) Param type {kind} is not valid")


def send(server: MetaServer, request: Request, version: str, phone_number_id: str) -> Response:
    raw, idempotency_key = request.get_data(), request.headers.get("Idempotency-Key")
    with server._state.locked() as records:
        instance = server._owner(records, request, version, phone_number_id, "post")
        payload = json.loads(raw)
        to = str(payload.get("to") or "")
        wa_id = "".join(ch for ch in to if ch.isdigit())
        if not wa_id:
            raise payloads.meta_refused(400, 100, "(#100) The parameter to is required.")
        if payload.get("type") == "template":
            # A template is sent whatever the window; its header's file by its uploaded id.
            meta_templates.check_template(records, instance, payload.get("template") or {})
            body = media_record.record("template", template=payload["template"], quoted=quoted_id(payload))
        else:
            body = _record(phone_number_id, payload)
            if not meta_templates.window_open(instance, wa_id):
                data = payloads.meta_sent(to, meta_templates.outside_window(records, instance, wa_id, body))
                return raw_answer(json.dumps(data, separators=(",", ":")).encode(), META_JSON)
        message = records.record_send(instance, wa_id, body, wire.wamid(wa_id), idempotency_key)
        data = payloads.meta_sent(to, message.id)
    return raw_answer(json.dumps(data, separators=(",", ":")).encode(), META_JSON)


def rules(server: MetaServer, prefix: str) -> list[Rule]:
    return [Rule(f"{prefix}/<version>/<phone_number_id>/media", methods=["POST"], endpoint=partial(upload, server))]

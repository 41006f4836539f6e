"""The Meta WhatsApp Cloud API under `/meta`: the Graph API's routes of a phone number, and its webhooks.

Routes carry the Graph API version and the phone number id in the path and authenticate by
`Authorization: Bearer <access token>`; errors are the Graph API's `{"error": {...}}`.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import incoming, payloads, wire
from devstack.simulator.dialects import hook, meta_templates
from devstack.simulator.model import Instance, SentMessage, SimError
from devstack.simulator.responses import Route, raw_answer, refused_answer
from devstack.simulator.schemas import CreateInstanceBody
from devstack.simulator.state import Records, SimulatorState

META_JSON = "application/json; charset=UTF-8"
_META_VERSION = re.compile(payloads.META_API_VERSION_PATTERN)


def fault_answer(status: int, note: str) -> Response:
    """Meta's transient error, whatever the injected failure's note."""
    message = "An unexpected error has occurred. Please retry your request later."
    return refused_answer(payloads.meta_refused(status, 2, message, is_transient=True))


def post(records: Records, instance: Instance, name: str, value: dict[str, Any]) -> str:
    """Every change of the number goes to the app's callback URL: Meta has no event filter per number."""
    assert instance.meta_phone_id is not None
    body = payloads.meta_webhook(instance.waba_id, instance.number, instance.meta_phone_id, value)
    return records.post_to_hook(instance, name, body, "application/json", wanted=True)


class MetaDialect:
    """What the Cloud API posts of a number: `messages` and `statuses` changes."""

    flavour = "meta"
    has_calls = False
    always_connected = True
    lid_chats = False
    send_error_codes = frozenset(payloads.META_SEND_ERRORS)

    def check_new(self, records: Records, body: CreateInstanceBody) -> None:
        if body.meta_phone_id is None:
            raise SimError(400, "meta_phone_id_required", "a Meta number is addressed by its phone number id")
        if any(other.meta_phone_id == body.meta_phone_id for other in records.instances.values()):
            raise SimError(409, "meta_phone_id_in_use")
        if not body.connected:
            raise SimError(400, "always_connected", "a Cloud API number has no session to lose")

    def set_up(self, instance: Instance, body: CreateInstanceBody) -> None:
        instance.hook = hook.new_hook(body, hook.initial_events(body, []))

    def control_view(self, records: Records, instance: Instance) -> dict[str, Any]:
        return {"webhook": hook.hook_view(instance), "metaPhoneId": instance.meta_phone_id, "wabaId": instance.waba_id}

    def set_webhook_secrets(self, instance: Instance, secret: str, previous_secret: str | None) -> None:
        hook.replace_secret(instance, secret, previous_secret)

    def connection_changed(
        self, records: Records, instance: Instance, *, reason: str | None, include_calls_config: bool
    ) -> None:
        """Nothing to post: a Cloud API number has no session (`always_connected`), so its
        connection never changes."""

    def text_arrived(
        self, records: Records, instance: Instance, sender: str, text: str, *, push_name: str | None, addressing: str
    ) -> tuple[str, str]:
        message_id = wire.wamid(sender)
        value = payloads.meta_message(message_id, sender, text, time.time(), push_name=push_name)
        return message_id, post(records, instance, "messages", value)

    def media_arrived(
        self,
        records: Records,
        instance: Instance,
        sender: str,
        caption: str,
        kind: str,
        *,
        options: incoming.ArrivalOptions,
    ) -> tuple[str, str]:
        message_id = wire.wamid(sender)
        reacted_id = records.last_sent_to(instance, sender) or wire.wamid(sender)
        arrival = incoming.arrival(kind, message_id, sender, caption, reacted_id=reacted_id, options=options)
        records.keep_file(arrival, self.flavour)
        media_id = incoming.new_media_id()
        if kind in incoming.DOWNLOADABLE:
            records.meta_media[media_id] = (arrival.data, incoming.declared_type(kind))
            if options.media_fails:
                records.failing_downloads.add(media_id)
        return message_id, post(records, instance, "messages", incoming.meta_message(arrival, media_id))

    def receipt(self, records: Records, instance: Instance, message: SentMessage, status: str) -> None:
        post(records, instance, "statuses", payloads.meta_status(message.id, message.phone, status, time.time()))

    def window_failure(self, records: Records, instance: Instance, message: SentMessage) -> None:
        """The `failed` status (131047) of a send Meta accepted outside the user's window."""
        post(records, instance, "statuses", meta_templates.reengagement_failure(message.id, message.phone))

    def choice_arrived(
        self, records: Records, instance: Instance, sender: str, *, kind: str, option_id: str, title: str
    ) -> tuple[str, str]:
        """The user taps a reply button or a list row of the last message the number sent them:
        an `interactive` message (`button_reply` / `list_reply`) with the tapped message in `context`."""
        message_id = wire.wamid(sender)
        replied = records.last_sent_to(instance, sender) or wire.wamid(sender)
        reply = "button_reply" if kind == "button" else "list_reply"
        value = payloads.meta_message(message_id, sender, "", time.time())
        value["messages"][0] = {
            "context": {"from": instance.number.lstrip("+"), "id": replied},
            "from": sender,
            "id": message_id,
            "timestamp": str(int(time.time())),
            "type": "interactive",
            "interactive": {"type": reply, reply: {"id": option_id, "title": title}},
        }
        return message_id, post(records, instance, "messages", value)


class MetaServer:
    """The Graph API's routes of a phone number: its node, and its `messages` edge."""

    prefix = "/meta"

    def __init__(self, state: SimulatorState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        from devstack.simulator.dialects import meta_media_send  # noqa: PLC0415 - it imports this module

        prefix = self.prefix
        rules = [
            Rule(f"{prefix}/<version>/<phone_number_id>/messages", methods=["POST"], endpoint=self.send),
            Rule(f"{prefix}/<version>/<waba_id>/message_templates", methods=["GET"], endpoint=self.templates),
            Rule(f"{prefix}/<version>/<phone_number_id>", methods=["GET"], endpoint=self.phone_number),
            *meta_media_send.rules(self, prefix),
            Rule(f"{prefix}/whatsapp_business/attachments/", methods=["GET"], endpoint=self.media_download),
        ]
        return [Route(rule, fault_answer) for rule in rules]

    def not_found(self) -> Response:
        return refused_answer(payloads.meta_refused(400, 2500, "Unknown path components"))

    @staticmethod
    def _owner(records: Records, request: Request, version: str, phone_number_id: str, method: str) -> Instance:
        """The version, then the access token (190), then the phone number id it may use (100/33)."""
        if not _META_VERSION.fullmatch(version):
            raise payloads.meta_refused(400, 2500, f"Unknown path components: /{version}")
        authorization = request.headers.get("Authorization", "")
        bearer = authorization[7:] if authorization[:7].lower() == "bearer " else None
        owner = next(
            (i for i in records.instances.values() if i.flavour == "meta" and bearer and i.token == bearer), None
        )
        if owner is None:
            raise payloads.meta_refused(401, 190, "Invalid OAuth access token - Cannot parse access token")
        if owner.meta_phone_id != phone_number_id:
            raise payloads.meta_refused(
                400,
                100,
                f"Unsupported {method} request. Object with ID '{phone_number_id}' does not exist, "
                "cannot be loaded due to missing permissions, or does not support this operation.",
                kind="GraphMethodException",
                error_subcode=33,
            )
        return owner

    def templates(self, request: Request, version: str, waba_id: str) -> Response:
        """The business account's templates, page by page (`meta_templates`)."""
        if not _META_VERSION.fullmatch(version):
            raise payloads.meta_refused(400, 2500, f"Unknown path components: /{version}")
        with self._state.locked() as records:
            owner = self._bearer_owner(records, request)
            data = meta_templates.page(records, owner, waba_id, dict(request.args))
        return raw_answer(json.dumps(data, separators=(",", ":")).encode(), META_JSON)

    def phone_number(self, request: Request, version: str, phone_number_id: str) -> Response:
        """The phone number node, with the fields asked for; or a media id's node (same path)."""
        with self._state.locked() as records:
            if phone_number_id in records.meta_media or phone_number_id in records.failing_media:
                return self._media_node(records, request, version, phone_number_id)
            instance = self._owner(records, request, version, phone_number_id, "get")
            node = {
                "id": instance.meta_phone_id,
                "display_phone_number": payloads.display_phone_number(instance.number),
                "verified_name": instance.id,
                "quality_rating": instance.quality_rating,
                "status": instance.number_status,
                "code_verification_status": "VERIFIED",
                "name_status": "APPROVED",
                "platform_type": "CLOUD_API",
                "account_mode": "LIVE",
                "throughput": {"level": instance.throughput},
                "whatsapp_business_manager_messaging_limit": instance.messaging_limit,
                "is_official_business_account": False,
            }
        data = payloads.meta_phone_number(node, request.args.get("fields"))
        return raw_answer(json.dumps(data, separators=(",", ":")).encode(), META_JSON)

    @staticmethod
    def _bearer_owner(records: Records, request: Request) -> Instance:
        authorization = request.headers.get("Authorization", "")
        bearer = authorization[7:] if authorization[:7].lower() == "bearer " else None
        owner = next(
            (i for i in records.instances.values() if i.flavour == "meta" and bearer and i.token == bearer), None
        )
        if owner is None:
            raise payloads.meta_refused(401, 190, "Invalid OAuth access token - Cannot parse access token")
        return owner

    def _media_node(self, records: Records, request: Request, version: str, media_id: str) -> Response:
        """`GET /{version}/{media-id}`: the file's short-lived URL (here on the simulator's own
        host, where Meta's is `lookaside.fbsbx.com`), type, sha256 and size. A failing id answers
        as an id Meta no longer knows: 400, code 100, subcode 33."""
        if not _META_VERSION.fullmatch(version):
            raise payloads.meta_refused(400, 2500, f"Unknown path components: /{version}")
        self._bearer_owner(records, request)
        if media_id in records.failing_media:
            raise payloads.meta_refused(
                400,
                100,
                f"Unsupported get request. Object with ID '{media_id}' does not exist, "
                "cannot be loaded due to missing permissions, or does not support this operation.",
                kind="GraphMethodException",
                error_subcode=33,
            )
        data, mime = records.meta_media[media_id]
        url = f"{request.host_url.rstrip('/')}{self.prefix}/whatsapp_business/attachments/?mid={media_id}"
        node = {
            "url": url,
            "mime_type": mime,
            "sha256": hashlib.sha256(data).hexdigest(),
            "file_size": len(data),
            "id": media_id,
            "messaging_product": "whatsapp",
        }
        return raw_answer(json.dumps(node, separators=(",", ":")).encode(), META_JSON)

    def media_download(self, request: Request) -> Response:
        """The file behind a media URL: with the bearer only (Meta refuses it without)."""
        media_id = request.args.get("mid", "")
        with self._state.locked() as records:
            self._bearer_owner(records, request)
            found = records.meta_media.get(media_id)
            if found is None or media_id in records.failing_media or media_id in records.failing_downloads:
                return Response(b"", status=404)
            data, mime = found
        return Response(data, status=200, content_type=mime.split(";")[0])

    def send(self, request: Request, version: str, phone_number_id: str) -> Response:
        from devstack.simulator.dialects import meta_media_send  # noqa: PLC0415 - it imports this module

        if meta_media_send.is_content(request.get_data()):
            return meta_media_send.send(self, request, version, phone_number_id)
        raw, idempotency_key = request.get_data(), request.headers.get("Idempotency-Key")
        with self._state.locked() as records:
            instance = self._owner(records, request, version, phone_number_id, "post")
            to, text = payloads.meta_send_body(raw)
            wa_id = "".join(ch for ch in to if ch.isdigit())
            if (code := instance.take_send_error(wa_id)) is not None:
                raise payloads.meta_send_error(code)
            if not meta_templates.window_open(instance, wa_id):
                data = payloads.meta_sent(to, meta_templates.outside_window(records, instance, wa_id, text))
                return raw_answer(json.dumps(data, separators=(",", ":")).encode(), META_JSON)
            message = records.record_send(instance, wa_id, text, wire.wamid(wa_id), idempotency_key)
            data = payloads.meta_sent(to, message.id)
        return raw_answer(json.dumps(data, separators=(",", ":")).encode(), META_JSON)

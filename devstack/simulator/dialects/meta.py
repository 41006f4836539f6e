"""The Meta WhatsApp Cloud API under `/meta`: the Graph API's routes of a phone number, and its webhooks.

Routes carry the Graph API version and the phone number id in the path and authenticate by
`Authorization: Bearer <access token>`; errors are the Graph API's `{"error": {...}}`.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import incoming, payloads, wire
from devstack.simulator.dialects import hook
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
        self, records: Records, instance: Instance, sender: str, caption: str, kind: str
    ) -> tuple[str, str]:
        message_id = wire.wamid(sender)
        reacted_id = records.last_sent_to(instance, sender) or wire.wamid(sender)
        arrival = incoming.Arrival(kind, message_id, sender, caption, reacted_id, time.time())
        return message_id, post(records, instance, "messages", incoming.meta_message(arrival))

    def receipt(self, records: Records, instance: Instance, message: SentMessage, status: str) -> None:
        post(records, instance, "statuses", payloads.meta_status(message.id, message.phone, status, time.time()))


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
            Rule(f"{prefix}/<version>/<phone_number_id>", methods=["GET"], endpoint=self.phone_number),
            *meta_media_send.rules(self, prefix),
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

    def phone_number(self, request: Request, version: str, phone_number_id: str) -> Response:
        """The phone number node, with the fields asked for."""
        with self._state.locked() as records:
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
            message = records.record_send(instance, wa_id, text, wire.wamid(wa_id), idempotency_key)
            data = payloads.meta_sent(to, message.id)
        return raw_answer(json.dumps(data, separators=(",", ":")).encode(), META_JSON)

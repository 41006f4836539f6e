"""Evolution API v2 (2.3.x, Baileys) under `/evolution`: its routes, and its webhooks.

Routes name the instance in the path and authenticate by `apikey` (the instance's, or the
server's global key); answers and errors are Node's `JSON.stringify` of Evolution's shapes.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import incoming, pairing, payloads, wire
from devstack.simulator.dialects import hook
from devstack.simulator.model import Instance, SentMessage, SimError
from devstack.simulator.responses import Route, raw_answer, refused_answer
from devstack.simulator.schemas import CreateInstanceBody
from devstack.simulator.state import Records, SimulatorState

EVOLUTION_JSON = "application/json; charset=utf-8"


def fault_answer(status: int, note: str) -> Response:
    return refused_answer(payloads.evolution_refused(status, note))


def post(records: Records, instance: Instance, event: str, data: dict[str, Any]) -> str:
    """Posted when the instance's webhook lists the event (`MESSAGES_UPSERT`), or lists none."""
    body = payloads.evolution_webhook(
        event, instance.id, data, url=instance.hook.url, own_number=instance.number, seconds=time.time()
    )
    configured = instance.hook.events
    wanted = not configured or event.replace(".", "_").upper() in configured
    return records.post_to_hook(instance, event, body, "application/json", wanted=wanted)


def remember_contact(records: Records, instance: Instance, key: dict[str, Any], push_name: str | None) -> None:
    """What Evolution stores on an incoming message: the contact's pushName by `remoteJid`, and in
    its `IsOnWhatsapp` cache (one for the whole server) a phone number's LID, learned only from
    a phone-addressed message whose `remoteJidAlt` is that LID (`saveOnWhatsappCache` keeps the
    alternate address only when it contains `@lid`)."""
    if push_name:
        instance.push_names[key["remoteJid"]] = push_name
    alternate = key.get("remoteJidAlt")
    if key["remoteJid"].endswith("@s.whatsapp.net") and isinstance(alternate, str) and "@lid" in alternate:
        records.lid_numbers[alternate] = key["remoteJid"]


class EvolutionDialect:
    """What an Evolution server posts: `connection.update`, `messages.upsert`, `messages.update`."""

    flavour = "evolution"
    has_calls = False
    always_connected = False
    lid_chats = True
    send_error_codes: frozenset[str] = frozenset()

    def check_new(self, records: Records, body: CreateInstanceBody) -> None:
        """Any instance can be created: without a `jwt_key` its webhooks carry no `Authorization`."""

    def set_up(self, instance: Instance, body: CreateInstanceBody) -> None:
        instance.hook = hook.new_hook(body, hook.initial_events(body, payloads.EVOLUTION_DEFAULT_EVENTS))

    def control_view(self, records: Records, instance: Instance) -> dict[str, Any]:
        return {"webhook": hook.hook_view(instance)}

    def set_webhook_secrets(self, instance: Instance, secret: str, previous_secret: str | None) -> None:
        hook.replace_secret(instance, secret, previous_secret)

    def connection_changed(
        self, records: Records, instance: Instance, *, reason: str | None, include_calls_config: bool
    ) -> None:
        """Open posts `open`; a logout posts `close` (401); a reconnectable drop posts nothing."""
        if instance.connected:
            data: dict[str, Any] = {
                "instance": instance.id,
                "wuid": wire.jid(instance.number),
                "profileName": instance.id,
                "profilePictureUrl": None,
                "state": "open",
                "statusReason": 200,
            }
        elif reason == "disconnected":
            return
        else:
            data = {"instance": instance.id, "state": "close", "statusReason": 401}
        post(records, instance, "connection.update", data)

    def advance_pairing(self, records: Records, instance: Instance) -> None:
        """Baileys draws a code every 45 s, each posted as `qrcode.updated`; at the limit Evolution
        posts the limit's `qrcode.updated` and `connection.update` `refused`, and the session ends."""

        def drawn(count: int) -> None:
            code = {"instance": instance.id, "pairingCode": None, "code": pairing.code_text(instance)}
            post(records, instance, "qrcode.updated", {"qrcode": code | {"base64": pairing.code_image(instance)}})

        def ran_out() -> None:
            post(
                records,
                instance,
                "qrcode.updated",
                {"message": "QR code limit reached, please login again", "statusCode": 500},
            )
            refused = {"instance": instance.id, "state": "refused", "statusReason": 428, "wuid": None}
            post(records, instance, "connection.update", refused | {"profileName": None, "profilePictureUrl": None})
            instance.session = False

        pairing.advance(instance, pairing.EVOLUTION, drawn=drawn, ran_out=ran_out)

    def expire_code(self, instance: Instance) -> None:
        pairing.expire_current(instance, pairing.EVOLUTION)

    def text_arrived(
        self, records: Records, instance: Instance, sender: str, text: str, *, push_name: str | None, addressing: str
    ) -> tuple[str, str]:
        message_id = wire.phone_message_id()
        data = payloads.evolution_upsert(
            message_id, sender, text, time.time(), instance.uuid, push_name=push_name, addressing=addressing
        )
        remember_contact(records, instance, data["key"], push_name)
        return message_id, post(records, instance, "messages.upsert", data)

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
        message_id = wire.phone_message_id()
        reacted_id = records.last_sent_to(instance, sender) or wire.whatsapp_message_id()
        arrival = incoming.arrival(kind, message_id, sender, caption, reacted_id=reacted_id, options=options)
        records.keep_file(arrival, self.flavour, owner=instance.uuid)
        if kind in incoming.DOWNLOADABLE:
            records.message_media[message_id] = (arrival.data, incoming.declared_type(kind), kind)
        return message_id, post(records, instance, "messages.upsert", incoming.evolution_upsert(arrival, instance.uuid))

    def receipt(self, records: Records, instance: Instance, message: SentMessage, status: str) -> None:
        data = payloads.evolution_update(message.id, message.phone, status, instance.uuid)
        post(records, instance, "messages.update", data)

    def choice_arrived(
        self, records: Records, instance: Instance, sender: str, *, kind: str, option_id: str, title: str
    ) -> tuple[str, str]:
        """The user taps a row of the list the instance sent them: Baileys' `listResponseMessage`
        (`singleSelectReply.selectedRowId`, the row's title, the list's id as `stanzaId`). Only a
        list: Evolution's reply buttons are sent as a text menu."""
        if kind != "list":
            raise SimError(400, "not_native", "Evolution's buttons do not reach the user: they answer by number")
        message_id = wire.phone_message_id()
        replied = records.last_sent_to(instance, sender) or wire.whatsapp_message_id()
        data = payloads.evolution_upsert(message_id, sender, "", time.time(), instance.uuid)
        data["message"] = {
            "listResponseMessage": {"title": title, "listType": 1, "singleSelectReply": {"selectedRowId": option_id}}
        }
        data["messageType"] = "listResponseMessage"
        data["contextInfo"] = {"stanzaId": replied}
        remember_contact(records, instance, data["key"], "Cliente")
        return message_id, post(records, instance, "messages.upsert", data)


class EvolutionServer:
    """Evolution's routes: `sendText`, `connectionState` and `whatsappNumbers`."""

    prefix = "/evolution"

    def __init__(self, state: SimulatorState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        from devstack.simulator.dialects import evolution_media_send  # noqa: PLC0415 - it imports this module

        prefix = self.prefix
        rules = [
            Rule(f"{prefix}/message/sendText/<instance>", methods=["POST"], endpoint=self.send_text),
            Rule(f"{prefix}/instance/connectionState/<instance>", methods=["GET"], endpoint=self.connection_state),
            Rule(f"{prefix}/instance/connect/<instance>", methods=["GET"], endpoint=self.connect),
            Rule(f"{prefix}/instance/logout/<instance>", methods=["DELETE"], endpoint=self.logout),
            Rule(f"{prefix}/chat/whatsappNumbers/<instance>", methods=["POST"], endpoint=self.whatsapp_numbers),
            *evolution_media_send.rules(self, prefix),
            Rule(f"{prefix}/chat/getBase64FromMediaMessage/<instance>", methods=["POST"], endpoint=self.get_base64),
            Rule(f"{incoming.MINIO_PATH}/<bucket>/<path:key>", methods=["GET"], endpoint=self.minio_object),
        ]
        return [Route(rule, fault_answer) for rule in rules]

    def not_found(self) -> Response:
        return refused_answer(payloads.evolution_refused(404, ["Not Found"]))

    def _instance(self, records: Records, name: str, apikey: str | None) -> Instance:
        """The instance guard (404 first, whatever the key), then the key: the instance's or the global one."""
        instance = records.instances.get(name)
        if instance is None or instance.flavour != "evolution":
            raise payloads.evolution_refused(404, [f'The "{name}" instance does not exist'])
        if apikey not in (instance.token, self._state.admin_token):
            raise payloads.evolution_refused(401, "Unauthorized")
        return instance

    def send_text(self, request: Request, instance: str) -> Response:
        raw, apikey, idempotency_key = (
            request.get_data(),
            request.headers.get("apikey"),
            request.headers.get("Idempotency-Key"),
        )
        with self._state.locked() as records:
            found = self._instance(records, instance, apikey)
            number, text = payloads.evolution_send_body(raw)
            if not found.connected:
                raise payloads.evolution_refused(500, "Connection Closed")
            message = records.record_send(found, number, text, wire.whatsapp_message_id(), idempotency_key)
            data = payloads.evolution_sent(message.id, number, text, time.time(), found.uuid)
        return raw_answer(wire.node_json(data), EVOLUTION_JSON, 201)

    def connection_state(self, request: Request, instance: str) -> Response:
        with self._state.locked() as records:
            found = self._instance(records, instance, request.headers.get("apikey"))
            data = {"instance": {"instanceName": found.id, "state": "open" if found.connected else "close"}}
        return raw_answer(wire.node_json(data), EVOLUTION_JSON)

    def connect(self, request: Request, instance: str) -> Response:
        """`GET /instance/connect/{instance}` (`InstanceController.connectToWhatsapp`): `open`
        answers the connection state; `connecting` the current code `{pairingCode, code, base64,
        count}`; `close` starts the session (a linked phone reconnects, else codes are drawn) and
        answers the code as it then is."""
        dialect = EvolutionDialect()
        with self._state.locked() as records:
            found = self._instance(records, instance, request.headers.get("apikey"))
            dialect.advance_pairing(records, found)
            if found.connected:
                data: dict[str, Any] = {"instance": {"instanceName": found.id, "state": "open"}}
                return raw_answer(wire.node_json(data), EVOLUTION_JSON)
            if not pairing.pairing(found):
                found.session = True
                if found.paired:
                    found.connected = True
                    found.updated_ns = time.time_ns()
                    dialect.connection_changed(records, found, reason=None, include_calls_config=True)
                    return raw_answer(wire.node_json({"count": 0}), EVOLUTION_JSON)
                pairing.start(found)
                dialect.advance_pairing(records, found)
            data = {
                "pairingCode": None,
                "code": pairing.code_text(found),
                "base64": pairing.code_image(found),
                "count": found.codes_drawn,
            }
        return raw_answer(wire.node_json(data), EVOLUTION_JSON)

    def logout(self, request: Request, instance: str) -> Response:
        """`DELETE /instance/logout/{instance}`: 400 while `close`; else Baileys logs out and the
        instance posts `connection.update` `close` (401)."""
        with self._state.locked() as records:
            found = self._instance(records, instance, request.headers.get("apikey"))
            EvolutionDialect().advance_pairing(records, found)
            if not found.connected and not pairing.pairing(found):
                raise payloads.evolution_refused(400, [f'The "{found.id}" instance is not connected'])
            found.connected = found.session = found.paired = False
            pairing.stop(found)
            found.updated_ns = time.time_ns()
            EvolutionDialect().connection_changed(records, found, reason="logged_out", include_calls_config=True)
            data = {"status": "SUCCESS", "error": False, "response": {"message": "Instance logged out"}}
        return raw_answer(wire.node_json(data), EVOLUTION_JSON)

    def get_base64(self, request: Request, instance: str) -> Response:
        """`POST /chat/getBase64FromMediaMessage/{instance}` with `{"message": {"key": {"id"}}}`:
        201 `{mediaType, fileName, caption, size, mimetype, base64}` as the Baileys channel answers
        it, or 400 "Message not found" (an unknown id, or one made to fail)."""
        try:
            body = json.loads(request.get_data() or b"{}")
            message_id = str(body["message"]["key"]["id"])
        except (ValueError, KeyError, TypeError):
            raise payloads.evolution_refused(400, ["message.key.id is required"]) from None
        with self._state.locked() as records:
            self._instance(records, instance, request.headers.get("apikey"))
            found = records.message_media.get(message_id)
            if found is None or message_id in records.failing_media:
                raise payloads.evolution_refused(400, "Message not found")
            data, mime, kind = found
        answer = {
            "mediaType": f"{kind}Message",
            "fileName": incoming.DOCUMENT_NAME if kind == "document" else None,
            "caption": None,
            "size": {"fileLength": str(len(data)), "height": 0, "width": 0},
            "mimetype": mime,
            "base64": base64.b64encode(data).decode(),
        }
        return raw_answer(wire.node_json(answer), EVOLUTION_JSON, 201)

    def minio_object(self, request: Request, bucket: str, key: str) -> Response:
        """`GET <S3_ENDPOINT>/<bucket>/<object>?X-Amz-...`: the object Evolution's S3/MinIO storage
        keeps of a customer's file, by the presigned GET its `mediaUrl` is (MinIO answers 403
        `AccessDenied` to a GET without a signature, 404 `NoSuchKey` for an object it does not
        have, or one made to fail)."""
        if "X-Amz-Signature" not in request.args:
            return _s3_error(403, "AccessDenied")
        with self._state.locked() as records:
            found = incoming.served_file(records.url_files, records.failing_media, key)
        if bucket != incoming.MINIO_BUCKET or found is None:
            return _s3_error(404, "NoSuchKey")
        return Response(found[0], status=200, content_type=found[1])

    def whatsapp_numbers(self, request: Request, instance: str) -> Response:
        """`POST /chat/whatsappNumbers/{instance}` as Evolution's `whatsappNumber` answers it."""
        raw = request.get_data()
        with self._state.locked() as records:
            found = self._instance(records, instance, request.headers.get("apikey"))
            answers = []
            for number in payloads.evolution_numbers_body(raw):
                phone_jid = records.lid_numbers.get(number) if "@lid" in number else None
                name = found.push_names.get(phone_jid or (number if "@lid" in number else wire.jid(number)))
                answers.append(payloads.evolution_on_whatsapp(number, phone_jid, name))
        return raw_answer(wire.node_json(answers), EVOLUTION_JSON)


def _s3_error(status: int, code: str) -> Response:
    body = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code></Error>'.encode()
    return Response(body, status=status, content_type="application/xml")

"""wuzapi (asternic/wuzapi 1.0.6, whatsmeow) under `/wuzapi`: its routes, and its webhooks.

Every route authenticates the user by its `token` and answers wuzapi's envelope (`payloads`).
The calls-capable server's messaging routes are these (`send_text`, `session_status_answer`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from functools import partial
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import incoming, pairing, payloads, wire
from devstack.simulator.dialects import hook
from devstack.simulator.model import Instance, SentMessage, SimError
from devstack.simulator.responses import Route, raw_answer, refused_answer
from devstack.simulator.schemas import CreateInstanceBody
from devstack.simulator.state import Records, SimulatorState

WUZAPI_JSON = "application/json"
HMAC_JSON = "application/json; charset=utf-8"
NOT_CONNECTED_TEXT = "error sending message: websocket not connected"
# WhatsApp's reach-out timelock, as whatsmeow's ack error carries it.
SEND_ERRORS = frozenset({"463"})


def fault_answer(status: int, note: str) -> Response:
    return refused_answer(payloads.wuzapi_refused(status, note))


def user(records: Records, request: Request, flavour: str) -> Instance:
    """wuzapi's `authalice`: header `token` (any case), else query `token`."""
    token = request.headers.get("token") or "".join(request.args.getlist("token"))
    instance = records.instance_for_token(token, flavour) if token else None
    if instance is None:
        raise payloads.wuzapi_refused(401, "unauthorized")
    return instance


def send_text(state: SimulatorState, request: Request, flavour: str) -> Response:
    """`POST /chat/send/text` as real wuzapi answers it (the calls server's too).

    An `Id` the recipient already got is the same message on their phone: recorded once,
    counted as a resend, answered 200 again. The `Idempotency-Key` header is only recorded.
    """
    raw, idempotency_key = request.get_data(), request.headers.get("Idempotency-Key")
    with state.locked() as records:
        instance = user(records, request, flavour)
        if not instance.session:
            raise payloads.wuzapi_refused(500, "no session")
        phone, text, message_id = payloads.wuzapi_send_body(raw)
        if not instance.connected:
            raise payloads.wuzapi_refused(500, NOT_CONNECTED_TEXT)
        if (code := instance.take_send_error(phone.removesuffix("@s.whatsapp.net"))) is not None:
            raise payloads.wuzapi_send_error(code)
        message = records.record_send(instance, phone, text, message_id or wire.whatsapp_message_id(), idempotency_key)
        data = {"Details": "Sent", "Id": message.id, "Timestamp": int(time.time())}
    return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)


def session_status_answer(instance: Instance, url: str, events: list[str], *, hmac_configured: bool) -> Response:
    """`GET /session/status` without the token real wuzapi echoes (it must not reach logs)."""
    data = {
        "connected": instance.connected,
        "events": ",".join(events),
        "history": "0",
        "hmac_configured": hmac_configured,
        "id": instance.user_id,
        "jid": f"{instance.number.lstrip('+')}:12@s.whatsapp.net",
        "loggedIn": instance.connected,
        "name": instance.id,
        "proxy_config": {"enabled": False, "proxy_url": ""},
        "proxy_url": "",
        "qrcode": "",
        "s3_config": {
            "access_key": "***",
            "bucket": "",
            "enabled": False,
            "endpoint": "",
            "media_delivery": "base64",
            "path_style": False,
            "public_url": "",
            "region": "",
            "retention_days": 0,
        },
        "webhook": url,
    }
    return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)


def post(records: Records, instance: Instance, postmap: dict[str, Any]) -> str:
    """Posted only when the live subscription lists its type (or `All`); returns the event's id."""
    body, content_type = payloads.wuzapi_webhook(
        postmap, instance_name=instance.id, user_id=instance.user_id, form=instance.webhook_format == "form"
    )
    live = instance.hook.live_events
    wanted = postmap["type"] in live or "All" in live
    return records.post_to_hook(instance, postmap["type"], body, content_type, wanted=wanted)


class WuzapiDialect:
    """What a wuzapi server posts: whatsmeow's events as wuzapi's webhook (JSON or form mode)."""

    flavour = "wuzapi"
    has_calls = False
    always_connected = False
    lid_chats = False
    send_error_codes = SEND_ERRORS

    def check_new(self, records: Records, body: CreateInstanceBody) -> None:
        """Any user can be created: without a webhook URL or key it posts nothing, or unsigned."""

    def set_up(self, instance: Instance, body: CreateInstanceBody) -> None:
        events = payloads.wuzapi_valid_events(hook.initial_events(body, payloads.WUZAPI_DEFAULT_EVENTS))
        instance.hook = hook.new_hook(body, events)

    def control_view(self, records: Records, instance: Instance) -> dict[str, Any]:
        return {"webhook": hook.hook_view(instance, instance.webhook_format), "userId": instance.user_id}

    def set_webhook_secrets(self, instance: Instance, secret: str, previous_secret: str | None) -> None:
        hook.replace_secret(instance, secret, previous_secret)

    def connection_changed(
        self, records: Records, instance: Instance, *, reason: str | None, include_calls_config: bool
    ) -> None:
        if instance.connected:
            post(records, instance, {"event": {}, "type": "Connected"})
        elif reason == "disconnected":
            post(records, instance, {"event": {}, "type": "Disconnected"})
        else:
            post(records, instance, {"event": {"OnConnect": False, "Reason": 401}, "type": "LoggedOut"})

    def advance_pairing(self, records: Records, instance: Instance) -> None:
        """whatsmeow's QR channel: each code drawn is stored and posted as `QR`; after the last one
        wuzapi posts `QRTimeout`, clears the code and drops the client (`no session`)."""

        def drawn(count: int) -> None:
            post(records, instance, {"event": "code", "qrCodeBase64": pairing.code_image(instance), "type": "QR"})

        def ran_out() -> None:
            post(records, instance, {"event": "timeout", "type": "QRTimeout"})
            instance.session = False

        pairing.advance(instance, pairing.WHATSMEOW, drawn=drawn, ran_out=ran_out)

    def expire_code(self, instance: Instance) -> None:
        pairing.expire_current(instance, pairing.WHATSMEOW)

    def text_arrived(
        self, records: Records, instance: Instance, sender: str, text: str, *, push_name: str | None, addressing: str
    ) -> tuple[str, str]:
        message_id = wire.phone_message_id()
        event = payloads.wuzapi_message_event(message_id, sender, text, time.time(), push_name or "")
        return message_id, post(records, instance, {"event": event, "type": "Message"})

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
        records.keep_file(arrival, self.flavour)
        return message_id, post(records, instance, incoming.wuzapi_postmap(arrival, "Cliente"))

    def receipt(self, records: Records, instance: Instance, message: SentMessage, status: str) -> None:
        """`failed` is not a receipt wuzapi ever posts."""
        if status == "failed":
            raise SimError(400, "not_posted_by_wuzapi", "wuzapi posts Delivered and Read receipts only")
        event = payloads.wuzapi_receipt_event(message.phone, [message.id], time.time(), read=status == "read")
        state = "Read" if status == "read" else "Delivered"
        post(records, instance, {"event": event, "state": state, "type": "ReadReceipt"})


class WuzapiServer:
    """wuzapi's routes: sending, the session's status, the webhook and its HMAC key."""

    prefix = "/wuzapi"

    def __init__(self, state: SimulatorState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        from devstack.simulator.dialects.wuzapi_media_send import rules as media_rules  # noqa: PLC0415 - it imports this module

        prefix = self.prefix
        rules = [
            Rule(
                f"{prefix}/chat/send/text", methods=["POST"], endpoint=partial(send_text, self._state, flavour="wuzapi")
            ),
            Rule(f"{prefix}/session/status", methods=["GET"], endpoint=self.session_status),
            Rule(f"{prefix}/session/connect", methods=["POST"], endpoint=self.session_connect),
            Rule(f"{prefix}/session/qr", methods=["GET"], endpoint=self.session_qr),
            Rule(f"{prefix}/session/logout", methods=["POST"], endpoint=self.session_logout),
            Rule(f"{prefix}/webhook", methods=["GET", "POST", "PUT", "DELETE"], endpoint=self.webhook),
            Rule(f"{prefix}/session/hmac/config", methods=["GET", "POST", "DELETE"], endpoint=self.hmac_config),
            *media_rules(self._state, prefix, "wuzapi"),
            Rule(
                f"{prefix}/chat/download<any(image, video, audio, document):kind>",
                methods=["POST"],
                endpoint=self.download,
            ),
            Rule(f"{incoming.S3_PATH}/<bucket>/<path:key>", methods=["GET"], endpoint=self.s3_object),
        ]
        return [Route(rule, fault_answer) for rule in rules]

    def download(self, request: Request, kind: str) -> Response:
        """`POST /chat/download{image,video,audio,document}` (handlers.go `DownloadImage`...): the
        message's media fields (`Url`, `DirectPath`, `MediaKey`, `Mimetype`, `FileEncSHA256`,
        `FileSHA256` base64, `FileLength`) in, `{"Mimetype", "Data": "data:<type>;base64,..."}` out
        in wuzapi's envelope. The file is found by its `FileSHA256` (whatsmeow checks the
        decrypted bytes against it); one the simulator never sent, or one made to fail
        (`/_sim/media/<DirectPath>/fail`), answers 500 as a failed download."""
        try:
            body = json.loads(request.get_data() or b"{}")
            digest = base64.b64decode(str(body.get("FileSHA256") or ""), validate=True)
        except (ValueError, TypeError):
            raise payloads.wuzapi_refused(400, "Could not decode Payload") from None
        with self._state.locked() as records:
            user(records, request, "wuzapi")
            failed = str(body.get("DirectPath") or "") in records.failing_media
            sent = list(records.message_files.values())
            failed |= any(
                hashlib.sha256(data).digest() == digest
                for message_id, data in records.message_files.items()
                if message_id in records.failing_media
            )
        found = None if failed else incoming.file_by_sha256(digest, sent)
        if found is None:
            raise payloads.wuzapi_refused(500, f"Failed to download {kind} failed to download media")
        mime = str(body.get("Mimetype") or incoming.declared_type(found[0]))
        data = {"Mimetype": mime, "Data": f"data:{mime};base64,{base64.b64encode(found[1]).decode()}"}
        return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)

    def s3_object(self, request: Request, bucket: str, key: str) -> Response:
        """`GET <public_url>/<bucket>/<key>`: the user's S3 bucket, where `media_delivery` `s3` or
        `both` put a customer's file (public, as wuzapi's `GetPublicURL` links it); a missing key
        answers S3's 404 `NoSuchKey`."""
        with self._state.locked() as records:
            found = incoming.served_file(records.url_files, records.failing_media, key)
        if bucket != incoming.S3_BUCKET or found is None:
            body = b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code></Error>'
            return Response(body, status=404, content_type="application/xml")
        return Response(found[0], status=200, content_type=found[1])

    def not_found(self) -> Response:
        return raw_answer(b"404 page not found\n", "text/plain; charset=utf-8", 404)

    def session_status(self, request: Request) -> Response:
        with self._state.locked() as records:
            instance = user(records, request, "wuzapi")
            hooked = instance.hook
            return session_status_answer(instance, hooked.url, hooked.events, hmac_configured=hooked.secret is not None)

    def session_connect(self, request: Request) -> Response:
        """`POST /session/connect {Subscribe, Immediate}` (handlers.go `Connect`): 500 `already
        connected` while the client is up; else the client starts with `Subscribe` as the user's
        events (its valid names; none: none), connecting at once when a phone is linked and
        drawing pairing codes when none is. `Immediate: false` holds the real server's answer
        10 s: the simulator answers at once either way."""
        try:
            body = json.loads(request.get_data() or b"")
        except ValueError:
            raise payloads.wuzapi_refused(400, "could not decode Payload") from None
        if not isinstance(body, dict):
            raise payloads.wuzapi_refused(400, "could not decode Payload")
        subscribe = next((value for key, value in body.items() if key.lower() == "subscribe"), None)
        events = payloads.wuzapi_valid_events(subscribe) if isinstance(subscribe, list) else []
        with self._state.locked() as records:
            instance = user(records, request, "wuzapi")
            WuzapiDialect().advance_pairing(records, instance)
            if instance.session and (instance.connected or pairing.pairing(instance)):
                raise payloads.wuzapi_refused(500, "already connected")
            instance.hook.events = list(events)
            instance.hook.live_events = list(events)
            instance.session = True
            if instance.paired:
                instance.connected = True
                instance.updated_ns = time.time_ns()
                WuzapiDialect().connection_changed(records, instance, reason=None, include_calls_config=True)
            else:
                pairing.start(instance)
                WuzapiDialect().advance_pairing(records, instance)
            data = {
                "details": "Connected!",
                "events": ",".join(events),
                "jid": f"{instance.number.lstrip('+')}:12@s.whatsapp.net" if instance.paired else "",
                "webhook": instance.hook.url,
            }
        return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)

    def session_qr(self, request: Request) -> Response:
        """`GET /session/qr` (handlers.go `GetQR`): the code shown now, `""` before the first."""
        with self._state.locked() as records:
            instance = user(records, request, "wuzapi")
            WuzapiDialect().advance_pairing(records, instance)
            if not instance.session:
                raise payloads.wuzapi_refused(500, "no session")
            if not instance.connected and not pairing.pairing(instance):
                raise payloads.wuzapi_refused(500, "not connected")
            if instance.connected:
                raise payloads.wuzapi_refused(500, "already logged in")
            code = pairing.code_image(instance) if instance.codes_drawn else ""
        return raw_answer(payloads.wuzapi_answer({"QRCode": code}), WUZAPI_JSON)

    def session_logout(self, request: Request) -> Response:
        """`POST /session/logout` (handlers.go `Logout`): the phone is unlinked and the client
        dropped; nothing is posted (whatsmeow's `Logout` disconnects before any event)."""
        with self._state.locked() as records:
            instance = user(records, request, "wuzapi")
            WuzapiDialect().advance_pairing(records, instance)
            if not instance.session:
                raise payloads.wuzapi_refused(500, "no session")
            if not instance.connected:
                if pairing.pairing(instance):
                    raise payloads.wuzapi_refused(500, "could not logout as it was not logged in")
                raise payloads.wuzapi_refused(500, "could not disconnect as it was not connected")
            instance.connected = instance.session = instance.paired = False
            pairing.stop(instance)
            instance.updated_ns = time.time_ns()
        return raw_answer(payloads.wuzapi_answer({"Details": "Logged out"}), WUZAPI_JSON)

    def webhook(self, request: Request) -> Response:
        raw = request.get_data()
        with self._state.locked() as records:
            instance = user(records, request, "wuzapi")
            if request.method == "GET":
                data = self._get_webhook(instance)
            elif request.method == "DELETE":
                data = self._delete_webhook(instance)
            elif request.method == "POST":
                data = self._set_webhook(instance, payloads.wuzapi_json_body(raw))
            else:
                data = self._update_webhook(instance, payloads.wuzapi_json_body(raw))
        return raw_answer(payloads.wuzapi_answer(data), WUZAPI_JSON)

    @staticmethod
    def _get_webhook(instance: Instance) -> dict[str, Any]:
        hooked = instance.hook
        return {"webhook": hooked.url, "subscribe": ",".join(hooked.events).split(",")}

    @staticmethod
    def _set_webhook(instance: Instance, payload: dict[str, Any]) -> dict[str, Any]:
        """`POST /webhook {webhookurl, events}`: without `events` only the URL is stored, but the
        live subscription is emptied (the real server's cache), so nothing is posted any more."""
        hooked = instance.hook
        url = payload.get("webhookurl")
        hooked.url = url if isinstance(url, str) else ""
        events = _events_field(payload)
        if events:
            hooked.events = events
        hooked.live_events = events
        return {"webhook": hooked.url}

    @staticmethod
    def _update_webhook(instance: Instance, payload: dict[str, Any]) -> dict[str, Any]:
        """`PUT /webhook {webhook, events, active}`: `active` missing or false clears the URL."""
        hooked = instance.hook
        url = payload.get("webhook")
        active = payload.get("active") is True
        events = _events_field(payload)
        hooked.url = url if active and isinstance(url, str) else ""
        if events:
            hooked.events = events if active else []
        hooked.live_events = events if active else []
        return {"active": active, "events": events or None, "webhook": hooked.url}

    @staticmethod
    def _delete_webhook(instance: Instance) -> dict[str, Any]:
        hooked = instance.hook
        hooked.url, hooked.events, hooked.live_events = "", [], []
        return {"Details": "Webhook and events deleted successfully"}

    def hmac_config(self, request: Request) -> Response:
        """`/session/hmac/config`: GET, POST (a key of 32+ characters), DELETE; the one route family
        answered without the envelope (`respondWithJSON`)."""
        raw = request.get_data()
        with self._state.locked() as records:
            hooked = user(records, request, "wuzapi").hook
            if request.method == "POST":
                key = payloads.wuzapi_json_body(raw).get("hmac_key")
                if not isinstance(key, str):
                    raise payloads.wuzapi_refused(400, "could not decode Payload")
                if len(key) < 32:
                    raise payloads.wuzapi_refused(400, "HMAC key must be at least 32 characters long")
                hooked.secret = key
                data = {"Details": "HMAC configuration saved successfully"}
            elif request.method == "DELETE":
                hooked.secret = None
                data = {"Details": "HMAC configuration deleted successfully"}
            else:
                data = {"hmac_key": "***" if hooked.secret is not None else ""}
        return raw_answer(payloads.wuzapi_raw(data), HMAC_JSON)


def _events_field(payload: dict[str, Any]) -> list[str]:
    events = payload.get("events")
    return payloads.wuzapi_valid_events(events) if isinstance(events, list) else []

"""The calls-capable wuzapi server at the root: our calls routes and their webhooks, and wuzapi's
messaging routes.

Ours: `/v1/capabilities`, `/instance/*`, `/call/*`, call settings and the `/webhook`
subscription, authenticated by `token` (or `admintoken`) with our `{"error", "message"}` errors;
every event is posted as our signed envelope `{EventType, event, eventId, instanceId, seq, data,
instance?}`. Its `/chat/send/text` and `/session/status` answer as real wuzapi does (`wuzapi`).
"""

from __future__ import annotations

import hmac
import json
import time
import uuid
from functools import partial
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import incoming, schemas, wire
from devstack.simulator.dialects import wuzapi, wuzapi_media_send
from devstack.simulator.media import MediaSessions
from devstack.simulator.model import Call, Delivery, Instance, SentMessage, SimError, Subscription, rfc3339_nano
from devstack.simulator.responses import Route, error_answer, json_answer, parse_body
from devstack.simulator.schemas import CreateInstanceBody, SimCapabilities
from devstack.simulator.state import Records, SimulatorState

DEFAULT_EVENTS = {
    "calls": ["call", "call_settings", "connection"],
    "messages": ["message", "receipt", "connection"],
}


def fault_answer(status: int, note: str) -> Response:
    return error_answer(status, "timeout" if status == 504 else "internal", note)


def capabilities_answer(capabilities: SimCapabilities) -> dict[str, Any]:
    """`GET /v1/capabilities`: what the server announces (the control API's patch answers it too)."""
    return {
        "capabilities": {
            "calls": capabilities.calls,
            "calls_per_instance_limit": capabilities.calls_per_instance_limit,
            "calls_settings_webhook": capabilities.calls_settings_webhook,
            "calls_video": capabilities.calls_video,
        },
        "calls_max_concurrent": capabilities.calls_max_concurrent,
        "calls_max_concurrent_range": {"min": schemas.MIN_CALLS, "max": schemas.MAX_CALLS},
    }


def post(
    records: Records,
    instance: Instance,
    name: str,
    data: dict[str, Any],
    instance_summary: dict[str, Any] | None = None,
) -> str:
    """The signed envelope, to the instance's own subscription or the inherited global one when it
    wants the event; returns its eventId."""
    seq = records.next_seq(instance)
    envelope: dict[str, Any] = {
        "EventType": name,
        "event": name,
        "eventId": str(uuid.uuid4()),
        "instanceId": instance.id,
        "seq": seq,
        "data": data,
    }
    if instance_summary is not None:
        envelope["instance"] = instance_summary
    body = json.dumps(envelope, separators=(",", ":")).encode()
    subscription, _ = records.effective_subscription(instance)
    delivery = None
    if subscription is not None and subscription.wants(name):
        delivery = Delivery(envelope["eventId"], instance.id, subscription.url, body, subscription.signing_secrets())
    records.publish(envelope["eventId"], envelope, delivery)
    return str(envelope["eventId"])


class CallsDialect:
    """What the calls server posts: `connection`, `message`, `receipt`, `call` and `call_settings`."""

    flavour = "calls"
    has_calls = True
    always_connected = False
    lid_chats = False
    send_error_codes = wuzapi.SEND_ERRORS

    def check_new(self, records: Records, body: CreateInstanceBody) -> None:
        if body.webhook_url is not None and body.webhook_secret is None:
            raise SimError(400, "secret_required", "a webhook URL needs a secret")

    def set_up(self, instance: Instance, body: CreateInstanceBody) -> None:
        if body.webhook_url is not None and body.webhook_secret is not None:
            events = body.webhook_events if body.webhook_events is not None else DEFAULT_EVENTS[instance.kind]
            instance.subscription = Subscription(body.webhook_url, list(events), {}, True, body.webhook_secret)

    def control_view(self, records: Records, instance: Instance) -> dict[str, Any]:
        subscription, inherited = records.effective_subscription(instance)
        if subscription is None:
            return {"webhook": None}
        webhook = {
            **subscription.public_view(inherited=inherited),
            "hasSecret": bool(subscription.secret),
            "rotating": subscription.previous_secret is not None,
        }
        return {"webhook": webhook}

    def set_webhook_secrets(self, instance: Instance, secret: str, previous_secret: str | None) -> None:
        """Start (or end, with no previous) a rotation on the instance's own subscription."""
        subscription = instance.subscription
        if subscription is None:
            raise SimError(409, "no_own_subscription")
        subscription.secret, subscription.previous_secret = secret, previous_secret

    def connection_changed(
        self, records: Records, instance: Instance, *, reason: str | None, include_calls_config: bool
    ) -> None:
        summary: dict[str, Any] = {"kind": instance.kind}
        if instance.kind == "calls" and include_calls_config:
            summary.update(instance.calls_config())
        data = {
            "connected": instance.connected,
            "number": instance.number,
            "timestamp": rfc3339_nano(instance.updated_ns),
        }
        post(records, instance, "connection", data, instance_summary=summary)

    def text_arrived(
        self, records: Records, instance: Instance, sender: str, text: str, *, push_name: str | None, addressing: str
    ) -> tuple[str, str]:
        message_id = wire.whatsapp_message_id()
        data = {"id": message_id, "from": sender, "text": text, "timestamp": rfc3339_nano(time.time_ns())}
        return message_id, post(records, instance, "message", data)

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
        message_id = wire.whatsapp_message_id()
        reacted_id = records.last_sent_to(instance, sender) or wire.whatsapp_message_id()
        arrival = incoming.arrival(kind, message_id, sender, caption, reacted_id=reacted_id, options=options)
        records.keep_file(arrival, self.flavour)
        data = incoming.envelope_message(arrival, rfc3339_nano(time.time_ns()))
        return message_id, post(records, instance, "message", data)

    def receipt(self, records: Records, instance: Instance, message: SentMessage, status: str) -> None:
        data = {"id": message.id, "status": status, "timestamp": rfc3339_nano(time.time_ns())}
        post(records, instance, "receipt", data)

    def call_changed(
        self, records: Records, instance: Instance, call: Call, change: str, extra: dict[str, Any]
    ) -> None:
        data = {"type": change, **call.view(), **extra, "timestamp": rfc3339_nano(time.time_ns())}
        post(records, instance, "call", data)

    def settings_changed(self, records: Records, instance: Instance) -> None:
        data = {"kind": instance.kind, **instance.calls_config(), "updatedAt": rfc3339_nano(instance.updated_ns)}
        post(records, instance, "call_settings", data)


class CallsServer:
    """The root server's routes: ours (calls, call settings, subscription) and wuzapi's messaging ones."""

    prefix = ""

    def __init__(self, state: SimulatorState, media: MediaSessions) -> None:
        self._state = state
        self._media = media

    def routes(self) -> list[Route]:
        ours = [
            Rule("/v1/capabilities", methods=["GET"], endpoint=self.capabilities),
            Rule("/instance/status", methods=["GET"], endpoint=self.instance_status),
            Rule("/instance/call-settings", methods=["POST"], endpoint=self.call_settings),
            Rule(
                "/v1/instances/<instance_id>/call-settings",
                methods=["POST"],
                endpoint=self.admin_call_settings,
            ),
            Rule("/webhook", methods=["GET"], endpoint=self.get_webhook),
            Rule("/webhook", methods=["POST", "PUT"], endpoint=self.post_webhook),
            Rule("/call/dial", methods=["POST"], endpoint=self.dial),
            Rule("/call/active", methods=["GET"], endpoint=self.active_calls),
            Rule("/call/history", methods=["GET"], endpoint=self.call_history),
            Rule("/call/hangup", methods=["POST"], endpoint=self.hangup),
            Rule("/call/video", methods=["POST"], endpoint=self.video),
            Rule("/call/<call_id>", methods=["GET"], endpoint=self.get_call),
            Rule("/call/<call_id>/attach", methods=["POST"], endpoint=self.attach_media),
            Rule(f"{incoming.FILES_PATH}/<key>", methods=["GET"], endpoint=self.media_file),
        ]
        real = [
            Rule("/chat/send/text", methods=["POST"], endpoint=partial(wuzapi.send_text, self._state, flavour="calls")),
            Rule("/session/status", methods=["GET"], endpoint=self.session_status),
            *wuzapi_media_send.rules(self._state, "", "calls"),  # the same /chat/send/* as plain wuzapi
        ]
        return [Route(rule, fault_answer) for rule in ours] + [Route(rule, wuzapi.fault_answer) for rule in real]

    def not_found(self) -> Response:
        return error_answer(404, "not_found")

    # --- authentication ----------------------------------------------------------------------

    def _instance_id(self, request: Request) -> str:
        token = request.headers.get("token")
        with self._state.locked() as records:
            instance = records.instance_for_token(token, "calls") if token else None
            if instance is None:
                raise SimError(401, "unauthorized", "missing or invalid instance token")
            return instance.id

    def _require_admin(self, request: Request) -> None:
        supplied = request.headers.get("admintoken", "").encode()
        if not hmac.compare_digest(supplied, self._state.admin_token.encode()):
            raise SimError(401, "unauthorized", "missing or invalid admin token")

    # --- the server and its instances --------------------------------------------------------

    def capabilities(self, request: Request) -> Response:
        return json_answer(capabilities_answer(self._state.capabilities()))

    def instance_status(self, request: Request) -> Response:
        return json_answer({"instance": self._state.status(self._instance_id(request))})

    def call_settings(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        body = parse_body(request, schemas.CallSettingsBody)
        return json_answer(self._state.set_call_settings(instance_id, body.calls_max_concurrent))

    def admin_call_settings(self, request: Request, instance_id: str) -> Response:
        self._require_admin(request)
        body = parse_body(request, schemas.CallSettingsBody)
        return json_answer(self._state.set_call_settings(instance_id, body.calls_max_concurrent))

    def session_status(self, request: Request) -> Response:
        """wuzapi's answer, with the calls subscription's URL and events (it has no HMAC key)."""
        with self._state.locked() as records:
            instance = wuzapi.user(records, request, "calls")
            subscription, _ = records.effective_subscription(instance)
            url, events = (subscription.url, subscription.events) if subscription else ("", [])
            return wuzapi.session_status_answer(instance, url, events, hmac_configured=False)

    # --- the webhook subscription ------------------------------------------------------------

    def get_webhook(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        with self._state.locked() as records:
            subscription, inherited = records.effective_subscription(records.instance(instance_id))
            if subscription is None:
                return json_answer({"url": None, "events": [], "filters": {}, "enabled": False, "inherited": False})
            return json_answer(subscription.public_view(inherited=inherited))

    def post_webhook(self, request: Request) -> Response:
        """Merge into the current subscription and save it as the instance's own.

        Posting on an inherited subscription creates the instance's own copy, as the real
        server does. Omitting `secret` keeps the current one only for the same URL.
        """
        instance_id = self._instance_id(request)
        body = parse_body(request, schemas.WebhookBody)
        with self._state.locked() as records:
            instance = records.instance(instance_id)
            current, _ = records.effective_subscription(instance)
            url = body.url if body.url is not None else (current.url if current else None)
            if url is None:
                raise SimError(400, "url_required")
            if body.secret is not None:
                secret, previous = body.secret, None
            elif current is not None and current.url == url:
                secret, previous = current.secret, current.previous_secret
            else:
                raise SimError(400, "secret_required", "a new URL needs a secret")
            instance.subscription = Subscription(
                url=url,
                events=list(body.events if body.events is not None else (current.events if current else [])),
                filters=dict(body.filters if body.filters is not None else (current.filters if current else {})),
                enabled=body.enabled if body.enabled is not None else (current.enabled if current else True),
                secret=secret,
                previous_secret=previous,
            )
            return json_answer(instance.subscription.public_view(inherited=False))

    # --- calls -------------------------------------------------------------------------------

    def dial(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        body = parse_body(request, schemas.DialBody)
        key = request.headers.get("Idempotency-Key")
        return json_answer({"callId": self._state.dial(instance_id, body.phone, body.video, key)})

    def active_calls(self, request: Request) -> Response:
        return json_answer({"calls": self._state.active_calls(self._instance_id(request))})

    def call_history(self, request: Request) -> Response:
        return json_answer({"calls": self._state.call_history(self._instance_id(request))})

    def media_file(self, request: Request, key: str) -> Response:
        """`GET /files/<message id><ext>`: a customer's file the envelope gave by its `url` (no
        token: the URL is the capability, as a storage link is); `404 media_not_found` for an
        unknown one, or one made to fail."""
        with self._state.locked() as records:
            found = incoming.served_file(records.url_files, records.failing_media, key)
        if found is None:
            return error_answer(404, "media_not_found", "no such file")
        return Response(found[0], status=200, content_type=found[1])

    def get_call(self, request: Request, call_id: str) -> Response:
        return json_answer({"call": self._state.get_call(self._instance_id(request), call_id)})

    def hangup(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        return json_answer({"call": self._state.hangup(instance_id, parse_body(request, schemas.CallIdBody).call_id)})

    def video(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        call_id = parse_body(request, schemas.VideoBody).call_id
        return json_answer({"call": self._state.stop_video(instance_id, call_id)})

    def attach_media(self, request: Request, call_id: str) -> Response:
        """A short-lived media URL for one live call (ringing, connecting, active) of this instance."""
        instance_id = self._instance_id(request)
        body = parse_body(request, schemas.AttachBody)
        self._state.require_live_call(instance_id, call_id)
        if not self._media.ws_url:
            raise SimError(503, "media_unavailable", "the media endpoint is not running")
        return json_answer(self._media.attach(instance_id, call_id, resume=body.resume))

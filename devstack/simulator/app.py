"""The simulator's WSGI app: one server per path prefix, the `/_sim` control API, fault injection.

- `/` the calls-capable server: our calls routes (`/v1/capabilities`, `/instance/*`, `/call/*`,
  call settings, the `/webhook` subscription), authenticated by `token` or `admintoken` with our
  `{"error", "message"}` errors; its messaging routes (`/chat/send/text`, `/session/status`)
  answer as real wuzapi does;
- `/wuzapi` a plain wuzapi, `/evolution` an Evolution API v2, `/meta` a Meta Cloud API: each
  authenticates, answers and fails as its real server does (`payloads`).

No token is ever echoed. The control API has no authentication and answers only loopback clients.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import secrets
import socket
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import payloads, schemas, wire
from devstack.simulator.media import MediaSessions
from devstack.simulator.model import SimError
from devstack.simulator.payloads import Refused
from devstack.simulator.schemas import SimulatorConfig
from devstack.simulator.state import SimulatorState
from devstack.simulator.webhooks import WebhookDispatcher

Body = TypeVar("Body", bound=BaseModel)
Handler = Callable[..., Response]
CONTROL_PREFIX = "/_sim"
PREFIXES = {"wuzapi": "/wuzapi", "evolution": "/evolution", "meta": "/meta"}
_CONVERTER = re.compile(r"<(?:[^:>]+:)?([^>]+)>")
_META_VERSION = re.compile(payloads.META_API_VERSION_PATTERN)
WUZAPI_JSON = "application/json"
HMAC_JSON = "application/json; charset=utf-8"
EVOLUTION_JSON = "application/json; charset=utf-8"
META_JSON = "application/json; charset=UTF-8"


def route_template(rule: str) -> str:
    """`/call/<call_id>` -> `/call/{call_id}`: how faults name a route."""
    return _CONVERTER.sub(r"{\1}", rule)


def _json(payload: Any, status: int = 200) -> Response:
    return Response(json.dumps(payload), status=status, mimetype="application/json")


def _error(status: int, code: str, message: str = "") -> Response:
    return _json({"error": code, "message": message or code}, status)


def _raw(body: bytes, content_type: str, status: int = 200) -> Response:
    return Response(body, status=status, content_type=content_type)


def _refused(refused: Refused) -> Response:
    return _raw(refused.body, refused.content_type, refused.status)


def _fault_answer(style: str, status: int, note: str) -> Response:
    """An injected failure, in the error shape of the route's server."""
    if style == "wuzapi":
        return _refused(payloads.wuzapi_refused(status, note))
    if style == "evolution":
        return _refused(payloads.evolution_refused(status, note))
    if style == "meta":
        message = "An unexpected error has occurred. Please retry your request later."
        return _refused(payloads.meta_refused(status, 2, message, is_transient=True))
    return _error(status, "timeout" if status == 504 else "internal", note)


def _not_found(path: str) -> Response:
    """An unknown route, as the server behind the path's prefix answers it."""
    if path == PREFIXES["wuzapi"] or path.startswith(PREFIXES["wuzapi"] + "/"):
        return _raw(b"404 page not found\n", "text/plain; charset=utf-8", 404)
    if path == PREFIXES["evolution"] or path.startswith(PREFIXES["evolution"] + "/"):
        return _refused(payloads.evolution_refused(404, ["Not Found"]))
    if path == PREFIXES["meta"] or path.startswith(PREFIXES["meta"] + "/"):
        return _refused(payloads.meta_refused(400, 2500, "Unknown path components"))
    return _error(404, "not_found")


def _parse(request: Request, model: type[Body]) -> Body:
    raw = request.get_data()
    try:
        payload = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise SimError(400, "invalid_json", "the body is not JSON") from exc
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors(include_input=False)
        )
        raise SimError(400, "invalid_request", problems) from exc


def _is_loopback(address: str | None) -> bool:
    try:
        return address is not None and ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class SimulatorApp:
    def __init__(self, config: SimulatorConfig, *, webhook_transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        self.dispatcher = WebhookDispatcher(
            timeout_seconds=config.webhook_timeout_seconds,
            retry_base_delay=config.webhook_retry_base_delay,
            max_attempts=config.webhook_max_attempts,
            transport=webhook_transport,
        )
        self._verifier = httpx.Client(
            timeout=config.webhook_timeout_seconds, trust_env=False, transport=webhook_transport
        )
        self._closing = threading.Event()
        self.state = SimulatorState(config, deliver=self.dispatcher.enqueue)
        self.media = MediaSessions(is_live=self.state.call_is_live)
        provider_rules = self._calls_rules() + self._wuzapi_rules() + self._evolution_rules() + self._meta_rules()
        self._url_map = Map([rule for rule, _ in provider_rules] + self._control_rules())
        self._styles = {route_template(rule.rule): style for rule, style in provider_rules}
        self._fault_routes = sorted(self._styles)

    def __call__(self, environ: Any, start_response: Any) -> Any:
        return self._dispatch(Request(environ))(environ, start_response)

    def close(self) -> None:
        """Wake requests sleeping in a fault or a held dial, and stop webhook delivery."""
        self._closing.set()
        self.state.hold_dials(False)
        self.dispatcher.close()
        self._verifier.close()

    # --- dispatch ----------------------------------------------------------------------------

    def _dispatch(self, request: Request) -> Response:
        try:
            rule, args = self._url_map.bind_to_environ(request.environ).match(return_rule=True)
        except HTTPException as exc:
            if exc.code == 404:
                return _not_found(request.path)
            return _error(exc.code or 405, "method_not_allowed")
        handler: Handler = rule.endpoint
        if rule.rule.startswith(CONTROL_PREFIX):
            if not _is_loopback(request.remote_addr):
                return _error(403, "forbidden", "the control API answers local clients only")
            return self._run(handler, request, args)
        template = route_template(rule.rule)
        style = self._styles[template]
        fault = self.state.take_fault(template, request.method)
        if fault == "timeout":
            self._closing.wait(self.config.fault_delay_seconds)
            return _fault_answer(style, 504, "injected timeout: not applied")
        if fault == "error500":
            return _fault_answer(style, 500, "injected error: not applied")
        response = self._run(handler, request, args)
        if fault == "drop_response":
            self._drop_connection(request)
        return response

    @staticmethod
    def _run(handler: Handler, request: Request, args: Mapping[str, Any]) -> Response:
        try:
            return handler(request, **args)
        except SimError as exc:
            return _error(exc.status, exc.code, exc.message)
        except Refused as refused:
            return _refused(refused)

    def _drop_connection(self, request: Request) -> None:
        """The request was applied; the client gets no answer (the ambiguous outcome)."""
        connection = request.environ.get("werkzeug.socket")
        if connection is None:
            self._closing.wait(self.config.fault_delay_seconds)
            return
        connection.shutdown(socket.SHUT_RDWR)

    # --- authentication ----------------------------------------------------------------------

    def _instance_id(self, request: Request) -> str:
        token = request.headers.get("token")
        instance_id = self.state.instance_for_token(token) if token else None
        if instance_id is None:
            raise SimError(401, "unauthorized", "missing or invalid instance token")
        return instance_id

    def _wuzapi_user(self, request: Request, flavour: str) -> str:
        """wuzapi's `authalice`: header `token` (any case), else query `token`."""
        token = request.headers.get("token") or "".join(request.args.getlist("token"))
        instance_id = self.state.instance_for_token(token, flavour) if token else None
        if instance_id is None:
            raise payloads.wuzapi_refused(401, "unauthorized")
        return instance_id

    def _require_admin(self, request: Request) -> None:
        supplied = request.headers.get("admintoken", "").encode()
        if not hmac.compare_digest(supplied, self.config.admin_token.encode()):
            raise SimError(401, "unauthorized", "missing or invalid admin token")

    # --- the calls server (root) -------------------------------------------------------------

    def _calls_rules(self) -> list[tuple[Rule, str]]:
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
        ]
        real = [
            Rule("/chat/send/text", methods=["POST"], endpoint=partial(self.wuzapi_send, flavour="calls")),
            Rule("/session/status", methods=["GET"], endpoint=partial(self.wuzapi_status, flavour="calls")),
        ]
        return [(rule, "calls") for rule in ours] + [(rule, "wuzapi") for rule in real]

    def capabilities(self, request: Request) -> Response:
        return _json(self.state.capabilities_view())

    def instance_status(self, request: Request) -> Response:
        return _json(self.state.status(self._instance_id(request)))

    def call_settings(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        body = _parse(request, schemas.CallSettingsBody)
        return _json(self.state.set_call_settings(instance_id, body.calls_max_concurrent))

    def admin_call_settings(self, request: Request, instance_id: str) -> Response:
        self._require_admin(request)
        body = _parse(request, schemas.CallSettingsBody)
        return _json(self.state.set_call_settings(instance_id, body.calls_max_concurrent))

    def get_webhook(self, request: Request) -> Response:
        return _json(self.state.get_webhook(self._instance_id(request)))

    def post_webhook(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        return _json(self.state.post_webhook(instance_id, _parse(request, schemas.WebhookBody)))

    def dial(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        body = _parse(request, schemas.DialBody)
        key = request.headers.get("Idempotency-Key")
        return _json(self.state.dial(instance_id, body.phone, body.video, key))

    def active_calls(self, request: Request) -> Response:
        return _json(self.state.active_calls(self._instance_id(request)))

    def call_history(self, request: Request) -> Response:
        return _json(self.state.call_history(self._instance_id(request)))

    def get_call(self, request: Request, call_id: str) -> Response:
        return _json(self.state.get_call(self._instance_id(request), call_id))

    def hangup(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        return _json(self.state.hangup(instance_id, _parse(request, schemas.CallIdBody).call_id))

    def video(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        return _json(self.state.stop_video(instance_id, _parse(request, schemas.VideoBody).call_id))

    def attach_media(self, request: Request, call_id: str) -> Response:
        """A short-lived media URL for one live call (ringing, connecting, active) of this instance."""
        instance_id = self._instance_id(request)
        body = _parse(request, schemas.AttachBody)
        self.state.require_live_call(instance_id, call_id)
        if not self.media.ws_url:
            raise SimError(503, "media_unavailable", "the media endpoint is not running")
        return _json(self.media.attach(instance_id, call_id, resume=body.resume))

    # --- wuzapi (its messaging routes are the calls server's too) ----------------------------

    def _wuzapi_rules(self) -> list[tuple[Rule, str]]:
        prefix, flavour = PREFIXES["wuzapi"], "wuzapi"
        rules = [
            Rule(f"{prefix}/chat/send/text", methods=["POST"], endpoint=partial(self.wuzapi_send, flavour=flavour)),
            Rule(f"{prefix}/session/status", methods=["GET"], endpoint=partial(self.wuzapi_status, flavour=flavour)),
            Rule(f"{prefix}/webhook", methods=["GET", "POST", "PUT", "DELETE"], endpoint=self.wuzapi_webhook),
            Rule(f"{prefix}/session/hmac/config", methods=["GET", "POST", "DELETE"], endpoint=self.wuzapi_hmac),
        ]
        return [(rule, "wuzapi") for rule in rules]

    def wuzapi_send(self, request: Request, flavour: str) -> Response:
        instance_id = self._wuzapi_user(request, flavour)
        key = request.headers.get("Idempotency-Key")
        data = self.state.send_wuzapi(instance_id, request.get_data(), key)
        return _raw(payloads.wuzapi_answer(data), WUZAPI_JSON)

    def wuzapi_status(self, request: Request, flavour: str) -> Response:
        data = self.state.session_status(self._wuzapi_user(request, flavour))
        return _raw(payloads.wuzapi_answer(data), WUZAPI_JSON)

    def wuzapi_webhook(self, request: Request) -> Response:
        instance_id = self._wuzapi_user(request, "wuzapi")
        if request.method == "GET":
            data = self.state.wuzapi_get_webhook(instance_id)
        elif request.method == "DELETE":
            data = self.state.wuzapi_delete_webhook(instance_id)
        elif request.method == "POST":
            data = self.state.wuzapi_set_webhook(instance_id, payloads.wuzapi_json_body(request.get_data()))
        else:
            data = self.state.wuzapi_update_webhook(instance_id, payloads.wuzapi_json_body(request.get_data()))
        return _raw(payloads.wuzapi_answer(data), WUZAPI_JSON)

    def wuzapi_hmac(self, request: Request) -> Response:
        """The one route family answered without the envelope (`respondWithJSON`)."""
        instance_id = self._wuzapi_user(request, "wuzapi")
        if request.method == "POST":
            key = payloads.wuzapi_json_body(request.get_data()).get("hmac_key")
            if not isinstance(key, str):
                raise payloads.wuzapi_refused(400, "could not decode Payload")
            data = self.state.hmac_config(instance_id, key)
        else:
            data = self.state.hmac_config(instance_id, None, delete=request.method == "DELETE")
        return _raw(payloads.wuzapi_raw(data), HMAC_JSON)

    # --- Evolution API ------------------------------------------------------------------------

    def _evolution_rules(self) -> list[tuple[Rule, str]]:
        prefix = PREFIXES["evolution"]
        rules = [
            Rule(f"{prefix}/message/sendText/<instance>", methods=["POST"], endpoint=self.evolution_send),
            Rule(f"{prefix}/instance/connectionState/<instance>", methods=["GET"], endpoint=self.evolution_state),
            Rule(f"{prefix}/chat/whatsappNumbers/<instance>", methods=["POST"], endpoint=self.evolution_numbers),
        ]
        return [(rule, "evolution") for rule in rules]

    def evolution_send(self, request: Request, instance: str) -> Response:
        instance_id = self.state.evolution_instance(instance, request.headers.get("apikey"))
        data = self.state.send_evolution(instance_id, request.get_data(), request.headers.get("Idempotency-Key"))
        return _raw(wire.node_json(data), EVOLUTION_JSON, 201)

    def evolution_numbers(self, request: Request, instance: str) -> Response:
        instance_id = self.state.evolution_instance(instance, request.headers.get("apikey"))
        return _raw(wire.node_json(self.state.evolution_numbers(instance_id, request.get_data())), EVOLUTION_JSON)

    def evolution_state(self, request: Request, instance: str) -> Response:
        instance_id = self.state.evolution_instance(instance, request.headers.get("apikey"))
        return _raw(wire.node_json(self.state.evolution_state(instance_id)), EVOLUTION_JSON)

    # --- Meta Cloud API ----------------------------------------------------------------------

    def _meta_rules(self) -> list[tuple[Rule, str]]:
        prefix = PREFIXES["meta"]
        rules = [
            Rule(f"{prefix}/<version>/<phone_number_id>/messages", methods=["POST"], endpoint=self.meta_send),
            Rule(f"{prefix}/<version>/<phone_number_id>", methods=["GET"], endpoint=self.meta_number),
        ]
        return [(rule, "meta") for rule in rules]

    def meta_number(self, request: Request, version: str, phone_number_id: str) -> Response:
        """The phone number node: the token first (190), then whether it may read this number (100/33)."""
        if not _META_VERSION.fullmatch(version):
            raise payloads.meta_refused(400, 2500, f"Unknown path components: /{version}")
        authorization = request.headers.get("Authorization", "")
        bearer = authorization[7:] if authorization[:7].lower() == "bearer " else None
        instance_id = self.state.meta_instance(phone_number_id, bearer, method="get")
        data = self.state.meta_number(instance_id, request.args.get("fields"))
        return _raw(json.dumps(data, separators=(",", ":")).encode(), META_JSON)

    def meta_send(self, request: Request, version: str, phone_number_id: str) -> Response:
        if not _META_VERSION.fullmatch(version):
            raise payloads.meta_refused(400, 2500, f"Unknown path components: /{version}")
        authorization = request.headers.get("Authorization", "")
        bearer = authorization[7:] if authorization[:7].lower() == "bearer " else None
        instance_id = self.state.meta_instance(phone_number_id, bearer)
        data = self.state.send_meta(instance_id, request.get_data(), request.headers.get("Idempotency-Key"))
        return _raw(json.dumps(data, separators=(",", ":")).encode(), META_JSON)

    # --- control API -------------------------------------------------------------------------

    def _control_rules(self) -> list[Rule]:
        instance = f"{CONTROL_PREFIX}/instances/<instance_id>"
        actions = "any(answer, active, video, end, recording_ready, recording_failed)"
        return [
            Rule(f"{CONTROL_PREFIX}/instances", methods=["POST"], endpoint=self.create_instance),
            Rule(instance, methods=["GET"], endpoint=self.instance_state),
            Rule(f"{instance}/connection", methods=["POST"], endpoint=self.set_connection),
            Rule(f"{instance}/call-settings", methods=["POST"], endpoint=self.panel_call_settings),
            Rule(f"{instance}/webhook-secrets", methods=["POST"], endpoint=self.webhook_secrets),
            Rule(f"{instance}/webhook-format", methods=["POST"], endpoint=self.webhook_format),
            Rule(f"{instance}/send-error", methods=["POST"], endpoint=self.send_error),
            Rule(f"{instance}/number-status", methods=["POST"], endpoint=self.number_status),
            Rule(f"{instance}/verify-webhook", methods=["POST"], endpoint=self.verify_webhook),
            Rule(f"{instance}/incoming-message", methods=["POST"], endpoint=self.incoming_message),
            Rule(f"{instance}/incoming-call", methods=["POST"], endpoint=self.incoming_call),
            Rule(f"{instance}/calls/<call_id>/<{actions}:action>", methods=["POST"], endpoint=self.call_action),
            Rule(f"{instance}/calls/<call_id>/media", methods=["GET"], endpoint=self.call_media),
            Rule(f"{instance}/messages/<path:message_id>/status", methods=["POST"], endpoint=self.receipt),
            Rule(f"{CONTROL_PREFIX}/sent", methods=["GET"], endpoint=self.sent),
            Rule(f"{CONTROL_PREFIX}/events", methods=["GET"], endpoint=self.events),
            Rule(f"{CONTROL_PREFIX}/faults", methods=["POST"], endpoint=self.add_fault),
            Rule(f"{CONTROL_PREFIX}/faults", methods=["DELETE"], endpoint=self.clear_faults),
            Rule(f"{CONTROL_PREFIX}/webhooks/redeliver", methods=["POST"], endpoint=self.redeliver),
            Rule(f"{CONTROL_PREFIX}/global-webhook", methods=["POST"], endpoint=self.set_global_webhook),
            Rule(f"{CONTROL_PREFIX}/global-webhook", methods=["DELETE"], endpoint=self.delete_global_webhook),
            Rule(f"{CONTROL_PREFIX}/capabilities", methods=["POST"], endpoint=self.patch_capabilities),
            Rule(f"{CONTROL_PREFIX}/hold-dials", methods=["POST"], endpoint=self.hold_dials),
            Rule(f"{CONTROL_PREFIX}/reset", methods=["POST"], endpoint=self.reset),
        ]

    def create_instance(self, request: Request) -> Response:
        return _json(self.state.create_instance(_parse(request, schemas.CreateInstanceBody)), 201)

    def instance_state(self, request: Request, instance_id: str) -> Response:
        return _json(self.state.control_view(instance_id))

    def set_connection(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.ConnectionBody)
        return _json(
            self.state.set_connection(
                instance_id,
                body.connected,
                include_calls_config=body.include_calls_config,
                reason=body.reason,
                notify=body.notify,
            )
        )

    def number_status(self, request: Request, instance_id: str) -> Response:
        return _json(self.state.set_number_status(instance_id, _parse(request, schemas.NumberStatusBody)))

    def panel_call_settings(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.PanelCallSettingsBody)
        return _json(self.state.set_call_settings(instance_id, body.calls_max_concurrent))

    def webhook_secrets(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.WebhookSecretsBody)
        self.state.set_webhook_secrets(instance_id, body.secret, body.previous_secret)
        return _json({"ok": True})

    def send_error(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.SendErrorBody)
        return _json(self.state.set_send_error(instance_id, body.code, body.times))

    def webhook_format(self, request: Request, instance_id: str) -> Response:
        self.state.set_webhook_format(instance_id, _parse(request, schemas.WebhookFormatBody).format)
        return _json({"ok": True})

    def verify_webhook(self, request: Request, instance_id: str) -> Response:
        """What Meta does when the callback URL is saved: a GET with `hub.*`; did it echo the challenge?"""
        url, verify_token = self.state.meta_verification(instance_id)
        challenge = str(secrets.randbelow(9 * 10**9) + 10**9)
        query = {"hub.mode": "subscribe", "hub.challenge": challenge, "hub.verify_token": verify_token}
        try:
            answer = self._verifier.get(url, params=query)
        except httpx.HTTPError as exc:
            raise SimError(502, "unreachable", type(exc).__name__) from exc
        verified = answer.status_code == 200 and answer.text == challenge
        return _json({"verified": verified, "status": answer.status_code})

    def incoming_message(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.IncomingMessageBody)
        if body.type == "text" and body.text is None:
            raise SimError(400, "invalid_request", "text: a text message needs its text")
        message = self.state.incoming_message(
            instance_id, body.from_, body.text or "", body.type, push_name=body.push_name, addressing=body.addressing
        )
        return _json(message)

    def incoming_call(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.IncomingCallBody)
        return _json(self.state.incoming_call(instance_id, body.from_, body.video))

    def call_action(self, request: Request, instance_id: str, call_id: str, action: str) -> Response:
        details = _parse(request, schemas.CallActionBody)
        return _json(self.state.call_action(instance_id, call_id, action, details))

    def call_media(self, request: Request, instance_id: str, call_id: str) -> Response:
        view = self.media.view(instance_id, call_id)
        if view is None:
            raise SimError(404, "no_media_session", "the call has no retained media session")
        return _json(view)

    def receipt(self, request: Request, instance_id: str, message_id: str) -> Response:
        self.state.receipt(instance_id, message_id, _parse(request, schemas.ReceiptBody).status)
        return _json({"ok": True})

    def sent(self, request: Request) -> Response:
        return _json({"messages": self.state.sent_messages()})

    def events(self, request: Request) -> Response:
        return _json({"events": self.state.events(request.args.get("instance"))})

    def add_fault(self, request: Request) -> Response:
        body = _parse(request, schemas.FaultBody)
        if body.route not in self._fault_routes:
            raise SimError(400, "unknown_route", f"faults apply to provider routes: {self._fault_routes}")
        self.state.add_fault(body)
        return _json({"ok": True})

    def clear_faults(self, request: Request) -> Response:
        return _json({"cleared": self.state.clear_faults()})

    def redeliver(self, request: Request) -> Response:
        self.state.redeliver(_parse(request, schemas.RedeliverBody).event_id)
        return _json({"ok": True})

    def set_global_webhook(self, request: Request) -> Response:
        self.state.set_global_webhook(_parse(request, schemas.GlobalWebhookBody))
        return _json({"ok": True})

    def delete_global_webhook(self, request: Request) -> Response:
        self.state.set_global_webhook(None)
        return _json({"ok": True})

    def patch_capabilities(self, request: Request) -> Response:
        return _json(self.state.patch_capabilities(_parse(request, schemas.CapabilitiesPatch)))

    def hold_dials(self, request: Request) -> Response:
        self.state.hold_dials(_parse(request, schemas.HoldDialsBody).held)
        return _json({"ok": True})

    def reset(self, request: Request) -> Response:
        self.dispatcher.forget_pending()
        self.state.reset()
        self.media.reset()
        return _json({"ok": True})

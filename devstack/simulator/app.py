"""The simulator's WSGI app: provider routes, the `/_sim` control API and fault injection.

Provider routes are authenticated by `token` (instance) or `admintoken` (server admin); a wrong
or missing token is a 401 and no token is ever echoed. The control API has no authentication
and answers only loopback clients.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import schemas
from devstack.simulator.schemas import SimulatorConfig
from devstack.simulator.state import SimError, SimulatorState
from devstack.simulator.webhooks import WebhookDispatcher

Body = TypeVar("Body", bound=BaseModel)
Handler = Callable[..., Response]
CONTROL_PREFIX = "/_sim"
_CONVERTER = re.compile(r"<(?:[^:>]+:)?([^>]+)>")


def route_template(rule: str) -> str:
    """`/call/<call_id>` -> `/call/{call_id}`: how faults name a route."""
    return _CONVERTER.sub(r"{\1}", rule)


def _json(payload: Any, status: int = 200) -> Response:
    return Response(json.dumps(payload), status=status, mimetype="application/json")


def _error(status: int, code: str, message: str = "") -> Response:
    return _json({"error": code, "message": message or code}, status)


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
        self._closing = threading.Event()
        self.state = SimulatorState(config, deliver=self.dispatcher.enqueue)
        provider_rules = self._provider_rules()
        self._url_map = Map(provider_rules + self._control_rules())
        self._fault_routes = sorted({route_template(rule.rule) for rule in provider_rules})

    def __call__(self, environ: Any, start_response: Any) -> Any:
        return self._dispatch(Request(environ))(environ, start_response)

    def close(self) -> None:
        """Wake requests sleeping in a fault or a held dial, and stop webhook delivery."""
        self._closing.set()
        self.state.hold_dials(False)
        self.dispatcher.close()

    # --- dispatch ----------------------------------------------------------------------------

    def _dispatch(self, request: Request) -> Response:
        try:
            rule, args = self._url_map.bind_to_environ(request.environ).match(return_rule=True)
        except HTTPException as exc:
            return _error(exc.code or 404, "not_found" if exc.code == 404 else "method_not_allowed")
        handler: Handler = rule.endpoint
        if rule.rule.startswith(CONTROL_PREFIX):
            if not _is_loopback(request.remote_addr):
                return _error(403, "forbidden", "the control API answers local clients only")
            return self._run(handler, request, args)
        fault = self.state.take_fault(route_template(rule.rule), request.method)
        if fault == "timeout":
            self._closing.wait(self.config.fault_delay_seconds)
            return _error(504, "timeout", "injected timeout: not applied")
        if fault == "error500":
            return _error(500, "internal", "injected error: not applied")
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

    def _require_admin(self, request: Request) -> None:
        supplied = request.headers.get("admintoken", "").encode()
        if not hmac.compare_digest(supplied, self.config.admin_token.encode()):
            raise SimError(401, "unauthorized", "missing or invalid admin token")

    # --- provider routes ---------------------------------------------------------------------

    def _provider_rules(self) -> list[Rule]:
        return [
            Rule("/v1/capabilities", methods=["GET"], endpoint=self.capabilities),
            Rule("/instance/status", methods=["GET"], endpoint=self.instance_status),
            Rule("/instance/call-settings", methods=["POST"], endpoint=self.call_settings),
            Rule(
                "/v1/instances/<instance_id>/call-settings",
                methods=["POST"],
                endpoint=self.admin_call_settings,
            ),
            Rule("/webhook", methods=["GET"], endpoint=self.get_webhook),
            Rule("/webhook", methods=["POST"], endpoint=self.post_webhook),
            Rule("/chat/send/text", methods=["POST"], endpoint=self.send_text),
            Rule("/call/dial", methods=["POST"], endpoint=self.dial),
            Rule("/call/active", methods=["GET"], endpoint=self.active_calls),
            Rule("/call/history", methods=["GET"], endpoint=self.call_history),
            Rule("/call/hangup", methods=["POST"], endpoint=self.hangup),
            Rule("/call/video", methods=["POST"], endpoint=self.video),
            Rule("/call/<call_id>", methods=["GET"], endpoint=self.get_call),
        ]

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

    def send_text(self, request: Request) -> Response:
        instance_id = self._instance_id(request)
        body = _parse(request, schemas.SendTextBody)
        key = request.headers.get("Idempotency-Key")
        return _json(self.state.send_text(instance_id, body.phone, body.body, key))

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
            Rule(f"{instance}/incoming-message", methods=["POST"], endpoint=self.incoming_message),
            Rule(f"{instance}/incoming-call", methods=["POST"], endpoint=self.incoming_call),
            Rule(f"{instance}/calls/<call_id>/<{actions}:action>", methods=["POST"], endpoint=self.call_action),
            Rule(f"{instance}/messages/<message_id>/status", methods=["POST"], endpoint=self.receipt),
            Rule(f"{CONTROL_PREFIX}/sent", methods=["GET"], endpoint=self.sent),
            Rule(f"{CONTROL_PREFIX}/events", methods=["GET"], endpoint=self.events),
            Rule(f"{CONTROL_PREFIX}/faults", methods=["POST"], endpoint=self.add_fault),
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
            self.state.set_connection(instance_id, body.connected, include_calls_config=body.include_calls_config)
        )

    def panel_call_settings(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.PanelCallSettingsBody)
        return _json(self.state.set_call_settings(instance_id, body.calls_max_concurrent))

    def webhook_secrets(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.WebhookSecretsBody)
        self.state.set_webhook_secrets(instance_id, body.secret, body.previous_secret)
        return _json({"ok": True})

    def incoming_message(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.IncomingMessageBody)
        return _json(self.state.incoming_message(instance_id, body.from_, body.text))

    def incoming_call(self, request: Request, instance_id: str) -> Response:
        body = _parse(request, schemas.IncomingCallBody)
        return _json(self.state.incoming_call(instance_id, body.from_, body.video))

    def call_action(self, request: Request, instance_id: str, call_id: str, action: str) -> Response:
        details = _parse(request, schemas.CallActionBody)
        return _json(self.state.call_action(instance_id, call_id, action, details))

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
        return _json({"ok": True})

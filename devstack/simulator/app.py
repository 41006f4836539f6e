"""The simulator's WSGI app: one server per path prefix, the `/_sim` control API, fault injection.

- `/` the calls-capable server (`dialects.calls`): our calls routes, authenticated by `token` or
  `admintoken` with our `{"error", "message"}` errors, and wuzapi's messaging routes;
- `/wuzapi` a plain wuzapi, `/evolution` an Evolution API v2, `/meta` a Meta Cloud API (`dialects`):
  each authenticates, answers and fails as its real server does (`payloads`).

No token is ever echoed. The control API has no authentication and answers only loopback clients.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from devstack.simulator import incoming, schemas
from devstack.simulator.dialects import calls, evolution, meta, meta_templates, wuzapi
from devstack.simulator.media import MediaSessions
from devstack.simulator.model import SimError
from devstack.simulator.payloads import Refused
from devstack.simulator.responses import ProviderServer, error_answer, json_answer, parse_body, refused_answer
from devstack.simulator.schemas import SimulatorConfig
from devstack.simulator.state import SimulatorState
from devstack.simulator.webhooks import WebhookDispatcher

Handler = Callable[..., Response]
CONTROL_PREFIX = "/_sim"
_CONVERTER = re.compile(r"<(?:[^:>]+:)?([^>]+)>")


def route_template(rule: str) -> str:
    """`/call/<call_id>` -> `/call/{call_id}`: how faults name a route."""
    return _CONVERTER.sub(r"{\1}", rule)


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
        self.state = SimulatorState(
            config,
            deliver=self.dispatcher.enqueue,
            calls=calls.CallsDialect(),
            dialects=[wuzapi.WuzapiDialect(), evolution.EvolutionDialect(), meta.MetaDialect()],
        )
        self.media = MediaSessions(is_live=self.state.call_is_live)
        # The root server answers every path under no other server's prefix.
        self._root = calls.CallsServer(self.state, self.media)
        self._servers: list[ProviderServer] = [
            self._root,
            wuzapi.WuzapiServer(self.state),
            evolution.EvolutionServer(self.state),
            meta.MetaServer(self.state),
        ]
        routes = [route for server in self._servers for route in server.routes()]
        self._url_map = Map([route.rule for route in routes] + self._control_rules())
        self._fault_answers = {route_template(route.rule.rule): route.fault for route in routes}
        self._fault_routes = sorted(self._fault_answers)

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
                return self._not_found(request.path)
            return error_answer(exc.code or 405, "method_not_allowed")
        handler: Handler = rule.endpoint
        if rule.rule.startswith(CONTROL_PREFIX):
            if not _is_loopback(request.remote_addr):
                return error_answer(403, "forbidden", "the control API answers local clients only")
            return self._run(handler, request, args)
        template = route_template(rule.rule)
        fault_answer = self._fault_answers[template]
        fault = self.state.take_fault(template, request.method)
        if fault == "timeout":
            self._closing.wait(self.config.fault_delay_seconds)
            return fault_answer(504, "injected timeout: not applied")
        if fault == "error500":
            return fault_answer(500, "injected error: not applied")
        response = self._run(handler, request, args)
        if fault == "drop_response":
            self._drop_connection(request)
        return response

    def _not_found(self, path: str) -> Response:
        """An unknown route, as the server behind the path's prefix answers it."""
        for server in self._servers:
            if server.prefix and (path == server.prefix or path.startswith(server.prefix + "/")):
                return server.not_found()
        return self._root.not_found()

    @staticmethod
    def _run(handler: Handler, request: Request, args: Mapping[str, Any]) -> Response:
        try:
            return handler(request, **args)
        except SimError as exc:
            return error_answer(exc.status, exc.code, exc.message)
        except Refused as refused:
            return refused_answer(refused)

    def _drop_connection(self, request: Request) -> None:
        """The request was applied; the client gets no answer (the ambiguous outcome)."""
        connection = request.environ.get("werkzeug.socket")
        if connection is None:
            self._closing.wait(self.config.fault_delay_seconds)
            return
        connection.shutdown(socket.SHUT_RDWR)

    # --- control API -------------------------------------------------------------------------

    def _control_rules(self) -> list[Rule]:
        instance = f"{CONTROL_PREFIX}/instances/<instance_id>"
        actions = "any(answer, active, video, end, recording_ready, recording_failed)"
        return [
            Rule(f"{CONTROL_PREFIX}/instances", methods=["POST"], endpoint=self.create_instance),
            Rule(instance, methods=["GET"], endpoint=self.instance_state),
            Rule(f"{instance}/connection", methods=["POST"], endpoint=self.set_connection),
            Rule(f"{instance}/scan", methods=["POST"], endpoint=self.scan),
            Rule(f"{instance}/code-expired", methods=["POST"], endpoint=self.code_expired),
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
            Rule(f"{instance}/incoming-choice", methods=["POST"], endpoint=self.incoming_choice),
            Rule(f"{instance}/window", methods=["POST"], endpoint=self.window),
            Rule(f"{CONTROL_PREFIX}/refused", methods=["GET"], endpoint=self.refused),
            Rule(f"{CONTROL_PREFIX}/waba/<waba_id>/templates", methods=["POST"], endpoint=self.set_template),
            Rule(f"{CONTROL_PREFIX}/sent", methods=["GET"], endpoint=self.sent),
            Rule(f"{CONTROL_PREFIX}/events", methods=["GET"], endpoint=self.events),
            Rule(f"{CONTROL_PREFIX}/media/fail", methods=["POST"], endpoint=self.fail_media),
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
        return json_answer(self.state.create_instance(parse_body(request, schemas.CreateInstanceBody)), 201)

    def instance_state(self, request: Request, instance_id: str) -> Response:
        return json_answer(self.state.control_view(instance_id))

    def set_connection(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.ConnectionBody)
        return json_answer(
            self.state.set_connection(
                instance_id,
                body.connected,
                include_calls_config=body.include_calls_config,
                reason=body.reason,
                notify=body.notify,
            )
        )

    def scan(self, request: Request, instance_id: str) -> Response:
        return json_answer(self.state.scan(instance_id))

    def code_expired(self, request: Request, instance_id: str) -> Response:
        return json_answer(self.state.expire_code(instance_id))

    def number_status(self, request: Request, instance_id: str) -> Response:
        return json_answer(self.state.set_number_status(instance_id, parse_body(request, schemas.NumberStatusBody)))

    def panel_call_settings(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.PanelCallSettingsBody)
        return json_answer(self.state.set_call_settings(instance_id, body.calls_max_concurrent))

    def webhook_secrets(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.WebhookSecretsBody)
        self.state.set_webhook_secrets(instance_id, body.secret, body.previous_secret)
        return json_answer({"ok": True})

    def send_error(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.SendErrorBody)
        return json_answer(self.state.set_send_error(instance_id, body.code, body.times))

    def webhook_format(self, request: Request, instance_id: str) -> Response:
        self.state.set_webhook_format(instance_id, parse_body(request, schemas.WebhookFormatBody).format)
        return json_answer({"ok": True})

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
        return json_answer({"verified": verified, "status": answer.status_code})

    def incoming_message(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.IncomingMessageBody)
        if body.type == "text" and body.text is None:
            raise SimError(400, "invalid_request", "text: a text message needs its text")
        options = incoming.ArrivalOptions(
            mode=body.media_delivery,
            file_size=body.file_size,
            announced_size=body.announced_size,
            quote=body.quote,
            media_fails=body.media_fails,
            base_url=request.host_url.rstrip("/"),
        )
        message = self.state.incoming_message(
            instance_id,
            body.from_,
            body.text or "",
            body.type,
            push_name=body.push_name,
            addressing=body.addressing,
            options=options,
        )
        return json_answer(message)

    def incoming_call(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.IncomingCallBody)
        return json_answer({"callId": self.state.incoming_call(instance_id, body.from_, body.video)})

    def call_action(self, request: Request, instance_id: str, call_id: str, action: str) -> Response:
        details = parse_body(request, schemas.CallActionBody)
        return json_answer({"call": self.state.call_action(instance_id, call_id, action, details)})

    def call_media(self, request: Request, instance_id: str, call_id: str) -> Response:
        view = self.media.view(instance_id, call_id)
        if view is None:
            raise SimError(404, "no_media_session", "the call has no retained media session")
        return json_answer(view)

    def receipt(self, request: Request, instance_id: str, message_id: str) -> Response:
        body = parse_body(request, schemas.ReceiptBody)
        self.state.receipt(instance_id, message_id, body.status, outside_window=body.outside_window)
        return json_answer({"ok": True})

    def incoming_choice(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.IncomingChoiceBody)
        return json_answer(self.state.incoming_choice(instance_id, body.from_, body.kind, body.option_id, body.title))

    def window(self, request: Request, instance_id: str) -> Response:
        body = parse_body(request, schemas.WindowBody)
        with self.state.locked() as records:
            instance = records.instance(instance_id)
            instance.heard[body.with_.lstrip("+")] = body.at if body.at is not None else time.time()
        return json_answer({"ok": True})

    def refused(self, request: Request) -> Response:
        """Sends a server accepted and WhatsApp never delivered (a Cloud API number outside the window)."""
        with self.state.locked() as records:
            return json_answer({"messages": list(records.refused)})

    def set_template(self, request: Request, waba_id: str) -> Response:
        body = parse_body(request, schemas.TemplateBody)
        with self.state.locked() as records:
            template = meta_templates.set_template(records, waba_id, body.model_dump())
            return json_answer(template)

    def sent(self, request: Request) -> Response:
        return json_answer({"messages": self.state.sent_messages()})

    def events(self, request: Request) -> Response:
        return json_answer({"events": self.state.events(request.args.get("instance"))})

    def fail_media(self, request: Request) -> Response:
        """`{"id"}`: from now on that file fails to download: a Meta media id or an Evolution
        message id answers as one its server no longer knows, a wuzapi `DirectPath` as a failed
        download."""
        body = request.get_json(silent=True)
        media_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(media_id, str) or not media_id:
            raise SimError(400, "invalid_request", "id: the media id, message id or DirectPath")
        with self.state.locked() as records:
            records.failing_media.add(media_id)
        return json_answer({"ok": True})

    def add_fault(self, request: Request) -> Response:
        body = parse_body(request, schemas.FaultBody)
        if body.route not in self._fault_routes:
            raise SimError(400, "unknown_route", f"faults apply to provider routes: {self._fault_routes}")
        self.state.add_fault(body)
        return json_answer({"ok": True})

    def clear_faults(self, request: Request) -> Response:
        return json_answer({"cleared": self.state.clear_faults()})

    def redeliver(self, request: Request) -> Response:
        self.state.redeliver(parse_body(request, schemas.RedeliverBody).event_id)
        return json_answer({"ok": True})

    def set_global_webhook(self, request: Request) -> Response:
        self.state.set_global_webhook(parse_body(request, schemas.GlobalWebhookBody))
        return json_answer({"ok": True})

    def delete_global_webhook(self, request: Request) -> Response:
        self.state.set_global_webhook(None)
        return json_answer({"ok": True})

    def patch_capabilities(self, request: Request) -> Response:
        body = parse_body(request, schemas.CapabilitiesPatch)
        return json_answer(calls.capabilities_answer(self.state.patch_capabilities(body)))

    def hold_dials(self, request: Request) -> Response:
        self.state.hold_dials(parse_body(request, schemas.HoldDialsBody).held)
        return json_answer({"ok": True})

    def reset(self, request: Request) -> Response:
        self.dispatcher.forget_pending()
        self.state.reset()
        self.media.reset()
        return json_answer({"ok": True})

"""A WebSocket API (API Gateway v2, ProtocolType WEBSOCKET) emulator driven by template.yaml, and
its `@connections` management API. It knows none of our routes.

From the template: the `AWS::ApiGatewayV2::Api`, its `Route`s (`RouteKey` -> `Target:
integrations/<Integration>`), the `Integration`s (`IntegrationUri` naming `${Function.Arn}`),
the `RouteResponse`s and the `Stage`. Then, as API Gateway does with Lambda proxy integrations:

- the opening handshake on `/<stage>` invokes `$connect` (event type CONNECT) before answering;
  a `statusCode` other than 2xx refuses the handshake with that status;
- each text frame invokes the route `RouteSelectionExpression` (`$request.body.<field>`) names,
  else `$default` (MESSAGE); the function's `body` goes back to the caller only when the route
  has a route response (`RouteResponseSelectionExpression` or an `AWS::ApiGatewayV2::RouteResponse`),
  as AWS sends integration responses only for two-way routes; with no route at all the caller
  gets AWS's `Forbidden` frame, and a failing function AWS's `Internal server error` frame;
- a binary frame closes the connection with 1003, as API Gateway does not take binary frames;
- the socket closing (either side) invokes `$disconnect` (DISCONNECT) once the connection is
  gone: posting to it from there answers 410, as on AWS;
- a connection without a frame from its client for `idle_timeout` seconds (AWS: 10 minutes), or
  open for `max_duration` (AWS: 2 hours), is closed with 1001 "Going away". Only frames from the
  client count as activity: a console that only receives would be dropped locally first, never
  the other way around;
- API Gateway sends no keepalive pings of its own, so neither does this server.

The management API answers `POST|GET|DELETE /<stage>/@connections/<id>` on its own port, so
`boto3.client("apigatewaymanagementapi", endpoint_url=<management_url>)` works against it; a
connection that is gone answers 410 with `x-amzn-ErrorType: GoneException`, which botocore turns
into `client.exceptions.GoneException`. Request signatures are not checked locally.
"""

from __future__ import annotations

import base64
import email.utils
import json
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.server import Server as WebSocketServer
from websockets.sync.server import ServerConnection, serve

from devstack import template
from devstack.background import Background
from devstack.lambdas import Functions, FunctionsStopped
from devstack.serving import Server
from devstack.template import Intrinsic

log = logging.getLogger("devstack.websocket")

IDLE_TIMEOUT = 10 * 60.0  # API Gateway's idle connection timeout
MAX_DURATION = 2 * 60 * 60.0  # API Gateway's maximum connection duration
MAX_FRAME = 128 * 1024  # API Gateway's WebSocket message payload limit
CONNECT_TIMEOUT = 10.0  # a client that opens TCP and never sends its handshake request
CLOSE_TIMEOUT = 2.0
STOP_TIMEOUT = 5.0
ACCOUNT = "000000000000"
GOING_AWAY = 1001
UNSUPPORTED_DATA = 1003
NORMAL = 1000
NO_STATUS = 1005
CONNECT, MESSAGE, DISCONNECT = "$connect", "$default", "$disconnect"


# --- the template ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    key: str
    function: str
    two_way: bool


@dataclass(frozen=True)
class WebSocketApiDefinition:
    logical_id: str
    stage: str
    selection: tuple[str, ...]  # the body path `$request.body.<a>.<b>` names
    routes: dict[str, Route] = field(default_factory=dict)


def _ref(value: Any) -> str | None:
    if isinstance(value, Intrinsic) and value.name == "Ref":
        return str(value.value)
    if isinstance(value, Intrinsic) and value.name == "GetAtt":
        target = value.value if isinstance(value.value, str) else ".".join(value.value)
        return str(target).split(".")[0]
    return None


def _sub_text(value: Any) -> str:
    """The text of a `!Sub` (either form) or of a plain string."""
    if isinstance(value, Intrinsic) and value.name == "Sub":
        return str(value.value[0] if isinstance(value.value, list) else value.value)
    return value if isinstance(value, str) else ""


def _integration_function(properties: dict[str, Any], functions: set[str]) -> str | None:
    """The function an AWS_PROXY integration invokes: `${Function.Arn}` (or `${Function}`) in its URI."""
    uri = properties.get("IntegrationUri")
    direct = _ref(uri)
    if direct in functions:
        return direct
    text = _sub_text(uri)
    for name in functions:
        if f"${{{name}.Arn}}" in text or f"${{{name}}}" in text:
            return name
    return None


def _target_integration(target: Any) -> str | None:
    """`integrations/${LiveIntegration}` (a `!Sub`) or `!Join [/, [integrations, !Ref X]]`."""
    if isinstance(target, Intrinsic) and target.name == "Join":
        parts = target.value[1] if isinstance(target.value, list) and len(target.value) == 2 else []
        refs = [_ref(part) for part in parts]
        return next((ref for ref in refs if ref), None)
    text = _sub_text(target)
    if text.startswith("integrations/${") and text.endswith("}"):
        return text[len("integrations/${") : -1]
    return None


def websocket_apis(path: Path, functions: set[str]) -> list[WebSocketApiDefinition]:
    """Every WEBSOCKET API of the template, with its routes and stage."""
    apis = {
        logical_id: properties
        for logical_id, properties in template.resources("AWS::ApiGatewayV2::Api", path).items()
        if str(properties.get("ProtocolType", "")).upper() == "WEBSOCKET"
    }
    integrations = template.resources("AWS::ApiGatewayV2::Integration", path)
    stages = template.resources("AWS::ApiGatewayV2::Stage", path)
    responses = {
        _ref(properties.get("RouteId"))
        for properties in template.resources("AWS::ApiGatewayV2::RouteResponse", path).values()
    }
    found = []
    for api_id, properties in apis.items():
        expression = str(properties.get("RouteSelectionExpression") or "$request.body.action")
        selection = (
            tuple(expression.removeprefix("$request.body.").split("."))
            if expression.startswith("$request.body.")
            else ()
        )
        stage = next(
            (str(stage["StageName"]) for stage in stages.values() if _ref(stage.get("ApiId")) == api_id), "$default"
        )
        api = WebSocketApiDefinition(logical_id=api_id, stage=stage, selection=selection)
        for route_id, route in template.resources("AWS::ApiGatewayV2::Route", path).items():
            if _ref(route.get("ApiId")) != api_id:
                continue
            integration = _target_integration(route.get("Target"))
            function = _integration_function(integrations.get(integration or "", {}), functions)
            if function is None:
                log.warning("route %s has no Lambda integration the local stack can run", route.get("RouteKey"))
                continue
            api.routes[str(route["RouteKey"])] = Route(
                key=str(route["RouteKey"]),
                function=function,
                two_way=bool(route.get("RouteResponseSelectionExpression")) or route_id in responses,
            )
        found.append(api)
    return found


# --- connections ----------------------------------------------------------------------------


def connection_id() -> str:
    """Unique and shaped like API Gateway's (16 characters of base64 ending in `=`); URL-safe
    letters so the id is safe in a path unencoded too."""
    return base64.urlsafe_b64encode(secrets.token_bytes(11)).decode("ascii")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _iso(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _request_time(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")


@dataclass
class Session:
    """One accepted connection: what API Gateway keeps about it."""

    id: str
    connection: ServerConnection
    connected_at: int
    source_ip: str
    user_agent: str
    headers: dict[str, str]
    last_active: float = field(default_factory=time.monotonic)
    opened: float = field(default_factory=time.monotonic)
    last_active_at: int = field(default_factory=_now_ms)

    def touch(self) -> None:
        self.last_active = time.monotonic()
        self.last_active_at = _now_ms()


class _Connection(ServerConnection):
    """A server connection that carries its API Gateway session from the handshake on."""

    session: Session | None = None


class Gone(LookupError):
    """The connection is not (or no longer) open."""


class WebSocketApi:
    """Serves one WEBSOCKET API of the template on `ws://host:port/<stage>` and its management API
    on `http://host:management_port/<stage>`; 0 picks a free port. `start()`, then `stop()`."""

    def __init__(
        self,
        functions: Functions,
        definition: WebSocketApiDefinition,
        *,
        host: str = "127.0.0.1",
        port: int = 3001,
        management_port: int = 3002,
        idle_timeout: float = IDLE_TIMEOUT,
        max_duration: float = MAX_DURATION,
        region: str = "us-east-1",
    ) -> None:
        self.functions = functions
        self.definition = definition
        self.idle_timeout = idle_timeout
        self.max_duration = max_duration
        self.api_id = definition.logical_id.lower()[:10]
        self._region = region
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        try:
            self._server: WebSocketServer = serve(
                self._serve,
                host,
                port,
                process_request=self._handshake,
                create_connection=_Connection,
                server_header=None,
                compression=None,
                open_timeout=CONNECT_TIMEOUT,
                ping_interval=None,
                ping_timeout=None,
                close_timeout=CLOSE_TIMEOUT,
                max_size=MAX_FRAME,
            )
        except OSError as error:
            raise OSError(error.errno, f"WebSocket API on {host}:{port}: {error.strerror}") from error
        self._host = host
        self._threads = Background()
        self._threads.add(self._server.serve_forever, name=f"websocket-{definition.logical_id}")
        try:
            self._management = Server(
                ManagementApp(self), name=f"connections-{definition.logical_id}", host=host, port=management_port
            )
        except BaseException:
            self._server.socket.close()
            raise

    @property
    def port(self) -> int:
        return int(self._server.socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"ws://{self._host}:{self.port}/{self.definition.stage}"

    @property
    def management_url(self) -> str:
        return f"{self._management.url}/{self.definition.stage}"

    def start(self) -> WebSocketApi:
        self._threads.start()
        self._management.start()
        return self

    def stop(self) -> None:
        """Refuse new connections, close open ones (1001) and wait for their handlers to end."""
        self._management.stop()
        if not self._threads.alive():  # never started (or already stopped): only the socket to close
            self._server.socket.close()
            return
        closer = threading.Thread(target=self._server.shutdown, name="websocket-shutdown", daemon=True)
        closer.start()
        closer.join(STOP_TIMEOUT)
        if closer.is_alive():
            log.warning("WebSocket connections still closing after %s s: the stack stops without them", STOP_TIMEOUT)
        self._threads.stop(timeout=1)

    # --- what the management API does --------------------------------------------------------

    def session(self, connection: str) -> Session:
        with self._lock:
            found = self._sessions.get(connection)
        if found is None:
            raise Gone(connection)
        return found

    def post(self, connection: str, data: bytes) -> None:
        session = self.session(connection)
        try:
            session.connection.send(data.decode("utf-8"))
        except UnicodeDecodeError:
            session.connection.send(data)
        except ConnectionClosed as closed:
            raise Gone(connection) from closed

    def delete(self, connection: str) -> None:
        session = self.session(connection)
        session.connection.close(NORMAL)

    def open_connections(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    # --- the WebSocket side ------------------------------------------------------------------

    def _route(self, key: str) -> Route | None:
        return self.definition.routes.get(key)

    def _context(self, session_id: str, route_key: str, event_type: str, connected_at: int) -> dict[str, Any]:
        now = _now_ms()
        return {
            "routeKey": route_key,
            "eventType": event_type,
            "extendedRequestId": secrets.token_urlsafe(12),
            "requestTime": _request_time(now),
            "messageDirection": "IN",
            "stage": self.definition.stage,
            "connectedAt": connected_at,
            "requestTimeEpoch": now,
            "requestId": secrets.token_urlsafe(12),
            "domainName": f"127.0.0.1:{self.port}",
            "connectionId": session_id,
            "apiId": self.api_id,
        }

    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        """`$connect`: invoked before the handshake is answered; a non-2xx status refuses it."""
        path, _, query = request.path.partition("?")
        if path.rstrip("/") != f"/{self.definition.stage}":
            return _refuse(connection, HTTPStatus.FORBIDDEN, '{"message":"Forbidden"}')
        headers: dict[str, str] = {}
        multi_headers: dict[str, list[str]] = {}
        for name, value in request.headers.raw_items():
            headers[name] = value
            multi_headers.setdefault(name, []).append(value)
        source_ip = str(connection.remote_address[0])
        headers.setdefault("X-Forwarded-For", source_ip)
        multi_headers.setdefault("X-Forwarded-For", [source_ip])
        connected_at = _now_ms()
        session = Session(
            id=connection_id(),
            connection=connection,
            connected_at=connected_at,
            source_ip=source_ip,
            user_agent=request.headers.get("User-Agent", ""),
            headers=headers,
        )
        context = self._context(session.id, CONNECT, "CONNECT", connected_at)
        context["identity"] = {"sourceIp": source_ip, "userAgent": session.user_agent}
        event: dict[str, Any] = {
            "headers": headers,
            "multiValueHeaders": multi_headers,
            "requestContext": context,
            "isBase64Encoded": False,
        }
        pairs = parse_qsl(query, keep_blank_values=True)
        if pairs:
            multi_query: dict[str, list[str]] = {}
            for name, value in pairs:
                multi_query.setdefault(name, []).append(value)
            event["queryStringParameters"] = {name: values[-1] for name, values in multi_query.items()}
            event["multiValueQueryStringParameters"] = multi_query
        route = self._route(CONNECT)
        if route is not None:
            try:
                result = self.functions.invoke(route.function, event)
            except FunctionsStopped:
                return _refuse(connection, HTTPStatus.SERVICE_UNAVAILABLE, '{"message":"Service Unavailable"}')
            except Exception:
                log.exception("$connect failed", extra={"function": route.function})
                return _refuse(connection, HTTPStatus.INTERNAL_SERVER_ERROR, '{"message":"Internal server error"}')
            status = _status(result)
            if not 200 <= status < 300:
                body = result.get("body") if isinstance(result, dict) else None
                return _refuse(connection, status, body if isinstance(body, str) else _phrase(status))
        if isinstance(connection, _Connection):
            connection.session = session
        return None

    def _serve(self, connection: ServerConnection) -> None:
        """The connection's life after an accepted `$connect`: frames in, then `$disconnect`."""
        session = connection.session if isinstance(connection, _Connection) else None
        if session is None:
            return
        with self._lock:
            self._sessions[session.id] = session
        try:
            self._receive(session)
        finally:
            with self._lock:
                self._sessions.pop(session.id, None)
            self._disconnected(session)

    def _receive(self, session: Session) -> None:
        connection = session.connection
        while True:
            remaining = min(session.last_active + self.idle_timeout, session.opened + self.max_duration)
            try:
                frame = connection.recv(timeout=max(0.0, remaining - time.monotonic()))
            except TimeoutError:
                connection.close(GOING_AWAY, "Going away")
                return
            except ConnectionClosed:
                return
            if isinstance(frame, bytes):
                connection.close(UNSUPPORTED_DATA, "Binary frames are not supported")
                return
            session.touch()
            self._message(session, frame)

    def _message(self, session: Session, frame: str) -> None:
        route = self._route(self._selected_key(frame)) or self._route(MESSAGE)
        context = self._context(session.id, route.key if route else MESSAGE, "MESSAGE", session.connected_at)
        context["messageId"] = secrets.token_urlsafe(12)
        context["identity"] = {"sourceIp": session.source_ip, "userAgent": session.user_agent}
        if route is None:
            self._reply(session, _error_frame("Forbidden", session.id, context["requestId"]))
            return
        event = {"requestContext": context, "body": frame, "isBase64Encoded": False}
        try:
            result = self.functions.invoke(route.function, event)
        except FunctionsStopped:
            return
        except Exception:
            log.exception("%s failed", route.key, extra={"function": route.function})
            self._reply(session, _error_frame("Internal server error", session.id, context["requestId"]))
            return
        if route.two_way and isinstance(result, dict) and isinstance(result.get("body"), str):
            self._reply(session, result["body"])

    def _selected_key(self, frame: str) -> str:
        """The route key `$request.body.<path>` selects, or `$default`."""
        if not self.definition.selection:
            return MESSAGE
        try:
            value: Any = json.loads(frame)
        except ValueError:
            return MESSAGE
        for part in self.definition.selection:
            if not isinstance(value, dict):
                return MESSAGE
            value = value.get(part)
        return value if isinstance(value, str) and value in self.definition.routes else MESSAGE

    @staticmethod
    def _reply(session: Session, text: str) -> None:
        try:
            session.connection.send(text)
        except ConnectionClosed:
            return

    def _disconnected(self, session: Session) -> None:
        route = self._route(DISCONNECT)
        if route is None:
            return
        connection = session.connection
        code = connection.close_code if connection.close_code is not None else NO_STATUS
        reason = connection.close_reason or ""
        context = self._context(session.id, DISCONNECT, "DISCONNECT", session.connected_at)
        context["identity"] = {"sourceIp": session.source_ip, "userAgent": session.user_agent}
        context["disconnectStatusCode"] = code
        context["disconnectReason"] = reason
        event = {
            "headers": {"Host": f"127.0.0.1:{self.port}", "X-Forwarded-For": session.source_ip},
            "multiValueHeaders": {"Host": [f"127.0.0.1:{self.port}"], "X-Forwarded-For": [session.source_ip]},
            "requestContext": context,
            "isBase64Encoded": False,
        }
        try:
            self.functions.invoke(route.function, event)
        except FunctionsStopped:
            return
        except Exception:
            log.exception("$disconnect failed", extra={"function": route.function})


def _status(result: Any) -> int:
    """The proxy response's status; a function that returns no status accepts the connection."""
    if isinstance(result, dict) and "statusCode" in result:
        try:
            return int(result["statusCode"])
        except (TypeError, ValueError):
            return int(HTTPStatus.BAD_GATEWAY)
    return int(HTTPStatus.OK)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Refused"


def _refuse(connection: ServerConnection, status: int, body: str) -> Response:
    """The handshake answered with `status` (any code: a function may return one HTTPStatus lacks)."""
    payload = body.encode()
    headers = Headers(
        [
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Connection", "close"),
            ("Content-Length", str(len(payload))),
            ("Content-Type", "application/json"),
        ]
    )
    return Response(status, _phrase(status), headers, payload)


def _error_frame(message: str, connection: str, request_id: str) -> str:
    return json.dumps({"message": message, "connectionId": connection, "requestId": request_id})


# --- the management API -----------------------------------------------------------------------


class ManagementApp:
    """WSGI app: `/<stage>/@connections/<id>`, POST (send), GET (describe), DELETE (close)."""

    def __init__(self, api: WebSocketApi) -> None:
        self.api = api

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        raw_path = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        path = raw_path.partition("?")[0]
        prefix = f"/{self.api.definition.stage}/@connections/"
        method = environ["REQUEST_METHOD"]
        if not path.startswith(prefix) or "/" in path[len(prefix) :] or path == prefix:
            return _answer(start_response, 403, "ForbiddenException", {"message": "Forbidden"})
        connection = unquote(path[len(prefix) :])
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = bytes(environ["wsgi.input"].read(length)) if length else b""
        try:
            if method == "POST":
                if len(body) > MAX_FRAME:
                    message = f"Message too long. Max bytes: {MAX_FRAME}"
                    return _answer(start_response, 413, "PayloadTooLargeException", {"message": message})
                self.api.post(connection, body)
                return _answer(start_response, 200, None, None)
            if method == "GET":
                session = self.api.session(connection)
                described = {
                    "connectedAt": _iso(session.connected_at),
                    "identity": {"sourceIp": session.source_ip, "userAgent": session.user_agent},
                    "lastActiveAt": _iso(session.last_active_at),
                }
                return _answer(start_response, 200, None, described)
            if method == "DELETE":
                self.api.delete(connection)
                return _answer(start_response, 204, None, None)
        except Gone:
            return _answer(start_response, 410, "GoneException", {"message": "Gone"})
        return _answer(start_response, 403, "ForbiddenException", {"message": "Forbidden"})


def _answer(start_response: Any, status: int, error: str | None, body: Any) -> list[bytes]:
    payload = b"" if body is None else json.dumps(body).encode()
    headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(payload))),
        ("x-amzn-RequestId", str(uuid.uuid4())),
    ]
    if error:
        headers.append(("x-amzn-ErrorType", error))
    start_response(f"{status} {_phrase(status)}", headers)
    return [payload]

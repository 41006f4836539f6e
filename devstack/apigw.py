"""An HTTP API (API Gateway v2) emulator driven by template.yaml: routes, Lambda authorizer,
payload format 2.0 events, and the proxy response format. It knows none of our routes.

The local gateway serves it over HTTP; integration tests call `HttpApi.handle` directly.

What an HTTP API does before any function runs, as captured from a live one
(tests/contracts/apigateway/SOURCES.md) and as its quotas are documented:

- the path is percent-decoded before routes are matched, and the integration gets it decoded:
  `rawPath`, `requestContext.http.path` and `pathParameters` alike. It is decoded twice: a
  decoded `?` ends the path, a `%` left after the first pass must start an escape again
  (`%25` alone is refused with 400), and `%252F` ends up a `/`;
- the request line and the header values together hold at most 10,240 bytes; a body at most
  10 MB (the gateway, devstack/gateway.py), and the event handed to a Lambda integration at most
  Lambda's 6 MB invocation payload (the whole event: body, headers and context): over it the
  function never runs and the client gets 413;
- HEAD is a method like any other: it matches a HEAD or ANY route, else `$default`; the answer
  keeps its status and headers, and its body is not sent.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, unquote

from devstack import template
from devstack.lambdas import Functions, FunctionsStopped, InvocationTooLarge
from devstack.template import Intrinsic

log = logging.getLogger("devstack.apigw")
DEFAULT_ROUTE_PATH = "/$default"
DEFAULT_ROUTE_KEY = "$default"
# "Total combined size of request line and header values" (HTTP API quotas).
MAX_REQUEST_LINE_AND_HEADERS = 10240
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str
    authorizer: str | None
    pattern: re.Pattern[str] = field(compare=False)

    @property
    def key(self) -> str:
        return DEFAULT_ROUTE_KEY if self.is_default else f"{self.method} {self.path}"

    @property
    def is_default(self) -> bool:
        """The `$default` route (SAM `Path: /$default`): what no other route matches."""
        return self.path == DEFAULT_ROUTE_PATH


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class Authorizer:
    function: str
    identity_headers: tuple[str, ...]
    simple_responses: bool


def _compile(path: str) -> re.Pattern[str]:
    regex = ""
    for part in re.split(r"(\{[^}]+\})", path):
        if part.startswith("{") and part.endswith("+}"):
            regex += f"(?P<{part[1:-2]}>.+)"
        elif part.startswith("{"):
            regex += f"(?P<{part[1:-1]}>[^/]+)"
        else:
            regex += re.escape(part)
    return re.compile(f"^{regex}$")


def _ref(value: Any) -> str | None:
    if isinstance(value, Intrinsic):
        if value.name == "GetAtt":
            target = value.value if isinstance(value.value, str) else ".".join(value.value)
            return target.split(".")[0]
        if value.name == "Ref":
            return str(value.value)
    return None


class HttpApi:
    def __init__(self, functions: Functions | None = None, api_id: str = "local") -> None:
        self.functions = functions or Functions()
        self.api_id = api_id
        self.routes: list[Route] = []
        self.authorizers: dict[str, Authorizer] = {}
        self._default_authorizer: str | None = None
        self._read_template()

    # --- template ----------------------------------------------------------------------

    def _read_template(self) -> None:
        for properties in template.resources("AWS::Serverless::HttpApi", self.functions.path).values():
            auth = properties.get("Auth") or {}
            self._default_authorizer = auth.get("DefaultAuthorizer")
            for name, definition in (auth.get("Authorizers") or {}).items():
                identity = definition.get("Identity") or {}
                self.authorizers[name] = Authorizer(
                    function=_ref(definition.get("FunctionArn")) or "",
                    identity_headers=tuple(header.lower() for header in identity.get("Headers", [])),
                    simple_responses=bool(definition.get("EnableSimpleResponses")),
                )
        for function in self.functions.names():
            for event in (self.functions.definition(function).get("Events") or {}).values():
                if event.get("Type") != "HttpApi":
                    continue
                properties = event.get("Properties") or {}
                authorizer = (properties.get("Auth") or {}).get("Authorizer", self._default_authorizer)
                path = properties["Path"]
                self.routes.append(
                    Route(
                        method=properties.get("Method", "ANY").upper(),
                        path=path,
                        function=function,
                        authorizer=None if authorizer == "NONE" else authorizer,
                        pattern=_compile(path),
                    )
                )
        # API Gateway prefers the most specific route: literal segments over variables.
        self.routes.sort(key=lambda route: (route.path.count("{"), -len(route.path)))

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route of a request for the decoded `path` (see `decoded_path`), and its parameters."""
        default = None
        for route in self.routes:
            if route.is_default:
                default = route
                continue
            if route.method not in (method.upper(), "ANY"):
                continue
            found = route.pattern.match(path)
            if found:
                return route, found.groupdict()
        return (default, {}) if default else None

    # --- requests ----------------------------------------------------------------------

    def handle(
        self,
        method: str,
        raw_path: str,
        *,
        query: str = "",
        headers: dict[str, str] | list[tuple[str, str]] | None = None,
        body: bytes = b"",
        source_ip: str = "127.0.0.1",
    ) -> HttpResponse:
        pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
        answer = self._answer(method, raw_path, query=query, pairs=pairs, body=body, source_ip=source_ip)
        if method.upper() == "HEAD":
            # What a HEAD answer says of its body: its length, never its bytes.
            answer.headers["content-length"] = str(len(answer.body))
            answer.body = b""
        return answer

    def _answer(
        self, method: str, raw_path: str, *, query: str, pairs: list[tuple[str, str]], body: bytes, source_ip: str
    ) -> HttpResponse:
        request_line = f"{method} {raw_path}{'?' + query if query else ''} HTTP/1.1"
        if len(request_line.encode()) + sum(len(value.encode()) for _, value in pairs) > MAX_REQUEST_LINE_AND_HEADERS:
            return _message(431, "Request Header Fields Too Large")
        path = decoded_path(raw_path)
        if path is None:
            return _message(400, "Bad Request")
        matched = self.match(method, path)
        if matched is None:
            return _message(404, "Not Found")
        route, path_parameters = matched
        event = self.event(
            route=route,
            method=method,
            raw_path=path,
            query=query,
            header_pairs=pairs,
            body=body,
            path_parameters=path_parameters,
            source_ip=source_ip,
        )
        if route.authorizer:
            denied = self._authorize(route, event)
            if denied:
                return denied
        try:
            result = self.functions.invoke(route.function, event)
        except InvocationTooLarge:
            # The integration refused the event (over Lambda's 6 MB): the function never ran.
            return _message(413, "Request Entity Too Large")
        except FunctionsStopped:
            return _message(503, "Service Unavailable")
        except Exception:
            log.exception("function failed", extra={"function": route.function, "route": route.key})
            return _message(500, "Internal Server Error")
        return _proxy_response(result)

    def event(
        self,
        *,
        route: Route,
        method: str,
        raw_path: str,
        query: str,
        header_pairs: list[tuple[str, str]],
        body: bytes,
        path_parameters: dict[str, str],
        source_ip: str,
    ) -> dict[str, Any]:
        """A payload format 2.0 event, as API Gateway sends it to the integration (`raw_path`
        already decoded, as API Gateway hands it on)."""
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for name, value in header_pairs:
            lowered = name.lower()
            if lowered == "cookie":
                cookies.extend(part.strip() for part in value.split(";") if part.strip())
                continue
            headers[lowered] = f"{headers[lowered]},{value}" if lowered in headers else value
        query_parameters: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            query_parameters[name] = f"{query_parameters[name]},{value}" if name in query_parameters else value
        now = datetime.now(UTC)
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": route.key,
            "rawPath": raw_path,
            "rawQueryString": query,
            "headers": headers,
            "requestContext": {
                "accountId": "000000000000",
                "apiId": self.api_id,
                "domainName": headers.get("host", "127.0.0.1"),
                "domainPrefix": headers.get("host", "127.0.0.1").split(".")[0],
                "http": {
                    "method": method.upper(),
                    "path": raw_path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": source_ip,
                    "userAgent": headers.get("user-agent", ""),
                },
                "requestId": str(uuid.uuid4()),
                "routeKey": route.key,
                "stage": "$default",
                "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "timeEpoch": int(now.timestamp() * 1000),
            },
            "isBase64Encoded": False,
        }
        if cookies:
            event["cookies"] = cookies
        if query_parameters:
            event["queryStringParameters"] = query_parameters
        if path_parameters:
            event["pathParameters"] = path_parameters
        if body:
            try:
                event["body"] = body.decode("utf-8")
            except UnicodeDecodeError:
                event["body"] = base64.b64encode(body).decode("ascii")
                event["isBase64Encoded"] = True
        return event

    def _authorize(self, route: Route, event: dict[str, Any]) -> HttpResponse | None:
        authorizer = self.authorizers[route.authorizer or ""]
        identity = [event["headers"].get(header, "") for header in authorizer.identity_headers]
        if not all(identity):
            return _message(401, "Unauthorized")
        request = {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": (
                f"arn:aws:execute-api:us-east-1:000000000000:{self.api_id}/$default/"
                f"{event['requestContext']['http']['method']}{event['rawPath']}"
            ),
            "identitySource": identity,
            **{name: value for name, value in event.items() if name not in ("body", "isBase64Encoded", "version")},
        }
        try:
            answer = self.functions.invoke(authorizer.function, request)
        except FunctionsStopped:
            return _message(503, "Service Unavailable")
        except Exception as error:
            return (
                _message(401, "Unauthorized")
                if str(error) == "Unauthorized"
                else _message(500, "Internal Server Error")
            )
        if not isinstance(answer, dict) or not answer.get("isAuthorized"):
            return _message(403, "Forbidden")
        event["requestContext"]["authorizer"] = {"lambda": answer.get("context") or {}}
        return None


def decoded_path(raw_path: str) -> str | None:
    """The path as an HTTP API routes it and hands it on, from the path as sent; None where it
    answers 400 (a `%` that starts no escape, or an escape that is not UTF-8, in either pass)."""
    once = _unquote_strictly(raw_path)
    if once is None:
        return None
    return _unquote_strictly(once.split("?", 1)[0])


def _unquote_strictly(text: str) -> str | None:
    if _BAD_ESCAPE.search(text):
        return None
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        return None


def _message(status: int, message: str) -> HttpResponse:
    return HttpResponse(status, {"content-type": "application/json"}, json.dumps({"message": message}).encode())


def _proxy_response(result: Any) -> HttpResponse:
    """Payload 2.0 response rules: a dict with statusCode is a proxy response, else JSON 200."""
    if not (isinstance(result, dict) and "statusCode" in result):
        return HttpResponse(200, {"content-type": "application/json"}, json.dumps(result).encode())
    headers = {name.lower(): str(value) for name, value in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name.lower()] = ",".join(str(value) for value in values)
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode()
    return HttpResponse(int(result["statusCode"]), headers, body, list(result.get("cookies") or []))

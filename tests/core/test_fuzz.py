"""Bad input never gets a server error, anywhere, and every refusal is our error body.

Against a running local stack (real HTTP through the local gateway and the Lambda authorizer),
with a valid API key of every scope so requests reach the handlers:

- schemathesis over every operation of the OpenAPI document the API serves, data that fits the
  schema and data that does not;
- hostile inputs on every operation: bodies nested thousands deep, over the size limit, not
  UTF-8, with NUL and other control characters, NaN, lone surrogate escapes, a non-JSON media
  type; hostile path and query values;
- the same bodies, correctly signed, to the provider webhook (wuzapi HMAC and the calls-capable
  server's envelope) and, with the instance's token, to the reply webhook.

Every 4xx body is `{"error": "<code>", "message": "..."}` except the few API Gateway writes
itself (the authorizer's 401/403, its payload limit), which it writes as `{"message": "..."}`.
The run is derandomized (the same requests on every run) and bounded to a few examples per
operation so it fits a CI minute on two cores.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from devstack.stack import LocalStack
from tests.support.openapi import operations_of
from tests.support.stacks import stack_on_free_ports

EXAMPLES_PER_MODE = 2  # with both modes, each key scope once per operation
DEEP = 5000
# What API Gateway answers itself, before any function runs (HTTP APIs cannot change these bodies).
GATEWAY_BODIES = {
    400: {"message": "Bad Request"},  # a path whose percent-decoding fails
    401: {"message": "Unauthorized"},
    403: {"message": "Forbidden"},
    413: {"message": "Request Entity Too Large"},
    429: {"message": "Too Many Requests"},
    431: {"message": "Request Header Fields Too Large"},
}
HOSTILE_PATH_VALUES = ["%00", "%C3%28", "a" * 2000, "%E2%80%AE", "..%2F..", "%0D%0Ax"]
HOSTILE_QUERY_VALUES = ["%00", "%C3%28", "x" * 5000, "9" * 400, "1e999"]


@dataclass
class Tally:
    tried: int = 0
    server_errors: list[str] = field(default_factory=list)
    foreign_bodies: list[str] = field(default_factory=list)

    def record(self, label: str, status: int, body: bytes) -> None:
        self.tried += 1
        if status >= 500:
            self.server_errors.append(f"{label} -> {status} {body[:300]!r}")
        elif status >= 400 and not is_our_error_body(status, body):
            self.foreign_bodies.append(f"{label} -> {status} {body[:300]!r}")


def is_our_error_body(status: int, body: bytes) -> bool:
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    if parsed == GATEWAY_BODIES.get(status):
        return True
    return isinstance(parsed, dict) and isinstance(parsed.get("error"), str) and isinstance(parsed.get("message"), str)


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    local = stack_on_free_ports(
        "fuzz", environment={"PROVIDER_TIMEOUT_SECONDS": "1", "POWERTOOLS_LOG_LEVEL": "CRITICAL"}
    ).start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def http(stack: LocalStack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.api_url, timeout=30) as client:
        yield client


def keys(stack: LocalStack) -> list[str]:
    demo = stack.demo
    assert demo is not None
    return [stack.platform_key, demo.admin_key, demo.agent_key, demo.send_key]


def known_path_values(stack: LocalStack) -> dict[str, str]:
    """Path parameters that name real objects, so hostile bodies reach the handlers."""
    demo = stack.demo
    assert demo is not None
    return {
        "owner_tag": demo.owner_tag,
        "key_id": demo.send_key_id,
        "number_id": demo.numbers[0]["id"],
        "provider_id": demo.provider_id,
        "name": demo.instances[0].name,
        "instance": demo.instances[0].name,
        "call_id": "call-1",
        "message_id": "message-1",
    }


def hostile_bodies(properties: list[str]) -> list[tuple[str, bytes, str]]:
    """(label, body, content type): each is refused, none is a server error."""

    def every_field(value: Any) -> bytes:
        return json.dumps({name: value for name in properties or ["name"]}).encode()

    return [
        ("deep array", b"[" * DEEP + b"]" * DEEP, "application/json"),
        ("deep object", b'{"a":' * DEEP + b"1" + b"}" * DEEP, "application/json"),
        ("deep, unclosed", b'{"a":[' * DEEP, "application/json"),
        ("over 256 KB", every_field("x" * 300_000), "application/json"),
        ("not UTF-8", b'{"name": "\xff\xfe\xc3\x28"}', "application/json"),
        ("NUL in every field", every_field("a\u0000b"), "application/json"),
        ("C0 and C1 controls", every_field("a\u001b[31m\u0085\u009bb"), "application/json"),
        ("raw control in a string", b'{"name": "a\x01b"}', "application/json"),
        ("lone surrogate", every_field("\ud800"), "application/json"),
        ("NaN", b'{"name": NaN, "limit": Infinity}', "application/json"),
        ("huge integer", every_field(10**300), "application/json"),
        ("wrong types", every_field([{"x": None}]), "application/json"),
        ("not JSON", b"{nope", "application/json"),
        ("text/plain", b'{"name":"x"}', "text/plain"),
        ("form", b"name=%00&x=1", "application/x-www-form-urlencoded"),
    ]


def body_properties(document: dict[str, Any], operation: dict[str, Any]) -> list[str]:
    schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    ref = schema.get("$ref", "")
    if ref:
        schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return list(schema.get("properties", {}))


@dataclass
class Fuzzer:
    """Sends bad input with each key scope in turn and tallies the answers."""

    stack: LocalStack
    http: httpx.Client
    document: dict[str, Any]
    tally: Tally = field(default_factory=Tally)

    def __post_init__(self) -> None:
        self.keys = keys(self.stack)
        self.known = known_path_values(self.stack)

    def send(self, label: str, method: str, target: str, body: bytes = b"", **headers: str) -> None:
        key = self.keys[self.tally.tried % len(self.keys)]
        answer = self.http.request(method, target, content=body, headers={"authorization": f"Bearer {key}", **headers})
        self.tally.record(label, answer.status_code, answer.content)

    def generated(self, operation: Any, mode: GenerationMode) -> None:
        """schemathesis's own cases for one operation: data that fits the schema, or that does not."""

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES_PER_MODE,
            derandomize=True,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            key = self.keys[self.tally.tried % len(self.keys)]
            response = case.call(base_url=self.stack.api_url, headers={"authorization": f"Bearer {key}"})
            self.tally.record(f"{operation.label} [{mode.value}]", response.status_code, response.content)

        try:
            run()
        except Exception as error:  # an operation no negative value can be made for: nothing sent
            if "Unsatisfiable" not in type(error).__name__ and "generat" not in str(error).lower():
                raise

    def hostile(self, path: str, method: str, operation: dict[str, Any]) -> None:
        """Hostile bodies to real objects, hostile path values and hostile query values."""
        names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
        # A DELETE of real objects would remove what the other requests need.
        known = {} if method == "delete" else self.known

        def target(hostile: dict[str, str]) -> str:
            filled = path
            for name in names:
                filled = filled.replace("{" + name + "}", hostile.get(name) or quote(known.get(name, "x"), safe=""))
            return filled

        label = f"{method.upper()} {path}"
        if operation.get("requestBody"):
            for what, body, media_type in hostile_bodies(body_properties(self.document, operation)):
                self.send(f"{label} {what}", method, target({}), body, **{"content-type": media_type})
        for name in names:
            for value in HOSTILE_PATH_VALUES:
                self.send(f"{label} path {name}={value[:20]}", method, target({name: value}))
        queries = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"] or ["unknown"]
        for name in queries:
            for value in HOSTILE_QUERY_VALUES:
                self.send(f"{label} query {name}={value[:20]}", method, f"{target({})}?{name}={value}")

    def webhooks(self) -> None:
        """The same bodies, correctly signed, to the provider webhook; with the token, to the reply one."""
        demo = self.stack.demo
        assert demo is not None
        instance = demo.instances[0].name
        token = self.http.post(
            f"/api/instances/{instance}/webhook-secret", headers={"authorization": f"Bearer {demo.admin_key}"}
        ).json()["secret"]
        wuzapi_id, wuzapi_secret = demo.providers["wuzapi"], demo.other_secrets[0]
        bodies = hostile_bodies(["type", "event", "eventId", "instanceId", "data", "content", "message_type"])
        bodies.append(("over 1 MB", b'{"type":"Message","x":"' + b"x" * (1024 * 1024) + b'"}', "application/json"))
        # a valid event that reaches storage, 950 KB of it media as base64 (as providers post it)
        event = {
            "event": "message",
            "eventId": f"fuzz-{uuid.uuid4().hex}",
            "instanceId": demo.instances[0].sim_id,
            "data": {"id": "fuzz-media", "from": "5511988887777", "text": "olá", "base64": "QUJD" * 243_000},
        }
        bodies.append(("950 KB event with media", json.dumps(event).encode(), "application/json"))
        for what, body, media_type in bodies:
            stamp = str(int(time.time()))
            signed = hmac.new(demo.webhook_secret.encode(), stamp.encode() + b"." + body, hashlib.sha256)
            deliveries = {
                f"/webhooks/{demo.provider_id}": {
                    "x-webhook-timestamp": stamp,
                    "x-webhook-signature": f"v1={signed.hexdigest()}",
                },
                f"/webhooks/{wuzapi_id}": {
                    "x-hmac-signature": hmac.new(wuzapi_secret.encode(), body, hashlib.sha256).hexdigest()
                },
                f"/api/tenants/{demo.owner_tag}/instances/{instance}/webhook?token={quote(token)}": {},
            }
            for target, headers in deliveries.items():
                answer = self.http.post(target, content=body, headers={**headers, "content-type": media_type})
                self.tally.record(f"POST {target.split('?')[0]} {what}", answer.status_code, answer.content)


@pytest.mark.stack
def test_bad_input_anywhere_gets_no_server_error_and_our_error_body(stack: LocalStack, http: httpx.Client) -> None:
    started = time.monotonic()
    document = http.get("/api/openapi.json").json()
    fuzzer = Fuzzer(stack, http, document)

    operations = operations_of(schemathesis.openapi.from_dict(document))
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzzer.generated(operation, mode)
    timings = {"schemathesis": time.monotonic() - started}
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            fuzzer.hostile(path, method, operation)
    timings["hostile"] = time.monotonic() - started - sum(timings.values())
    fuzzer.webhooks()
    timings["webhooks"] = time.monotonic() - started - sum(timings.values())
    # routes that do not exist, or exist for another method
    for method, target in [("GET", "/api/nope"), ("DELETE", "/api/messages"), ("PATCH", "/api/tenants"), ("GET", "/")]:
        fuzzer.send(f"{method} {target}", method, target)

    tally = fuzzer.tally
    print(
        f"fuzz: {len(operations)} operations, {tally.tried} bad inputs tried, {len(tally.server_errors)} 5xx, "
        f"{len(tally.foreign_bodies)} other error bodies, {time.monotonic() - started:.1f} s "
        f"({', '.join(f'{part} {seconds:.1f} s' for part, seconds in timings.items())})"
    )
    assert len(operations) == sum(len(methods) for methods in document["paths"].values())
    assert not tally.server_errors, "\n".join(tally.server_errors[:40])
    assert not tally.foreign_bodies, "\n".join(tally.foreign_bodies[:40])

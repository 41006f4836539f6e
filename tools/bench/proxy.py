"""AWS requests per pool send as the network sees them: a counting proxy in front of the local
stack's AWS endpoint, checked against the in-process benchmark (`tools/bench/workloads.py`).

The local stack runs whole (`devstack.stack.LocalStack`): moto server as AWS, the gateway, the
event source mapping's pollers, the EventBridge rules, the provider simulator. Every client of the
stack and of its functions talks to the proxy (`LocalStack(aws_front=...)`), which forwards each
request byte for byte (SigV4 signs what the functions sent, so nothing may change) and counts it
by `service.operation`: the `X-Amz-Target` of a JSON protocol (DynamoDB, SQS, EventBridge, SSM),
the `Action` of a query protocol, the path otherwise; the service is the credential scope's.

Whose request it was:
- the local stack's own machinery (the event source mapping's receives and deletes, the
  provisioning) says so in its user agent (`switchboard-devstack/<part>`, set where devstack makes
  those clients);
- every other request is the functions'. A function's clients are shared by every function in
  this process, as the layer's modules are, so the wire cannot tell which function made one: the
  run labels each request with the function whose invocation sent it (`Attribution`, a header
  the proxy reads and strips before forwarding). The label names; it never counts: what is
  counted is what arrived at the proxy.

A key in pool mode over the seeded tenant's three numbers, with a client webhook, sends
`MESSAGES` messages to new recipients (affinity miss), then again to the same ones (affinity hit),
through `POST /api/messages`; a round ends once every message's `message.sent` webhook has arrived
(the status change is told after the write that made it SENT commits) and the functions are idle.
Only requests between a round's start and its end are counted: the stack's start, the seeding and
a warm-up send (every function loaded, the key's configuration cached) are not.

The benchmark's figures for the same functions come from its own sends workload run in this
process just before (in-process moto, a recording fake provider, receipts between the rounds).

`python -m tools.bench proxy`.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from botocore.endpoint import Endpoint

from devstack.aws_endpoint import OWN_AGENT
from devstack.lambdas import Functions
from devstack.stack import LocalStack
from switchboard.core.observability import logger
from tools.bench.measurements import Figures

MESSAGES = 20
# The functions measured against the benchmark: the send path without its receipts.
SEND_PATH = ("AuthorizerFunction", "MessagesFunction", "SendWorkerFunction")
FUNCTIONS, LOCAL_STACK = "functions", "local stack"
UNATTRIBUTED = "unattributed"  # a function's request from a thread outside any invocation
FUNCTION_HEADER = "X-Switchboard-Invoked-By"  # the run's label, stripped by the proxy
QUOTAS = {"requestsPerSecond": 2000, "burst": 4000, "keyRequestsPerSecond": 1000, "keyBurst": 2000}
ROUND_TIMEOUT = 180.0
QUIET_SECONDS = 1.5  # idle this long, the functions have nothing left in flight (a poll is 50 ms)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


@dataclass(frozen=True, order=True)
class Seen:
    group: str  # FUNCTIONS or LOCAL_STACK
    who: str  # the function's logical id, UNATTRIBUTED, or the local stack's part
    operation: str  # service.operation


def operation_of(method: str, path: str, headers: Any, body: bytes) -> str:
    """`service.operation` of one AWS request, read from the request alone."""
    service = _signing_service(str(headers.get("Authorization") or ""))
    target = headers.get("X-Amz-Target")
    if target:
        return f"{service}.{str(target).rsplit('.', 1)[-1]}"
    split = urlsplit(path)
    action = parse_qs(split.query).get("Action")
    if not action and "x-www-form-urlencoded" in str(headers.get("Content-Type") or ""):
        action = parse_qs(body.decode("utf-8", "replace")).get("Action")
    if action:
        return f"{service}.{action[0]}"
    return f"{service}.{method} {split.path}"


def _signing_service(authorization: str) -> str:
    """The service of SigV4's credential scope (`Credential=<key>/<date>/<region>/<service>/aws4_request`)."""
    _, found, rest = authorization.partition("Credential=")
    parts = rest.split(",", 1)[0].split("/")
    return parts[3] if found and len(parts) > 3 else "?"


def whose(user_agent: str, label: str | None) -> tuple[str, str]:
    """(group, who) of a request from its user agent and the run's label."""
    for token in user_agent.split():
        if token.startswith(f"{OWN_AGENT}/"):
            return LOCAL_STACK, token.split("/", 1)[1]
    return FUNCTIONS, label or UNATTRIBUTED


class CountingProxy:
    """A reverse proxy on loopback in front of `upstream`, counting each request that arrives
    while a window is open (`window()`)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host, self._port = host, port
        self._upstream: tuple[str, int] | None = None
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()
        self._windows: list[Counter[Seen]] = []
        self.url = ""

    def in_front_of(self, upstream: str) -> str:
        """Start forwarding to `upstream`; returns the proxy's URL (`LocalStack(aws_front=...)`)."""
        split = urlsplit(upstream)
        self._upstream = (split.hostname or "127.0.0.1", split.port or 80)
        self._server = ThreadingHTTPServer((self._host, self._port), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="aws-proxy", daemon=True).start()
        self.url = f"http://{self._host}:{self._server.server_address[1]}"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @contextlib.contextmanager
    def window(self) -> Iterator[Counter[Seen]]:
        """Counts every request that arrives until the block ends."""
        seen: Counter[Seen] = Counter()
        with self._lock:
            self._windows.append(seen)
        try:
            yield seen
        finally:
            with self._lock:
                self._windows.remove(seen)

    def _count(self, seen: Seen) -> None:
        with self._lock:
            for window in self._windows:
                window[seen] += 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # botocore keeps its connections open

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                label = self.headers.get(FUNCTION_HEADER)
                group, who = whose(str(self.headers.get("User-Agent") or ""), label)
                proxy._count(Seen(group, who, operation_of(self.command, self.path, self.headers, body)))
                assert proxy._upstream is not None
                upstream = http.client.HTTPConnection(*proxy._upstream, timeout=60)
                try:
                    # The request line, headers (names, values and order) and body as they came.
                    upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    for name, value in self.headers.raw_items():
                        if name.lower() != FUNCTION_HEADER.lower():
                            upstream.putheader(name, value)
                    upstream.endheaders(body or None)
                    answer = upstream.getresponse()
                    data = answer.read()
                    self.send_response_only(answer.status, answer.reason)
                    for name, value in answer.getheaders():
                        if name.lower() not in HOP_BY_HOP:
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    upstream.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _forward

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


class Attribution:
    """Labels each AWS request with the function whose invocation sent it, and counts what
    botocore sent to `url` (the test's check of the proxy's count)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._windows: list[Counter[Seen]] = []
        self.url = ""

    @contextlib.contextmanager
    def on(self) -> Iterator[None]:
        original_invoke, original_send = Functions.invoke, Endpoint._do_get_response
        attribution = self

        def invoke(self: Functions, logical_id: str, event: Any) -> Any:
            previous = getattr(attribution._local, "function", None)
            attribution._local.function = logical_id
            try:
                return original_invoke(self, logical_id, event)
            finally:
                attribution._local.function = previous

        def send(endpoint: Endpoint, request: Any, operation_model: Any, context: Any) -> Any:
            label = getattr(attribution._local, "function", None)
            if label:
                request.headers[FUNCTION_HEADER] = label  # after signing: not part of the signature
            if attribution.url and str(request.url).startswith(attribution.url):
                agent = request.headers.get("User-Agent") or b""
                agent = agent.decode() if isinstance(agent, bytes) else str(agent)
                group, who = whose(agent, label)
                name = f"{operation_model.service_model.signing_name}.{operation_model.name}"
                with attribution._lock:
                    for window in attribution._windows:
                        window[Seen(group, who, name)] += 1
            return original_send(endpoint, request, operation_model, context)

        Functions.invoke = invoke  # type: ignore[method-assign]  # labels the invocation's thread while on
        Endpoint._do_get_response = send  # each attempt, as botocore sends it (botocore is untyped)
        try:
            yield
        finally:
            Functions.invoke = original_invoke  # type: ignore[method-assign]  # the real method put back
            Endpoint._do_get_response = original_send  # the real method put back

    @contextlib.contextmanager
    def window(self) -> Iterator[Counter[Seen]]:
        sent: Counter[Seen] = Counter()
        with self._lock:
            self._windows.append(sent)
        try:
            yield sent
        finally:
            with self._lock:
                self._windows.remove(sent)


class SentWebhooks:
    """The client webhook endpoint of the run's key: which messages have told `message.sent`."""

    def __init__(self) -> None:
        self.sent: set[str] = set()
        self._changed = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    payload = json.loads(raw)
                except ValueError:
                    payload = {}
                if payload.get("event") == "message.sent":
                    with outer._changed:
                        outer.sent.add(str(payload.get("data", {}).get("messageId")))
                        outer._changed.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/client-webhooks"
        threading.Thread(target=self._server.serve_forever, name="proxy-client-webhooks", daemon=True).start()

    def wait(self, ids: set[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not ids <= self.sent:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{len(ids - self.sent)} of {len(ids)} messages not SENT after {timeout} s")
                self._changed.wait(remaining)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Round:
    name: str
    messages: int
    seen: Counter[Seen] = field(default_factory=Counter)  # what the proxy counted
    sent: Counter[Seen] = field(default_factory=Counter)  # what botocore sent to the proxy


@dataclass
class _Driver:
    stack: LocalStack
    http: httpx.Client
    webhooks: SentWebhooks
    key: str = ""

    def call(self, method: str, path: str, key: str, body: Any = None, expect: tuple[int, ...] = (200,)) -> Any:
        answer = self.http.request(method, path, json=body, headers={"authorization": f"Bearer {key}"})
        if answer.status_code not in expect:
            raise RuntimeError(f"{method} {path} answered {answer.status_code}: {answer.text[:300]}")
        return answer.json() if answer.content else None

    def arrange(self) -> None:
        """A send key in pool mode over the seeded tenant's three numbers, with a client webhook."""
        demo, platform = self.stack.demo, self.stack.platform_key
        assert demo is not None
        self.call("PUT", f"/api/tenants/{demo.owner_tag}/quotas", platform, QUOTAS)
        body = {"name": "proxy", "scopes": ["send"], "defaultNumber": demo.numbers[0]["number"]}
        made = self.call("POST", "/api/api-keys", demo.admin_key, {**body, "webhookUrl": self.webhooks.url}, (201,))
        self.key = made["key"]
        path = f"/api/api-keys/{made['id']}"
        self.call("PUT", f"{path}/selection-mode", demo.admin_key, {"numberSelectionMode": "pool"})
        for number in demo.numbers[:3]:
            self.call("POST", f"{path}/pool", demo.admin_key, {"whatsappNumberId": number["id"]}, (200, 201))

    def send(self, recipients: list[str]) -> list[str]:
        """Each message accepted, then every one SENT; returns their ids."""
        ids = [
            self.call("POST", "/api/messages", self.key, {"to": to, "text": "hi"}, (202,))["id"] for to in recipients
        ]
        self.webhooks.wait(set(ids), ROUND_TIMEOUT)
        return ids

    def settle(self) -> None:
        """Until no function has run for `QUIET_SECONDS` (what the last ones queued has run too)."""
        functions = self.stack.functions
        assert functions is not None
        deadline = time.monotonic() + ROUND_TIMEOUT
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < QUIET_SECONDS:
            if time.monotonic() > deadline:
                raise TimeoutError("the functions never went quiet")
            if any(functions.running(name) for name in functions.names()):
                quiet_since = time.monotonic()
            time.sleep(0.05)


def run(messages: int = MESSAGES) -> list[Round]:
    """The two rounds through the local stack behind the proxy (new recipients, then the same)."""
    proxy, attribution, webhooks = CountingProxy(), Attribution(), SentWebhooks()
    stack = LocalStack(
        port=0,
        aws_port=0,
        sim_port=0,
        live_port=0,
        live_management_port=0,
        prefix=f"proxy-{uuid.uuid4().hex[:8]}",
        aws_front=proxy.in_front_of,
        schedule_seconds=3600,  # no scheduled invocation inside a round
    )
    level = logger.log_level
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the provider simulator's request lines
    logger.setLevel("WARNING")  # the functions' lines: what is counted here is requests, not logs
    try:
        with attribution.on():
            stack.start()
            attribution.url = proxy.url
            with httpx.Client(base_url=stack.api_url, timeout=30.0, trust_env=False) as http:
                driver = _Driver(stack, http, webhooks)
                driver.arrange()
                driver.send(["5531900000000"])  # warm: every function loaded, the key's configuration cached
                driver.settle()
                recipients = [f"55219{index:08d}" for index in range(messages)]
                rounds = []
                for name in ("new recipient", "known recipient"):
                    measured = Round(name, messages)
                    with proxy.window() as seen, attribution.window() as sent:
                        ids = driver.send(recipients)
                        driver.settle()
                    measured.seen, measured.sent = Counter(seen), Counter(sent)
                    rounds.append(measured)
                    for message_id in ids:
                        status = driver.call("GET", f"/api/messages/{message_id}", driver.key)["status"]
                        if status not in ("SENT", "DELIVERED", "READ"):
                            raise RuntimeError(f"message {message_id} is {status} after its message.sent")
        return rounds
    finally:
        stack.stop()
        proxy.stop()
        webhooks.stop()
        logger.setLevel(level)


# --- the benchmark's figures and the report --------------------------------------------------


def per_function(counts: Counter[Seen], messages: int) -> dict[str, dict[str, float]]:
    """who -> operation -> requests per message, the functions' and the local stack's."""
    table: dict[str, dict[str, float]] = {}
    for seen, count in sorted(counts.items()):
        label = seen.who if seen.group == FUNCTIONS else f"{LOCAL_STACK}: {seen.who}"
        table.setdefault(label, {})[seen.operation] = round(count / messages, 2)
    return table


def benchmark() -> dict[str, dict[str, dict[str, float]]]:
    """The in-process benchmark's sends workload: round -> function -> operation -> per message."""
    from tools.bench import workloads  # noqa: PLC0415 - pytest and moto's decorators load only here

    saved = os.environ.pop("AWS_ENDPOINT_URL", None)
    level = logger.log_level
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logger.setLevel("WARNING")  # the set-up's lines; the meter counts the workload's at INFO
    try:
        with workloads.stage() as stage:
            miss, hit = workloads.sends(stage)
    finally:
        logger.setLevel(level)
        if saved is not None:
            os.environ["AWS_ENDPOINT_URL"] = saved
    figures = {}
    for name, measured in (("new recipient", miss), ("known recipient", hit)):
        figures[name] = {
            label: {op: round(count / measured.units, 2) for op, count in sorted(tally.requests.items())}
            for label, tally in sorted(measured.tallies.items())
            if label in (*SEND_PATH, "event source mapping") and tally.requests
        }
    return figures


def _total(operations: dict[str, float]) -> float:
    return round(sum(operations.values()), 2)


def report(rounds: list[Round], bench: dict[str, dict[str, dict[str, float]]]) -> Figures:
    figures: Figures = {"messages": rounds[0].messages, "rounds": []}
    for measured in rounds:
        proxied = per_function(measured.seen, measured.messages)
        benched = bench.get(measured.name, {})
        print(f"  {measured.name} ({measured.messages} messages, AWS requests per message at the proxy):")
        for label, operations in proxied.items():
            print(f"    {label}: {_total(operations):.2f} {operations}")
        print("    the send path, proxy against the in-process benchmark:")
        path = []
        for function in SEND_PATH:
            ours, theirs = proxied.get(function, {}), benched.get(function, {})
            print(f"      {function}: proxy {_total(ours):.2f}, benchmark {_total(theirs):.2f}")
            for operation in sorted(set(ours) | set(theirs)):
                a, b = ours.get(operation, 0.0), theirs.get(operation, 0.0)
                print(f"        {operation}: {a:.2f} / {b:.2f}" + ("" if a == b else "  <- differs"))
            path.append({"function": function, "proxy": ours, "benchmark": theirs})
        functions = sum(count for seen, count in measured.seen.items() if seen.group == FUNCTIONS)
        machinery = sum(count for seen, count in measured.seen.items() if seen.group == LOCAL_STACK)
        unmatched = +(measured.sent - measured.seen) + (measured.seen - measured.sent)
        print(
            f"    at the proxy: {functions / measured.messages:.2f} functions' and {machinery / measured.messages:.2f} "
            f"the local stack's requests per message; botocore sent {sum(measured.sent.values())}, the proxy saw "
            f"{sum(measured.seen.values())} ({sum(unmatched.values())} not matched one for one)"
        )
        figures["rounds"].append(
            {
                "round": measured.name,
                "proxy": proxied,
                "send_path": path,
                "functions": round(functions / measured.messages, 2),
                "local_stack": round(machinery / measured.messages, 2),
                "benchmark_event_source_mapping": benched.get("event source mapping", {}),
            }
        )
    return figures


def measure() -> Figures:
    bench = benchmark()
    # The stack's functions print their metrics as Lambda does, to stdout: not the report's lines.
    with open(os.devnull, "w") as dropped, contextlib.redirect_stdout(dropped):
        rounds = run()
    return report(rounds, bench)


if __name__ == "__main__":
    measure()

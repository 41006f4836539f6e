"""Runs the template's functions in this process, as Lambda would run each one.

A function is `CodeUri` + `Handler` from template.yaml. Lambda runs one invocation at a time per
container, and starts another container when an invocation arrives while every container of the
function is busy. Here too: a container is one instance of the handler module, imported by path
under a unique module name (every handler file is called app.py), warm once loaded, and used by
one invocation at a time. A function gets up to `max_containers` of them (`LOCAL_MAX_CONTAINERS`,
default 4); beyond that an invocation waits for a free one, as if the function's concurrency were
reserved at that number.

What a container owns: the handler module's globals, so the Powertools resolver `app` each API
function builds with `create_api(...)` (its route table and its per-request `context`: the
matched route and so the status code, the dependency cache) and a worker's `BatchProcessor`.
What the containers share: the layer's modules (`switchboard.*`), imported once per process, so
the capability routers (`router = APIGatewayHttpRouter()` at module level), the adapters built by
`bootstrap`, the logger and the metrics. Two things of those need care:

- Powertools keeps the request's event and Lambda context on the `BaseRouter` class, and a
  router reads them through it (`requires(router, ...)` does): two invocations at once, of one
  function or of two, would read each other's. `request_state.isolate()` keeps them per
  invocation thread.
- `include_router` copies the router's context, i.e. the context of the resolver that included
  it last, into the new resolver, while that one may be answering a request. So a new
  container's resolvers start with an empty context, as after any invocation.

Measured with tests/stack/test_concurrency.py (200 requests at once, 6 routes of 3 functions):
one module per function, invocations in the gateway's threads: 96 of 200 answered right (sends
answered 200 instead of 202: another request's route status); containers, the event still on
the class: 199 of 200 (a read judged with another request's agent key: 403); containers and the
event per thread: 200 of 200. A private copy of the route modules per container would not be
enough (the event is on a Powertools class), nor a lock per function (two functions at once
share that class); one lock around every API invocation would serve one request at a time.

- Each handler pauses the garbage collector while it imports and, as its last statement, calls
  `switchboard.coldstart.imported()`, which collects once and `gc.freeze()`s what survives: in
  Lambda, one process per container, that is the container's own modules. Here it is the whole
  process: every other container's invocations in flight, moto's state, the simulator's, all
  moved out of the collector's reach for good, so every reference cycle among them (a request's
  frames and exceptions, a killed container's whole module) was never freed. The containers
  here share one collector, which simply keeps running: `imported()` does nothing in this
  process.

Still shared: the logger's keys (correlation id, function name) and the metrics set, so with
invocations at once a log line may carry another invocation's keys and a metrics flush
another's metrics.

`kill(logical_id)` crashes a container of a function in the middle of an invocation, as a Lambda
container dies (out of memory, a segmentation fault, a hard timeout): the invocation stops with
no answer (its caller gets `FunctionCrashed`, so an SQS batch is not deleted and comes back after
its visibility timeout) and the container is gone (the next invocation loads a new one). It stops
at the invocation thread's next network read or write, optionally a few of them later: a point
where a real crash leaves the outside world in every state that matters (a request not sent, sent
but unanswered, answered but not recorded); an invocation that does no more network I/O stops on
its way out, its work done but unanswered. It is a `ContainerKilled` raised there, not an
asynchronous exception, so it never lands between a lock's acquisition and the block that
releases it. Unlike a real crash, the handler's `finally` blocks run, threads it started go on, and
what containers share in this process (the layer's modules and adapters) outlives it.
"""

from __future__ import annotations

import gc
import importlib.util
import itertools
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver

from devstack import request_state, template

Handler = Callable[[Any, Any], Any]
MAX_CONTAINERS_VARIABLE = "LOCAL_MAX_CONTAINERS"
DEFAULT_MAX_CONTAINERS = 4


class FunctionsStopped(RuntimeError):
    """An invocation after `Functions.close()`: the local stack is stopping."""


# Lambda's synchronous invocation payload quota: the whole event as JSON, not the body alone
# ("Request must be smaller than 6291456 bytes for the InvokeFunction operation").
MAX_INVOCATION_PAYLOAD = 6 * 1024 * 1024


class InvocationTooLarge(RuntimeError):
    """An event over Lambda's invocation payload quota: the function never runs
    (Lambda's RequestEntityTooLargeException, 413)."""


class FunctionCrashed(RuntimeError):
    """The invocation's container was killed (`Functions.kill`) before it answered."""


class ContainerKilled(BaseException):
    """Raised in a killed invocation's thread. A BaseException, so the handler's own
    `except Exception` blocks do not swallow it: the invocation ends there."""


@dataclass
class FakeLambdaContext:
    """An invocation's context; its remaining time runs down from its start, as Lambda's does
    (the local stack does not stop an invocation at its timeout: a handler that reads the time
    left, like the forwarder's deadline, still ends in time)."""

    function_name: str
    memory_limit_in_mb: int = 512
    timeout_seconds: int = 29
    aws_request_id: str = ""
    invoked_function_arn: str = ""
    log_group_name: str = ""
    log_stream_name: str = ""
    function_version: str = "$LATEST"
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self.started)) * 1000))


def mount_layers(path: Path = template.TEMPLATE) -> None:
    """Put each layer's content on the import path, as Lambda mounts it on /opt/python."""
    for layer in template.resources("AWS::Serverless::LayerVersion", path).values():
        content = str((path.parent / layer["ContentUri"]).resolve())
        if content not in sys.path:
            sys.path.insert(0, content)


def share_the_collector() -> None:
    """Containers in one process share its garbage collector: no handler's import pauses or
    freezes it (see the module's docstring)."""
    from switchboard import coldstart  # noqa: PLC0415 - on the layers' path only once they are mounted

    coldstart.imported = _collector_keeps_running
    gc.enable()  # the first import of coldstart paused it


def _collector_keeps_running() -> None:
    """`coldstart.imported` in a process of many containers: the collector was never paused."""


def max_containers_from_environment() -> int:
    value = os.environ.get(MAX_CONTAINERS_VARIABLE)
    if not value:
        return DEFAULT_MAX_CONTAINERS
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{MAX_CONTAINERS_VARIABLE} must be a whole number of at least 1, not {value!r}")
    return int(value)


@dataclass
class Container:
    """One loaded instance of a function's handler module."""

    module: ModuleType
    handler: Handler
    busy: bool = False
    thread: int | None = None  # the thread running its invocation right now, the one `kill` stops
    killed: bool = False


@dataclass
class _Pool:
    """A function's containers; `starting` counts those being loaded (outside the lock)."""

    containers: list[Container] = field(default_factory=list)
    starting: int = 0


class Functions:
    """Loads and invokes the template's AWS::Serverless::Function resources by logical id."""

    def __init__(
        self, path: Path = template.TEMPLATE, *, max_containers: int | None = None, timeout_seconds: int | None = None
    ) -> None:
        """`timeout_seconds`: every function's timeout instead of its template's (tests that
        shorten the queues' visibility timeouts shorten this too: a crashed invocation's
        idempotency record blocks its redelivery for that long)."""
        self._path = path
        self._timeout_seconds = timeout_seconds
        self._definitions = template.resources("AWS::Serverless::Function", path)
        self.max_containers = max_containers or max_containers_from_environment()
        self._pools: dict[str, _Pool] = {logical_id: _Pool() for logical_id in self._definitions}
        self._changed = threading.Condition()
        self._closed = False
        self._serial = itertools.count(1)
        mount_layers(path)
        request_state.isolate()
        share_the_collector()

    @property
    def path(self) -> Path:
        return self._path

    def names(self) -> list[str]:
        return list(self._definitions)

    def definition(self, logical_id: str) -> dict[str, Any]:
        return self._definitions[logical_id]

    def handler(self, logical_id: str) -> Handler:
        """The handler of the function's first container (loaded now if there is none yet)."""
        with self._changed:
            containers = self._pools[logical_id].containers
            if containers:
                return containers[0].handler
        with self._container(logical_id) as container:
            return container.handler

    def containers(self, logical_id: str) -> int:
        """How many containers the function has (warm ones, busy or not)."""
        with self._changed:
            return len(self._pools[logical_id].containers)

    def running(self, logical_id: str) -> int:
        """How many of the function's containers are running an invocation now."""
        with self._changed:
            return sum(container.thread is not None for container in self._pools[logical_id].containers)

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Raises `InvocationTooLarge` for an event over Lambda's payload quota, as Lambda does."""
        size = len(json.dumps(event, separators=(",", ":"), default=str).encode())
        if size > MAX_INVOCATION_PAYLOAD:
            raise InvocationTooLarge(f"{logical_id}: a {size} byte event is over {MAX_INVOCATION_PAYLOAD} bytes")
        properties = self._definitions[logical_id]
        context = FakeLambdaContext(
            function_name=logical_id,
            timeout_seconds=self._timeout_seconds or int(properties.get("Timeout", 29)),
            aws_request_id=str(uuid.uuid4()),
            invoked_function_arn=f"arn:aws:lambda:us-east-1:000000000000:function:{logical_id}",
        )
        with self._container(logical_id) as container:
            try:
                answer = self._run(container, event, context)
            finally:
                request_state.forget()
            if container.killed:
                raise FunctionCrashed(f"{logical_id}: its container was killed mid-invocation")
            return answer

    def kill(self, logical_id: str, *, after_operations: int = 0) -> bool:
        """Crash a container of the function that is running an invocation now, at that
        invocation's next network read or write (`after_operations` later ones first).

        False when no container of it is running one: nothing is killed.
        """
        _install_crash_points()
        with self._changed:
            running = [c for c in self._pools[logical_id].containers if c.thread is not None and not c.killed]
            if not running:
                return False
            victim = running[0]
            victim.killed = True
            assert victim.thread is not None
            _doomed[victim.thread] = after_operations
            return True

    def _run(self, container: Container, event: Any, context: Any) -> Any:
        """The handler's answer; None when its container was killed on the way."""
        thread = threading.get_ident()
        with self._changed:
            container.thread = thread
        try:
            return container.handler(event, context)
        except ContainerKilled:
            return None
        finally:
            with self._changed:
                container.thread = None
                _doomed.pop(thread, None)  # killed with no network I/O left: it stops on its way out

    def close(self) -> None:
        """Refuse new invocations (`FunctionsStopped`); those in flight run on."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds until no invocation runs; True if none does."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._busy():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    # --- containers ----------------------------------------------------------------------

    @contextmanager
    def _container(self, logical_id: str) -> Iterator[Container]:
        container = self._acquire(logical_id)
        try:
            yield container
        finally:
            with self._changed:
                container.busy = False
                if container.killed:
                    # Gone, as a crashed Lambda container is: the next invocation loads a new one.
                    self._pools[logical_id].containers.remove(container)
                    sys.modules.pop(container.module.__name__, None)
                self._changed.notify_all()

    def _acquire(self, logical_id: str) -> Container:
        """A free warm container, else a new one (up to the cap), else wait for one to be free."""
        pool = self._pools[logical_id]
        with self._changed:
            while True:
                if self._closed:
                    raise FunctionsStopped(f"{logical_id}: the local stack is stopping")
                for container in pool.containers:
                    if not container.busy:
                        container.busy = True
                        return container
                if len(pool.containers) + pool.starting < self.max_containers:
                    pool.starting += 1
                    serial = next(self._serial)
                    break
                self._changed.wait()
        try:
            module, handler = self._load(logical_id, serial)
        finally:
            with self._changed:
                pool.starting -= 1
                self._changed.notify_all()
        started = Container(module, handler, busy=True)
        with self._changed:
            pool.containers.append(started)
        return started

    def _busy(self) -> bool:
        return any(
            pool.starting or any(container.busy for container in pool.containers) for pool in self._pools.values()
        )

    def _load(self, logical_id: str, serial: int) -> tuple[ModuleType, Handler]:
        properties = self._definitions[logical_id]
        module_name, _, attribute = properties["Handler"].rpartition(".")
        source = self._path.parent / properties["CodeUri"] / f"{module_name.replace('.', '/')}.py"
        unique = f"lambda_{logical_id}_{module_name}_{serial}"
        spec = importlib.util.spec_from_file_location(unique, source)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {source}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(unique, None)
            raise
        _start_with_empty_contexts(module)
        handler: Handler = getattr(module, attribute)
        return module, handler


# Threads of killed invocations -> network operations each still makes before it stops.
_doomed: dict[int, int] = {}
_crash_points_installed = False
_CRASH_POINTS = ("send", "sendall", "recv", "recv_into")


def _install_crash_points() -> None:
    """Wrap the socket methods every HTTP client here ends in (http.client for boto3 and moto,
    httpcore for httpx) with `_crash_point`; once per process, and only once a kill is asked."""
    global _crash_points_installed  # noqa: PLW0603 - one patch per process
    if _crash_points_installed:
        return
    for name in _CRASH_POINTS:
        original = getattr(socket.socket, name)

        def wrapped(self: socket.socket, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            _crash_point()
            return _original(self, *args, **kwargs)

        setattr(socket.socket, name, wrapped)
    _crash_points_installed = True


def _crash_point() -> None:
    thread = threading.get_ident()
    left = _doomed.get(thread)
    if left is None:
        return
    if left > 0:
        _doomed[thread] = left - 1
        return
    del _doomed[thread]
    raise ContainerKilled


def _start_with_empty_contexts(module: ModuleType) -> None:
    """A new resolver starts as after an invocation: `include_router` may have copied into it
    the per-request context of another container's resolver, answering a request right now."""
    for value in vars(module).values():
        if isinstance(value, ApiGatewayResolver):
            value.clear_context()

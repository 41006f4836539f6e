"""Powertools' per-request state of the event handler, kept per invocation thread.

`ApiGatewayResolver.resolve()` stores the event and the Lambda context on the *class*:
`BaseRouter.current_event = ...; BaseRouter.lambda_context = ...`. Every resolver and router of
the process reads them from there (a `Router`, such as a capability's module-level
`router = APIGatewayHttpRouter()`, asks its last `api_resolver`, which reads the class). In Lambda
a process is one container running one invocation at a time, so that is per request. In the
local stack every function runs in one process: two invocations at once, even of two different
functions (the gateway serves each request in its own thread), would read each other's event.

`isolate()` turns those two class attributes into per-thread values: each invocation runs in one
thread from start to end, so each reads the event its own `resolve()` stored, whatever resolver
or router it reads it through. A thread that never set one (a helper thread an invocation
started) reads the last value set by any thread, which is what Powertools itself does.
"""

from __future__ import annotations

import threading
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

NAMES = ("current_event", "lambda_context")

_per_thread = threading.local()
_last: dict[str, Any] = {}
_lock = threading.Lock()


class _PerThread:
    """A data descriptor: the calling thread's value, else the last value any thread set."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        try:
            return getattr(_per_thread, self.name)
        except AttributeError:
            pass
        try:
            return _last[self.name]
        except KeyError:
            raise AttributeError(self.name) from None

    def __set__(self, instance: object, value: Any) -> None:
        setattr(_per_thread, self.name, value)
        _last[self.name] = value


def isolate() -> None:
    """Make `BaseRouter.current_event` and `.lambda_context` per thread (once per process).

    Instances find the descriptor in `BaseRouter.__dict__`; `BaseRouter.current_event = ...`
    (an assignment on the class) reaches it through a metaclass that defines the same names.
    """
    with _lock:
        metaclass = type(BaseRouter)
        if getattr(metaclass, "_devstack_per_thread", False):
            return
        for name in NAMES:
            if name in BaseRouter.__dict__:
                _last[name] = BaseRouter.__dict__[name]
            type.__setattr__(BaseRouter, name, _PerThread(name))
        per_thread = type(
            f"PerThread{metaclass.__name__}",
            (metaclass,),
            {"_devstack_per_thread": True, **{name: _PerThread(name) for name in NAMES}},
        )
        BaseRouter.__class__ = per_thread  # type: ignore[method-assign]  # the router's metaclass is swapped on purpose


def forget() -> None:
    """Drop this thread's values (an invocation has ended: its event is not kept alive)."""
    for name in NAMES:
        if hasattr(_per_thread, name):
            delattr(_per_thread, name)

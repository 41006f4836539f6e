"""The embedded AWS endpoint: moto in server mode, applying one request at a time.

moto's DynamoDB backend has no lock: concurrent TransactWriteItems deep-copy the table and can
over-admit, lose committed writes or answer 500 (measured on this machine). Real DynamoDB
serialises conditional writes per item; one lock around moto's WSGI app gives the same
guarantee locally, at the cost of throughput the local stack does not need.

A long-polling ReceiveMessage would hold that lock for its whole wait (moto sleeps inside the
request), blocking the very SendMessage that should wake it. So a long poll is served as a
series of short polls, each under the lock, with the lock released in between.

Observers (`AwsEndpoint.observe`) see the requests of one JSON target and moto's answers, inside
that same lock: what they see is in the order moto applied it (the local EventBridge rules read
PutEvents so).

moto keeps every model object it ever creates in its class's `instances_tracked` (for its
dashboard's `/moto-api/data.json`): every DynamoDB item version and copy (each query's, update's
and transaction backup's), every SQS message long after its deletion. In the soak that was 13,738
items alive for 2,270 in the tables, and every message ever sent. The endpoint keeps none
(`forget_model_instances`), as AWS keeps nothing of a deleted message or a replaced item; S3's
objects, which moto's reset still reads there to close their buffers, stay tracked.

moto backs every transaction up by copying whole tables, a cost that grows with the table; the
endpoint installs an item-level backup instead (`devstack.moto_transactions`), so the local stack
does not slow down as its tables fill, as DynamoDB does not. A FIFO queue remembers the
deduplication ids it accepted for SQS's five minutes, deleted messages included
(`devstack.moto_fifo`), as SQS does.

moto's server finds each request's service by listing its own package's folders again (a listdir
and a stat of each of ~150 entries: about 10 ms a request, more than most requests' own work); an
installed package's folders do not change while it runs, so the endpoint lists them once.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from botocore.config import Config
from moto import backends
from moto.core.common_models import BaseModel
from moto.core.model_instances import model_data
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

from devstack import moto_fifo, moto_transactions
from devstack.serving import Server

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
Observer = Callable[[bytes, str, bytes], None]  # (request body, answer status, answer body)

log = logging.getLogger("devstack.aws")

# The user agent suffix of the local stack's own AWS clients (its event source mapping, its
# provisioning): what a watcher of the endpoint tells them apart by from the functions' requests,
# which carry botocore's user agent alone.
OWN_AGENT = "switchboard-devstack"

SHORT_POLL_INTERVAL = 0.05
RECEIVE_TARGET = "AmazonSQS.ReceiveMessage"


def own_client_config(part: str) -> Config:
    """The botocore config of a client the local stack itself makes: its user agent ends in
    `switchboard-devstack/<part>`."""
    return Config(user_agent_extra=f"{OWN_AGENT}/{part}")


class _Captured:
    """Records the status and headers of one call of a WSGI app, to answer them later."""

    def __init__(self) -> None:
        self.status = "500 Internal Server Error"
        self.headers: list[tuple[str, str]] = []

    def __call__(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        self.status, self.headers = status, list(headers)
        return lambda _data: None


class SerializedApp:
    """A WSGI app that runs `app` for one request at a time, body included."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._observers: dict[str, list[Observer]] = {}

    def exclusive(self) -> threading.Lock:
        """The lock every request is applied under: held, nothing reaches moto meanwhile."""
        return self._lock

    def observe(self, target: str, observer: Observer) -> Callable[[], None]:
        """Call `observer` with every request of the JSON `target` (e.g. `AWSEvents.PutEvents`) and
        moto's answer, under the lock; returns what stops it."""
        with self._lock:
            self._observers.setdefault(target, []).append(observer)

        def forget() -> None:
            with self._lock:
                self._observers.get(target, []).remove(observer)

        return forget

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET")
        if target == RECEIVE_TARGET:
            return self._receive(environ, start_response)
        if target in self._observers:
            return self._observed(str(target), environ, start_response)
        with self._lock:
            return [b"".join(self._app(environ, start_response))]

    def _observed(self, target: str, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        call = {**environ, "wsgi.input": io.BytesIO(raw), "CONTENT_LENGTH": str(len(raw))}
        captured = _Captured()
        with self._lock:
            body = b"".join(self._app(call, captured))
            for observer in list(self._observers.get(target, [])):
                try:
                    observer(raw, captured.status, body)
                except Exception:
                    log.exception("observer of %s failed", target)
        start_response(captured.status, captured.headers)
        return [body]

    def _receive(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        """ReceiveMessage (JSON protocol): long polling as short polls, the lock free in between."""
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        try:
            request = json.loads(raw or b"{}")
            wait = float(request.get("WaitTimeSeconds") or 0)
        except (ValueError, TypeError, AttributeError):
            request, wait = None, 0.0
        if request is not None and wait > 0:
            raw = json.dumps({**request, "WaitTimeSeconds": 0}).encode()
        deadline = time.monotonic() + wait
        while True:
            captured = _Captured()
            call = {**environ, "wsgi.input": io.BytesIO(raw), "CONTENT_LENGTH": str(len(raw))}
            with self._lock:
                body = b"".join(self._app(call, captured))
            if not captured.status.startswith("200") or time.monotonic() >= deadline or _has_messages(body):
                start_response(captured.status, captured.headers)
                return [body]
            time.sleep(SHORT_POLL_INTERVAL)


def _has_messages(body: bytes) -> bool:
    try:
        return bool(json.loads(body or b"{}").get("Messages"))
    except (ValueError, AttributeError):
        return True


def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    instance: Any = object.__new__(cls)
    if cls.__module__.startswith(TRACKED_MODULES):
        cls.instances_tracked.append(instance)  # type: ignore[attr-defined]  # the list moto's metaclass gives each model class
    return instance


TRACKED_MODULES = ("moto.s3.",)


def forget_model_instances() -> None:
    """moto's models are no longer kept once created, but S3's (once per process; idempotent)."""
    BaseModel.__new__ = _untracked_new  # type: ignore[method-assign]  # moto's constructor swapped on purpose
    for models in model_data.values():  # what was tracked before goes too
        for model in models.values():
            if not model.__module__.startswith(TRACKED_MODULES):
                model.instances_tracked = []  # type: ignore[attr-defined]  # the list moto's metaclass gives each model class


def list_moto_modules_once() -> None:
    """moto's own folders, listed once per process (idempotent)."""
    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules


class AwsEndpoint:
    """moto server on 127.0.0.1:`port` (0 picks a free port), serialised, served by threads."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4566) -> None:
        moto_transactions.install()
        moto_fifo.install()
        list_moto_modules_once()
        forget_model_instances()
        self._app = SerializedApp(DomainDispatcherApplication(create_backend_app))
        self._server = Server(self._app, name="aws-endpoint", host=host, port=port, handler=QuietMotoHandler)

    def observe(self, target: str, observer: Observer) -> Callable[[], None]:
        """See `SerializedApp.observe`."""
        return self._app.observe(target, observer)

    def exclusive(self) -> threading.Lock:
        """See `SerializedApp.exclusive`."""
        return self._app.exclusive()

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> AwsEndpoint:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()


class QuietMotoHandler(MotoRequestHandler):
    """No access log line per request: the local stack's output stays readable."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return

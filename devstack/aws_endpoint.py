"""The embedded AWS endpoint: moto in server mode, applying one request at a time.

moto's DynamoDB backend has no lock: concurrent TransactWriteItems deep-copy the table and can
over-admit, lose committed writes or answer 500 (measured, see DESIGN.md). Real DynamoDB
serialises conditional writes per item; one lock around moto's WSGI app gives the same
guarantee locally, at the cost of throughput the local stack does not need.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

StartResponse = Callable[..., Any]


class SerializedApp:
    """A WSGI app that runs `app` for one request at a time, body included."""

    def __init__(self, app: Callable[[dict[str, Any], StartResponse], Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        with self._lock:
            return [b"".join(self._app(environ, start_response))]


class AwsEndpoint:
    """moto server on 127.0.0.1:`port` (0 picks a free port), serialised, in a daemon thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4566) -> None:
        app = SerializedApp(DomainDispatcherApplication(create_backend_app))
        self._server: BaseWSGIServer = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="aws-endpoint", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> AwsEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

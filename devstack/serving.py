"""A threaded WSGI server that stops completely: listening socket, open connections, threads.

werkzeug's threaded server speaks HTTP/1.1, so a client's idle keep-alive connection keeps a
handler thread blocked on it after `shutdown()`. This one remembers its connections and closes
them on `stop()`, so nothing of it is left once `stop()` returns.
"""

from __future__ import annotations

import socket
import threading
from functools import partial
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from devstack.background import Background

POLL_SECONDS = 0.05


class _TrackingServer(ThreadedWSGIServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)


class Server:
    """`app` on `host:port` (0 picks a free port), one thread per connection, until `stop()`."""

    def __init__(
        self,
        app: Any,
        *,
        name: str,
        host: str = "127.0.0.1",
        port: int = 0,
        handler: type[WSGIRequestHandler] = WSGIRequestHandler,
    ) -> None:
        self._server = _TrackingServer(host, port, app, handler=handler)
        self._threads = Background()
        # `shutdown()` waits for the loop's next poll: half a second by default, on every stop.
        self._threads.add(partial(self._server.serve_forever, poll_interval=POLL_SECONDS), name=name)

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    @property
    def url(self) -> str:
        return f"http://{self._server.host}:{self.port}"

    def start(self) -> None:
        self._threads.start()

    def stop(self) -> None:
        self._threads.stop(timeout=5, wake=self._server.shutdown)
        self._server.server_close()
        with self._server.connections_lock:
            open_connections = list(self._server.connections)
        for connection in open_connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                continue

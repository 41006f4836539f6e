"""Run the simulator on a real socket, in a background thread, for tests and the local stack."""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import httpx
from werkzeug.serving import BaseWSGIServer, make_server

from devstack.background import start_in_background
from devstack.simulator.app import SimulatorApp
from devstack.simulator.media import MediaServer
from devstack.simulator.schemas import SimulatorConfig


def create_app(config: SimulatorConfig | None = None, **settings: Any) -> SimulatorApp:
    """Build the WSGI app from a config, or from `SimulatorConfig` fields given as keywords."""
    return SimulatorApp(config or SimulatorConfig(**settings))


class Simulator:
    """A provider server on `host:port`; port 0 picks a free one (read `base_url` after start)."""

    def __init__(
        self,
        config: SimulatorConfig | None = None,
        *,
        webhook_transport: httpx.BaseTransport | None = None,
        **settings: Any,
    ) -> None:
        self.app = SimulatorApp(config or SimulatorConfig(**settings), webhook_transport=webhook_transport)
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._media = MediaServer(self.app.media)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the simulator is not running")
        return f"http://{self._server.host}:{self._server.server_port}"

    @property
    def media_url(self) -> str:
        """`ws://host:port` of the media endpoint (attachments name their full URL)."""
        return self.app.media.ws_url

    def start(self, host: str = "127.0.0.1", port: int = 0, media_port: int = 0) -> str:
        self._media.start(host, media_port)
        self._server = make_server(host, port, self.app, threaded=True)
        # Polled every 50 ms, not 0.5 s: `shutdown()` waits for the next poll on every stop.
        serve = partial(self._server.serve_forever, poll_interval=0.05)
        self._thread = threading.Thread(target=serve, name="simulator", daemon=True)
        start_in_background(self._thread)
        return self.base_url

    def stop(self) -> None:
        self.app.close()
        self._media.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> Simulator:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

"""A client's webhook endpoint on loopback, for the tests, benchmarks and the soak that receive
client webhooks (`message.sent`, ...): a real HTTP server on 127.0.0.1 at `url` (path /hooks)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A delivery's headers (names lower-cased) and body -> the status code to answer it with.
Answer = Callable[[dict[str, str], bytes], int]


def accept(headers: dict[str, str], body: bytes) -> int:
    """Every delivery taken."""
    return 204


class HookReceiver:
    """Answers each POST with the status `answer` gives it, on a thread of its own until `stop()`.
    A body cut off before its Content-Length (its sender died mid-request) is not a delivery: the
    connection is closed unanswered and `answer` never sees it."""

    def __init__(self, answer: Answer = accept) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                if len(body) < length:
                    self.close_connection = True
                    return
                self.send_response(answer({name.lower(): value for name, value in self.headers.items()}, body))
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class RecordingReceiver(HookReceiver):
    """Records each request (headers, body); answers `statuses` in turn, then 204."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.statuses: list[int] = []
        super().__init__(self._answer)

    def _answer(self, headers: dict[str, str], body: bytes) -> int:
        self.requests.append((headers, body))
        return self.statuses.pop(0) if self.statuses else 204

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        """The bodies received, read as JSON; with `name`, only the events of that name."""
        received = [json.loads(body) for _, body in self.requests]
        return [event for event in received if name is None or event.get("event") == name]


class SwitchedReceiver(HookReceiver):
    """Down (503 to everything, counted in `refused`) until `up`, then 204, recording each delivery
    it took (headers, body) in `accepted`."""

    def __init__(self) -> None:
        self.up = False
        self.accepted: list[tuple[dict[str, str], bytes]] = []
        self.refused = 0
        super().__init__(self._answer)

    def _answer(self, headers: dict[str, str], body: bytes) -> int:
        if not self.up:
            self.refused += 1
            return 503
        self.accepted.append((headers, body))
        return 204

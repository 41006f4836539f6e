"""Per-call media sessions: `POST /call/{callId}/attach` hands out a short-lived media URL, and a
WebSocket endpoint (its own port, `websockets.sync.server`) echoes each call's frames tagged
with its callId, so a client can tell two calls' media apart.

A session belongs to one (instance, callId). Its URL carries a one-time ticket valid for
`CONNECT_SECONDS`; connecting consumes it. A socket drop is not an end of call: the session
waits `RETAIN_SECONDS` for a reattach (a new attach for the same call resumes it, with a new
ticket), then it is released and the call keeps its state. A new socket on a session replaces
the one it had (the provider accepts a replaced attachment: ownership is the caller's business).

A socket is on its session from the moment its handshake is accepted, before the 101 answer
leaves: a client whose `connect` returned finds its session connected, whatever the server's
threads are doing (the echo loop starts a moment later, in the connection's own thread).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request as WsRequest
from websockets.http11 import Response as WsResponse
from websockets.protocol import State
from websockets.sync.server import Server, ServerConnection, serve

from devstack.background import start_in_background

CONNECT_SECONDS = 60.0
RETAIN_SECONDS = 30.0
MEDIA_PATH = "/media/"
REPLACED = 4000  # close code: another socket took the session
CALL_OVER = 4001  # close code: the call ended


@dataclass
class MediaSession:
    id: str
    instance_id: str
    call_id: str
    ticket: str | None
    ticket_until: float
    idle_since: float  # when it last had no socket: its creation, or its socket's drop
    socket: ServerConnection | None = None
    ever_connected: bool = False

    def released(self, now: float, retain_seconds: float) -> bool:
        """Without a socket, kept while its ticket is valid or for `retain_seconds` after the drop."""
        if self.socket is not None:
            return False
        return now > self.ticket_until and now - self.idle_since > retain_seconds


class MediaSessions:
    """Every media session of the simulator, behind its own lock (never held while sending)."""

    def __init__(
        self,
        *,
        is_live: Callable[[str, str], bool],
        clock: Callable[[], float] = time.monotonic,
        connect_seconds: float = CONNECT_SECONDS,
        retain_seconds: float = RETAIN_SECONDS,
    ) -> None:
        self._is_live = is_live
        self.clock = clock  # replaceable in tests, so no test waits for a window to pass
        self._connect_seconds = connect_seconds
        self._retain_seconds = retain_seconds
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, str], MediaSession] = {}
        self._pending: dict[int, MediaSession] = {}  # handshakes whose ticket was consumed
        self._attached: dict[int, MediaSession] = {}  # accepted sockets, until their echo loop starts
        self.ws_url = ""

    def attach(self, instance_id: str, call_id: str, *, resume: bool = True) -> dict[str, Any]:
        """A ticket for the call's session: the retained one (`resumed`), else a new one.

        `detachedForSeconds`: how long the resumed session had been without a socket after one
        had connected (null when a socket is on it, or it never had one).
        """
        with self._lock:
            now = self.clock()
            key = (instance_id, call_id)
            session = self._sessions.get(key)
            if session is not None and (session.released(now, self._retain_seconds) or not resume):
                self._release(session)
                session = None
            resumed = session is not None
            if session is None:
                session = MediaSession(
                    id=f"ms_{secrets.token_hex(8)}",
                    instance_id=instance_id,
                    call_id=call_id,
                    ticket=None,
                    ticket_until=now,
                    idle_since=now,
                )
                self._sessions[key] = session
            detached = now - session.idle_since if session.socket is None and session.ever_connected else None
            session.ticket = secrets.token_urlsafe(24)
            session.ticket_until = now + self._connect_seconds
            expires_at = datetime.now(UTC) + timedelta(seconds=self._connect_seconds)
            return {
                "mediaUrl": f"{self.ws_url}{MEDIA_PATH}{session.ticket}",
                "expiresAt": expires_at.isoformat().replace("+00:00", "Z"),
                "sessionId": session.id,
                "resumed": resumed,
                "detachedForSeconds": None if detached is None else round(detached, 3),
            }

    def view(self, instance_id: str, call_id: str) -> dict[str, Any] | None:
        """The control API's look at a call's session (never its ticket)."""
        with self._lock:
            session = self._sessions.get((instance_id, call_id))
            if session is None or session.released(self.clock(), self._retain_seconds):
                return None
            # A socket whose 101 could not be sent never serves: it is on the session, not connected.
            connected = session.socket is not None and session.socket.state in (State.CONNECTING, State.OPEN)
            # `detached`: the close is recorded and the retention window runs from it; a socket
            # already closed is not connected a moment before its echo loop records that.
            detached = session.socket is None and session.ever_connected
            return {"sessionId": session.id, "connected": connected, "detached": detached}

    def reset(self) -> None:
        with self._lock:
            for session in list(self._sessions.values()):
                self._release(session)

    # --- the WebSocket side ------------------------------------------------------------------

    def check_handshake(self, connection: ServerConnection, request: WsRequest) -> WsResponse | None:
        """Consume the ticket of `/media/<ticket>`; 404 for an unknown, used or expired one."""
        ticket = request.path.removeprefix(MEDIA_PATH) if request.path.startswith(MEDIA_PATH) else ""
        with self._lock:
            now = self.clock()
            session = next(
                (item for item in self._sessions.values() if ticket and item.ticket == ticket),
                None,
            )
            if session is None or now > session.ticket_until:
                return connection.respond(HTTPStatus.NOT_FOUND, "unknown or expired media ticket\n")
            session.ticket, session.ticket_until = None, now
            self._pending[id(connection)] = session
        if not self._is_live(session.instance_id, session.call_id):
            with self._lock:
                self._pending.pop(id(connection), None)
            return connection.respond(HTTPStatus.CONFLICT, "the call has ended\n")
        return None

    def attach_socket(self, connection: ServerConnection, request: WsRequest, response: WsResponse) -> None:
        """Put an accepted socket on its session (the handshake's last step, before its answer is
        sent); the socket it replaces is closed."""
        with self._lock:
            session = self._pending.pop(id(connection), None)
            if session is None or response.status_code != HTTPStatus.SWITCHING_PROTOCOLS:
                return
            replaced, session.socket, session.ever_connected = session.socket, connection, True
            self._attached[id(connection)] = session
        if replaced is not None:
            replaced.close(REPLACED, "attachment replaced")

    def serve_socket(self, connection: ServerConnection) -> None:
        """Echo every frame tagged `<callId>:` until the socket closes or the call ends."""
        with self._lock:
            session = self._attached.pop(id(connection), None)
            if session is None:
                return
        tag = session.call_id
        try:
            for frame in connection:
                if not self._is_live(session.instance_id, session.call_id):
                    connection.close(CALL_OVER, "call ended")
                    break
                if isinstance(frame, str):
                    connection.send(f"{tag}:{frame}")
                else:
                    connection.send(tag.encode() + b":" + frame)
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                if session.socket is connection:
                    session.socket, session.idle_since = None, self.clock()

    def _release(self, session: MediaSession) -> None:
        """Forget the session (lock held); a socket still on it is closed outside the caller's path."""
        self._sessions.pop((session.instance_id, session.call_id), None)
        socket, session.socket, session.ticket = session.socket, None, None
        if socket is not None:
            threading.Thread(target=socket.close, args=(REPLACED, "session released"), daemon=True).start()


class MediaServer:
    """The media WebSocket endpoint on its own port, in a background thread."""

    def __init__(self, sessions: MediaSessions) -> None:
        self._sessions = sessions
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, host: str, port: int = 0) -> str:
        self._server = serve(
            self._sessions.serve_socket,
            host,
            port,
            process_request=self._sessions.check_handshake,
            process_response=self._sessions.attach_socket,
        )
        bound_host, bound_port = self._server.socket.getsockname()[:2]
        self._thread = threading.Thread(target=self._server.serve_forever, name="simulator-media", daemon=True)
        start_in_background(self._thread)
        self._sessions.ws_url = f"ws://{bound_host}:{bound_port}"
        return self._sessions.ws_url

    def stop(self) -> None:
        self._sessions.reset()
        if self._server is not None:
            self._server.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

"""One provider simulator and one webhook receiver per session, on free loopback ports.

Each test makes its own instances (unique ids and tokens), so a late delivery from an earlier
test can never be mistaken for one of its own. Delays are short: a `timeout` fault sleeps 1 s
against a 0.3 s client, webhook retries start at 20 ms.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from devstack.simulator import Simulator, SimulatorControl
from switchboard.providers.base import ProviderTarget
from switchboard.providers.wuzapi import WuzapiClient

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

WAIT_SECONDS = 10.0
ADMIN_TOKEN = "test-admin-token"
SECRET = "whsec-current"


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def envelope(self) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads(self.body)
        return payload


class WebhookReceiver:
    """Records every POST it gets; can answer the next ones with an error status."""

    def __init__(self) -> None:
        self._received: list[Received] = []
        self._failures: dict[str, list[int]] = {}
        self._changed = threading.Condition()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}/hooks"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, instance_id: str, times: int, status: int = 500) -> None:
        """Answer the next `times` deliveries for this instance with `status`."""
        with self._changed:
            self._failures.setdefault(instance_id, []).extend([status] * times)

    def wait_for(self, instance_id: str, count: int, *, event: str | None = None) -> list[Received]:
        """Wait until `count` deliveries (of `event`, if given) arrived for `instance_id`; return them."""

        def matching() -> list[Received]:
            return [
                item
                for item in self._received
                if item.envelope.get("instanceId") == instance_id
                and (event is None or item.envelope.get("event") == event)
            ]

        with self._changed:
            self._changed.wait_for(lambda: len(matching()) >= count, timeout=WAIT_SECONDS)
            found = matching()
        assert len(found) >= count, f"expected {count} deliveries, got {len(found)}"
        return found

    def _app(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        received = Received(dict(request.headers), request.get_data())
        with self._changed:
            self._received.append(received)
            failures = self._failures.get(received.envelope.get("instanceId", ""), [])
            status = failures.pop(0) if failures else 204
            self._changed.notify_all()
        return Response(status=status)(environ, start_response)


@pytest.fixture(scope="session")
def simulator() -> Iterator[Simulator]:
    sim = Simulator(
        admin_token=ADMIN_TOKEN,
        fault_delay_seconds=1.0,
        webhook_retry_base_delay=0.02,
        webhook_max_attempts=4,
        webhook_timeout_seconds=2.0,
    )
    sim.start()
    yield sim
    sim.stop()


@pytest.fixture(scope="session")
def receiver() -> Iterator[WebhookReceiver]:
    server = WebhookReceiver()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def wuzapi() -> Iterator[WuzapiClient]:
    client = WuzapiClient(local_mode=True, read_timeout=5.0)
    yield client
    client.close()


@pytest.fixture(scope="session")
def impatient_wuzapi() -> Iterator[WuzapiClient]:
    """A client whose read timeout is shorter than the simulator's `timeout` fault."""
    client = WuzapiClient(local_mode=True, read_timeout=0.3)
    yield client
    client.close()


InstanceFactory = Callable[..., ProviderTarget]


@pytest.fixture
def make_instance(simulator: Simulator, control: SimulatorControl, receiver: WebhookReceiver) -> InstanceFactory:
    """Create a simulator instance (subscribed to the receiver unless told otherwise) and its target."""

    def create(*, subscribed: bool = True, **fields: Any) -> ProviderTarget:
        instance_id = f"inst-{uuid.uuid4()}"
        token = f"tok-{uuid.uuid4()}"
        body: dict[str, Any] = {"id": instance_id, "token": token, "kind": "calls", "number": "5511900000000"}
        if subscribed:
            body |= {"webhookUrl": receiver.url, "webhookSecret": SECRET}
        control.create_instance(**(body | fields))
        return ProviderTarget(
            kind="wuzapi",
            base_url=simulator.base_url,
            provider_instance_id=instance_id,
            instance_token=token,
            admin_token=ADMIN_TOKEN,
        )

    return create

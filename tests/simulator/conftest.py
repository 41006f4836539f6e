"""One provider simulator and one webhook receiver per session, on free loopback ports.

Each test makes its own instances (unique ids and tokens), so a late delivery from an earlier
test can never be mistaken for one of its own. Delays are short: a `timeout` fault sleeps 1 s
against a 0.3 s client, webhook retries start at 20 ms.

The receiver tells deliveries apart by the calls envelope's `instanceId`, or, for the other
flavours (whose bodies do not name our instance id), by the URL path: `receiver.url_for(id)`.
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
from switchboard.providers.kinds import WebhookScheme
from switchboard.providers.wuzapi import WuzapiClient
from tools.support.connections import SIM_ADMIN_TOKEN

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

WAIT_SECONDS = 10.0
ADMIN_TOKEN = SIM_ADMIN_TOKEN  # the shared `simulator` fixture's admin token
SECRET = "whsec-current"
HOOK_KEY = "hmac-key-for-tests-0123456789abcdefABCDEF"  # 32+ characters, as wuzapi requires
OWN_NUMBER = "5511900000000"


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    path: str = "/hooks"

    @property
    def envelope(self) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads(self.body)
        return payload

    @property
    def instance_id(self) -> str:
        """The instance a delivery is for: the last path segment, else the envelope's `instanceId`."""
        _, _, tail = self.path.partition("/hooks/")
        if tail:
            return tail
        try:
            return str(self.envelope.get("instanceId", ""))
        except ValueError:
            return ""

    @property
    def event(self) -> str | None:
        try:
            name = self.envelope.get("event")
        except ValueError:
            return None
        return name if isinstance(name, str) else None


class WebhookReceiver:
    """Records every POST it gets; can answer the next ones with an error status."""

    def __init__(self) -> None:
        self._received: list[Received] = []
        self._failures: dict[str, list[int]] = {}
        self._changed = threading.Condition()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}/hooks"
        self._answers: dict[str, tuple[int, bytes | None]] = {}
        self.last_query: dict[str, str] = {}
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def url_for(self, instance_id: str) -> str:
        """A URL whose deliveries are recorded as the instance's whatever their body."""
        return f"{self.url}/{instance_id}"

    def answer_gets(self, instance_id: str, status: int, body: bytes | None = None) -> None:
        """How a GET to `url_for(instance_id)` is answered (a Meta verification request);
        `body` None echoes the `hub.challenge` query parameter."""
        with self._changed:
            self._answers[instance_id] = (status, body)

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
                if item.instance_id == instance_id and (event is None or item.event == event)
            ]

        with self._changed:
            self._changed.wait_for(lambda: len(matching()) >= count, timeout=WAIT_SECONDS)
            found = matching()
        assert len(found) >= count, f"expected {count} deliveries, got {len(found)}"
        return found

    def received(self, instance_id: str) -> list[Received]:
        with self._changed:
            return [item for item in self._received if item.instance_id == instance_id]

    def _app(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        received = Received(dict(request.headers), request.get_data(), request.path)
        if request.method == "GET":
            with self._changed:
                status, body = self._answers.get(received.instance_id, (404, b""))
            self.last_query = dict(request.args)
            answer = request.args.get("hub.challenge", "").encode() if body is None else body
            return Response(answer, status=status, content_type="text/plain")(environ, start_response)
        with self._changed:
            self._received.append(received)
            failures = self._failures.get(received.instance_id, [])
            status = failures.pop(0) if failures else 204
            self._changed.notify_all()
        return Response(status=status)(environ, start_response)


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


@dataclass(frozen=True)
class FlavourInstance:
    """An instance of a real-server flavour: its id (wuzapi user name, Evolution instance name),
    its token (wuzapi token, Evolution apikey, Meta access token) and where the server is."""

    id: str
    token: str
    flavour: str
    base_url: str
    number: str
    meta_phone_id: str | None = None

    def target(self) -> ProviderTarget:
        """The target of an instance whose provider was saved with the scheme its server signs with."""
        kind = "wuzapi" if self.flavour in ("calls", "wuzapi") else self.flavour
        return ProviderTarget(
            kind=kind,
            base_url=self.base_url,
            provider_instance_id=self.id,
            instance_token=self.token,
            meta_phone_id=self.meta_phone_id,
            webhook_scheme=SCHEME_OF[self.flavour],
        )


# The scheme each simulator server signs its webhooks with, as its provider is saved.
SCHEME_OF: dict[str, WebhookScheme] = {
    "calls": "envelope",
    "wuzapi": "wuzapi-hmac",
    "evolution": "evolution-jwt",
    "meta": "meta-signature",
}


FlavourFactory = Callable[..., FlavourInstance]
# The users the tests send to, who wrote to a Meta number before the test: its customer-service
# window with them is open (a test of the window passes `window_with=()`).
WROTE_IN = ("5511988887777", "5511977776666")


@pytest.fixture
def make_flavoured(simulator: Simulator, control: SimulatorControl, receiver: WebhookReceiver) -> FlavourFactory:
    """An instance of `flavour`, its webhook at `receiver.url_for(id)` (unless `subscribed=False`)."""

    def create(
        flavour: str,
        *,
        subscribed: bool = True,
        secret: str | None = HOOK_KEY,
        window_with: tuple[str, ...] = WROTE_IN,
        **fields: Any,
    ) -> FlavourInstance:
        instance_id = f"{flavour}-{uuid.uuid4().hex[:12]}"
        token = f"tok-{uuid.uuid4()}"
        body: dict[str, Any] = {"id": instance_id, "token": token, "flavour": flavour, "number": OWN_NUMBER}
        meta_phone_id = None
        if flavour == "meta":
            meta_phone_id = str(uuid.uuid4().int % 10**15)
            body["metaPhoneId"] = meta_phone_id
        if subscribed:
            body["webhookUrl"] = receiver.url_for(instance_id)
            if secret is not None:
                body["webhookSecret"] = secret
        control.create_instance(**(body | fields))
        if flavour == "meta":
            for phone in window_with:  # they wrote earlier: the number may answer them freely
                control.open_window(instance_id, phone)
        prefix = "" if flavour == "calls" else f"/{flavour}"
        return FlavourInstance(instance_id, token, flavour, simulator.base_url + prefix, OWN_NUMBER, meta_phone_id)

    return create

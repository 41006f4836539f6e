"""The simulator's state: numbers (instances of every flavour) and their sessions, the messages they
sent and received, the webhooks they post, their calls; faults and capabilities.

Everything lives behind one lock, and an event is emitted under the same lock as the change
that causes it, so the per-instance `seq` order is the order of the changes. The data is
`Records`, reachable only through `SimulatorState.locked()`.

What an instance's server answers and posts is its flavour's dialect (`devstack.simulator.dialects`):
the state asks the instance's `Dialect` what a change posts, and a dialect's routes read and change
`Records` under the lock. Flavours: `calls` is the calls-capable server (its `/call/*`, call
settings and signed envelope are ours; its messaging routes are real wuzapi's); `wuzapi`,
`evolution` and `meta` follow the real servers.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl

from devstack.simulator import incoming
from devstack.simulator.incoming import ArrivalOptions
from devstack.simulator.model import (
    Call,
    Delivery,
    DialRecord,
    EmittedEvent,
    Fault,
    Instance,
    SentMessage,
    SimError,
    Subscription,
    rfc3339,
)
from devstack.simulator.schemas import (
    MAX_VERSION,
    CallActionBody,
    CapabilitiesPatch,
    CreateInstanceBody,
    FaultBody,
    GlobalWebhookBody,
    NumberStatusBody,
    SimCapabilities,
    SimulatorConfig,
)

__all__ = ["Delivery", "Dialect", "DialectWithCalls", "PairingDialect", "Records", "SimError", "SimulatorState"]

EVENT_LOG_SIZE = 10_000


class Dialect(Protocol):
    """What the state asks of the server an instance is on. Every method runs with the lock held."""

    flavour: str
    has_calls: bool  # only the calls server has calls
    always_connected: bool  # a Cloud API number has no session to lose
    lid_chats: bool  # only the Evolution server simulates LID-addressed chats
    send_error_codes: frozenset[str]  # the injected send refusals this server answers

    def check_new(self, records: Records, body: CreateInstanceBody) -> None:
        """Refuse a new instance whose fields this server cannot hold."""

    def set_up(self, instance: Instance, body: CreateInstanceBody) -> None:
        """The new instance's webhook configuration."""

    def control_view(self, records: Records, instance: Instance) -> dict[str, Any]:
        """The control view's `webhook` and the flavour's own fields."""

    def set_webhook_secrets(self, instance: Instance, secret: str, previous_secret: str | None) -> None: ...

    def connection_changed(
        self, records: Records, instance: Instance, *, reason: str | None, include_calls_config: bool
    ) -> None:
        """Post what the server posts when the WhatsApp connection changes."""

    def text_arrived(
        self, records: Records, instance: Instance, sender: str, text: str, *, push_name: str | None, addressing: str
    ) -> tuple[str, str]:
        """Post a customer's text; returns (the sender's message id, the simulator's event id)."""

    def media_arrived(
        self, records: Records, instance: Instance, sender: str, caption: str, kind: str, *, options: ArrivalOptions
    ) -> tuple[str, str]:
        """Post a customer's message of another kind, or a quoting text (`incoming`), its file
        travelling as `delivery` says; returns (message id, event id). Raises SimError for a
        delivery mode this server does not have."""

    def receipt(self, records: Records, instance: Instance, message: SentMessage, status: str) -> None:
        """Post the recipient's receipt of a message the instance sent."""


@runtime_checkable
class PairingDialect(Protocol):
    """A server that links a phone by a code (wuzapi, Evolution): its series of codes, advanced
    (and what it posts as it goes) under the lock."""

    def advance_pairing(self, records: Records, instance: Instance) -> None: ...

    def expire_code(self, instance: Instance) -> None: ...


class DialectWithCalls(Dialect, Protocol):
    """The server that has calls also posts their changes and its call settings'."""

    def call_changed(
        self, records: Records, instance: Instance, call: Call, change: str, extra: dict[str, Any]
    ) -> None: ...

    def settings_changed(self, records: Records, instance: Instance) -> None: ...


class Records:
    """The simulator's data and the operations on it; only ever handed out under the state's lock."""

    def __init__(self, config: SimulatorConfig, deliver: Callable[[Delivery], None]) -> None:
        self._config = config
        self._deliver = deliver
        self.reset()

    def reset(self) -> None:
        """Forget everything, in place: a dial waiting on the lock keeps the same records."""
        self.capabilities = self._config.capabilities.model_copy()
        self.instances: dict[str, Instance] = {}
        self.global_subscription: Subscription | None = None
        self.sent: list[SentMessage] = []
        self._delivered: dict[tuple[str, str, str], SentMessage] = {}
        self._events: OrderedDict[str, EmittedEvent] = OrderedDict()
        self.faults: list[Fault] = []
        # Evolution's IsOnWhatsapp cache (one for the whole server): LID JID -> phone JID.
        self.lid_numbers: dict[str, str] = {}
        # Files the Graph API serves by media id (Meta's media endpoints): id -> (bytes, type).
        self.meta_media: dict[str, tuple[bytes, str]] = {}
        self.failing_media: set[str] = set()  # ids whose download answers 404 (an expired id)
        self.failing_downloads: set[str] = set()  # Meta media ids whose node answers, their URL 404
        # Files a server keeps by the message that brought them (Evolution's getBase64 route).
        self.message_media: dict[str, tuple[bytes, str, str]] = {}  # message id -> (bytes, type, kind)
        # Each WhatsApp Business Account's templates (`meta_templates`): waba id -> (name, language) -> template.
        self.meta_templates: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        # Sends a server accepted and WhatsApp did not deliver (a Cloud API number outside the window).
        self.refused: list[dict[str, Any]] = []
        # Every file a customer sent, by message id (a download route finds it by its digest).
        self.message_files: dict[str, bytes] = {}
        # Files served at a URL (wuzapi's S3 bucket, the envelope's media URLs): key -> (bytes,
        # type, message id).
        self.url_files: dict[str, tuple[bytes, str, str]] = {}

    # --- instances ---------------------------------------------------------------------------

    def instance(self, instance_id: str) -> Instance:
        instance = self.instances.get(instance_id)
        if instance is None:
            raise SimError(404, "instance_not_found")
        return instance

    def instance_for_token(self, token: str, flavour: str) -> Instance | None:
        return next((i for i in self.instances.values() if i.token == token and i.flavour == flavour), None)

    def status_view(self, instance: Instance) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": instance.id,
            "kind": instance.kind,
            "connected": instance.connected,
            "updated": rfc3339(instance.updated_ns),
        }
        if instance.kind == "calls" and self.capabilities.calls_per_instance_limit:
            view.update(instance.calls_config())
        return view

    def effective_subscription(self, instance: Instance) -> tuple[Subscription | None, bool]:
        """The calls server's subscription of the instance, and whether it is the inherited global one."""
        if instance.subscription is not None:
            return instance.subscription, False
        return self.global_subscription, self.global_subscription is not None

    # --- messages ----------------------------------------------------------------------------

    def record_send(
        self, instance: Instance, phone: str, text: str, message_id: str, idempotency_key: str | None
    ) -> SentMessage:
        """What the recipient's phone shows: messages keyed by id, so a resent id is not a second one."""
        recipient = phone.removesuffix("@s.whatsapp.net")
        key = (instance.id, recipient, message_id)
        known = self._delivered.get(key)
        if known is not None:
            known.resends += 1
            return known
        message = SentMessage(
            message_id, instance.id, instance.flavour, recipient, text, idempotency_key, time.time_ns()
        )
        self.sent.append(message)
        self._delivered[key] = message
        instance.contacts.add(recipient)
        return message

    def keep_file(self, arrival: incoming.Arrival, flavour: str, owner: str = "") -> None:
        """A customer's file, kept where its server serves it from: by its digest (download
        routes), at its URL when it travels by one (wuzapi's S3, Evolution's MinIO, whose key
        names the instance's id `owner`, the envelope's own URLs)."""
        if arrival.kind not in incoming.DOWNLOADABLE:
            return
        self.message_files[arrival.message_id] = arrival.data
        if arrival.options.media_fails and flavour != "meta":
            self.failing_media.add(arrival.message_id)
        mode = arrival.options.mode
        by_url = {"wuzapi": ("s3", "both"), "evolution": ("s3",), "calls": ("url",)}.get(flavour, ())
        if mode in by_url:
            key = incoming.file_url(arrival, flavour, owner)[1]
            self.url_files[key] = (arrival.data, incoming.declared_type(arrival.kind), arrival.message_id)

    def last_sent_to(self, instance: Instance, recipient: str) -> str | None:
        """The id of the last message the instance sent `recipient` (what a reaction reacts to)."""
        return next((m.id for m in reversed(self.sent) if m.instance_id == instance.id and m.phone == recipient), None)

    # --- the webhooks the instances post ----------------------------------------------------

    def next_seq(self, instance: Instance) -> int:
        instance.seq += 1
        return instance.seq

    def publish(self, event_id: str, view: dict[str, Any], delivery: Delivery | None) -> None:
        """Hand the event to its delivery (if it is posted at all) and log it for `/_sim/events`."""
        if delivery is not None:
            self._deliver(delivery)
        self._events[event_id] = EmittedEvent(view, delivery)
        if len(self._events) > EVENT_LOG_SIZE:
            self._events.popitem(last=False)

    def post_to_hook(self, instance: Instance, name: str, body: bytes, content_type: str, *, wanted: bool) -> str:
        """A real server's webhook (wuzapi, Evolution, Meta) to the instance's hook; returns its event id."""
        seq = self.next_seq(instance)
        event_id = str(uuid.uuid4())
        delivery = None
        if wanted and instance.hook.url:
            secrets = (instance.hook.secret,) if instance.hook.secret is not None else ()
            delivery = Delivery(event_id, instance.id, instance.hook.url, body, secrets, instance.flavour, content_type)
        view = {
            "eventId": event_id,
            "instanceId": instance.id,
            "flavour": instance.flavour,
            "event": name,
            "seq": seq,
            "payload": _readable(body, content_type),
        }
        self.publish(event_id, view, delivery)
        return event_id

    def event_views(self, instance_id: str | None) -> list[dict[str, Any]]:
        return [
            {**event.view, "delivered": event.delivery is not None}
            for event in self._events.values()
            if instance_id is None or event.view["instanceId"] == instance_id
        ]

    def redeliver(self, event_id: str) -> None:
        event = self._events.get(event_id)
        if event is None:
            raise SimError(404, "event_not_found")
        if event.delivery is None:
            raise SimError(409, "event_not_subscribed", "the event was not sent to any URL")
        self._deliver(event.delivery)


class SimulatorState:
    """All mutable state. Every public method takes the lock; helpers starting with `_` expect it held."""

    def __init__(
        self,
        config: SimulatorConfig,
        *,
        deliver: Callable[[Delivery], None],
        calls: DialectWithCalls,
        dialects: Iterable[Dialect],
    ) -> None:
        self._lock = threading.Lock()
        self._dials_changed = threading.Condition(self._lock)
        self.admin_token = config.admin_token
        self._calls = calls
        self._dialects: dict[str, Dialect] = {dialect.flavour: dialect for dialect in (calls, *dialects)}
        self._records = Records(config, deliver)
        self.dials_held = False

    @contextmanager
    def locked(self) -> Iterator[Records]:
        """The records, for as long as the lock is held: how a dialect's routes read and change them."""
        with self._lock:
            yield self._records

    def reset(self) -> None:
        with self._lock:
            self._records.reset()
            self._release_dials()

    def hold_dials(self, held: bool) -> None:
        """While held, every dial keeps its reservation and waits: a dial in flight, frozen for tests."""
        with self._lock:
            if held:
                self.dials_held = True
            else:
                self._release_dials()

    def _release_dials(self) -> None:
        self.dials_held = False
        self._dials_changed.notify_all()

    def _dialect(self, instance: Instance) -> Dialect:
        return self._dialects[instance.flavour]

    # --- capabilities and faults -------------------------------------------------------------

    def capabilities(self) -> SimCapabilities:
        with self._lock:
            return self._records.capabilities.model_copy()

    def patch_capabilities(self, patch: CapabilitiesPatch) -> SimCapabilities:
        with self._lock:
            records = self._records
            records.capabilities = records.capabilities.model_copy(update=patch.model_dump(exclude_none=True))
            return records.capabilities.model_copy()

    def add_fault(self, body: FaultBody) -> None:
        with self._lock:
            self._records.faults.append(Fault(body.route, body.method, body.mode, body.times))

    def clear_faults(self) -> int:
        """Forget every pending fault; returns how many were still pending."""
        with self._lock:
            pending = len(self._records.faults)
            self._records.faults = []
            return pending

    def take_fault(self, route: str, method: str) -> str | None:
        """Consume one pending fault for this route, oldest first."""
        with self._lock:
            faults = self._records.faults
            for fault in faults:
                if fault.route == route and fault.method in (None, method):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        faults.remove(fault)
                    return fault.mode
            return None

    # --- instances ---------------------------------------------------------------------------

    def create_instance(self, body: CreateInstanceBody) -> dict[str, Any]:
        with self._lock:
            records = self._records
            if body.id in records.instances:
                raise SimError(409, "instance_exists")
            if any(instance.token == body.token for instance in records.instances.values()):
                raise SimError(409, "token_in_use")
            dialect = self._dialects[body.flavour]
            kind = body.kind or ("calls" if dialect.has_calls else "messages")
            if kind == "calls" and not dialect.has_calls:
                raise SimError(400, "calls_need_the_calls_server", "only the calls flavour has calls")
            dialect.check_new(records, body)
            if not body.paired and (body.connected or not isinstance(dialect, PairingDialect)):
                raise SimError(
                    400, "invalid_request", "paired: false is a wuzapi or Evolution session that is not connected"
                )
            instance = Instance(
                id=body.id,
                token=body.token,
                kind=kind,
                number=body.number,
                connected=body.connected,
                calls_max_concurrent=body.calls_max_concurrent or records.capabilities.calls_max_concurrent,
                calls_config_version=body.calls_config_version,
                updated_ns=time.time_ns(),
                flavour=body.flavour,
                session=body.connected,
                paired=body.paired,
                webhook_format=body.webhook_format,
                meta_phone_id=body.meta_phone_id,
                waba_id=body.waba_id or str(uuid.uuid4().int % 10**15),
                verify_token=body.verify_token,
            )
            if body.user_id is not None:
                instance.user_id = body.user_id
            dialect.set_up(instance, body)
            records.instances[body.id] = instance
            return self._control_view(instance)

    def control_view(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            return self._control_view(self._records.instance(instance_id))

    def _control_view(self, instance: Instance) -> dict[str, Any]:
        return {
            **self._records.status_view(instance),
            "flavour": instance.flavour,
            "number": instance.number,
            "session": instance.session,
            "paired": instance.paired,
            "codesDrawn": instance.codes_drawn if instance.pairing_since is not None else 0,
            **instance.calls_config(),
            "occupancy": instance.occupancy(),
            "reservations": len(instance.reservations),
            "seq": instance.seq,
            "calls": [call.view() for call in instance.calls.values()],
            **self._dialect(instance).control_view(self._records, instance),
        }

    def status(self, instance_id: str) -> dict[str, Any]:
        """The instance's summary: the calls server's `GET /instance/status` answers it."""
        with self._lock:
            return self._records.status_view(self._records.instance(instance_id))

    def set_connection(
        self,
        instance_id: str,
        connected: bool,
        *,
        include_calls_config: bool,
        reason: str | None = None,
        notify: bool = True,
    ) -> dict[str, Any]:
        """The WhatsApp connection changes; each flavour posts what its real server posts (with
        `notify` False nothing is posted: only a status read tells)."""
        with self._lock:
            records = self._records
            instance = records.instance(instance_id)
            dialect = self._dialect(instance)
            if dialect.always_connected:
                raise SimError(400, "always_connected", "a Cloud API number has no session to lose")
            instance.connected = connected
            instance.session = connected or reason == "disconnected"
            # Connected is paired; a logout unlinks the phone (a dropped socket keeps it linked).
            instance.paired = connected or (instance.paired and reason == "disconnected")
            instance.pairing_since = None
            instance.updated_ns = time.time_ns()
            if notify:
                dialect.connection_changed(records, instance, reason=reason, include_calls_config=include_calls_config)
            return {"instance": records.status_view(instance)}

    def scan(self, instance_id: str) -> dict[str, Any]:
        """A phone scans the code the session shows: the session is paired and connected, and
        the server posts what it posts when it connects. 409 `no_code` when none is shown."""
        with self._lock:
            records = self._records
            instance = records.instance(instance_id)
            dialect = self._dialect(instance)
            if not isinstance(dialect, PairingDialect):
                raise SimError(400, "not_paired_by_code", "only wuzapi and Evolution sessions pair by a code")
            dialect.advance_pairing(records, instance)
            if instance.pairing_since is None:
                raise SimError(409, "no_code", "the session shows no code: start it first")
            instance.pairing_since = None
            instance.paired = instance.session = instance.connected = True
            instance.updated_ns = time.time_ns()
            dialect.connection_changed(records, instance, reason=None, include_calls_config=True)
            return self._control_view(instance)

    def expire_code(self, instance_id: str) -> dict[str, Any]:
        """The code the session shows expires now: the next one is drawn (or the series ends)."""
        with self._lock:
            records = self._records
            instance = records.instance(instance_id)
            dialect = self._dialect(instance)
            if not isinstance(dialect, PairingDialect):
                raise SimError(400, "not_paired_by_code", "only wuzapi and Evolution sessions pair by a code")
            dialect.expire_code(instance)
            dialect.advance_pairing(records, instance)
            return self._control_view(instance)

    def set_call_settings(self, instance_id: str, calls_max_concurrent: int) -> dict[str, Any]:
        """Save the limit; every accepted save increments the version, even with the same value."""
        with self._lock:
            records = self._records
            instance = records.instance(instance_id)
            if not records.capabilities.calls_per_instance_limit:
                raise SimError(404, "not_found", "this server has no per-instance call limit")
            if instance.kind != "calls":
                raise SimError(400, "not_calls_instance")
            if instance.calls_config_version >= MAX_VERSION:
                raise SimError(409, "version_exhausted", "the 64-bit config version cannot grow")
            instance.calls_max_concurrent = calls_max_concurrent
            instance.calls_config_version += 1
            instance.updated_ns = time.time_ns()
            if records.capabilities.calls_settings_webhook:
                self._calls.settings_changed(records, instance)
            return {"instance": records.status_view(instance)}

    # --- webhook configuration kept by the control API ---------------------------------------

    def set_webhook_secrets(self, instance_id: str, secret: str, previous_secret: str | None) -> None:
        """The calls server: start (or end, with no previous) a rotation on the instance's own
        subscription. Other flavours: replace the HMAC key, `jwt_key` or app secret."""
        with self._lock:
            instance = self._records.instance(instance_id)
            self._dialect(instance).set_webhook_secrets(instance, secret, previous_secret)

    def set_webhook_format(self, instance_id: str, webhook_format: str) -> None:
        with self._lock:
            instance = self._records.instance(instance_id)
            if instance.flavour != "wuzapi":
                raise SimError(400, "not_wuzapi", "only wuzapi has a form mode")
            instance.webhook_format = webhook_format

    def set_global_webhook(self, body: GlobalWebhookBody | None) -> None:
        """The calls server's global subscription, inherited by instances without their own."""
        with self._lock:
            self._records.global_subscription = None
            if body is not None:
                self._records.global_subscription = Subscription(
                    body.url,
                    list(body.events),
                    dict(body.filters),
                    body.enabled,
                    body.secret,
                    body.previous_secret,
                )

    def meta_verification(self, instance_id: str) -> tuple[str, str]:
        """Where Meta would send its `hub.challenge` GET, and the verify token it would carry."""
        with self._lock:
            instance = self._records.instance(instance_id)
            if instance.flavour != "meta" or not instance.hook.url or instance.verify_token is None:
                raise SimError(400, "no_verification", "a Meta instance with a webhook URL and a verify token")
            return instance.hook.url, instance.verify_token

    def set_number_status(self, instance_id: str, body: NumberStatusBody) -> dict[str, Any]:
        """What the Graph API reports of a Meta number from now on (no webhook: Meta's
        `phone_number_quality_update` and account updates are not simulated)."""
        with self._lock:
            instance = self._records.instance(instance_id)
            if instance.flavour != "meta":
                raise SimError(400, "not_meta", "only a Cloud API number has a phone number node")
            instance.number_status = body.status or instance.number_status
            instance.quality_rating = body.quality_rating or instance.quality_rating
            instance.messaging_limit = body.messaging_limit or instance.messaging_limit
            instance.throughput = body.throughput or instance.throughput
            return {
                "status": instance.number_status,
                "qualityRating": instance.quality_rating,
                "messagingLimit": instance.messaging_limit,
                "throughput": instance.throughput,
            }

    # --- messages ----------------------------------------------------------------------------

    def set_send_error(self, instance_id: str, code: str | None, times: int | None) -> dict[str, Any]:
        """Every send of the instance is refused with `code` (`times` sends, or until cleared)."""
        with self._lock:
            instance = self._records.instance(instance_id)
            if code is not None and code not in self._dialect(instance).send_error_codes:
                if code == "463":
                    raise SimError(400, "not_on_this_server", "463 is a wuzapi (whatsmeow) send error")
                raise SimError(400, "not_on_this_server", "Meta error codes are answered by the /meta server")
            instance.send_error = code
            instance.send_error_remaining = times if code is not None else None
            return {"sendError": code, "remaining": instance.send_error_remaining}

    def sent_messages(self) -> list[dict[str, Any]]:
        with self._lock:
            return [message.view() for message in self._records.sent]

    def incoming_message(
        self,
        instance_id: str,
        sender: str,
        text: str,
        kind: str = "text",
        *,
        push_name: str | None = "Cliente",
        addressing: str = "pn",
        options: ArrivalOptions | None = None,
    ) -> dict[str, Any]:
        """A message from `sender` arrives, posted as the instance's server posts it: `{id, eventId}`
        (`eventId` is the simulator's, for `/_sim/webhooks/redeliver`; the calls envelope's too).
        `kind` other than text: `text` is the caption of an image, video or document. `options`:
        how its file travels, and the message it quotes (`incoming.ArrivalOptions`).

        `addressing` (Evolution only) is how WhatsApp addressed the chat: `pn`, `lid` or
        `lid_only` (see `payloads.evolution_upsert`)."""
        with self._lock:
            records = self._records
            instance = records.instance(instance_id)
            dialect = self._dialect(instance)
            if not dialect.always_connected and not instance.connected:
                raise SimError(409, "not_connected", "the instance has no WhatsApp session")
            if addressing != "pn" and not dialect.lid_chats:
                raise SimError(400, "not_on_this_server", "only the Evolution server simulates LID-addressed chats")
            sender = sender.lstrip("+")
            instance.contacts.add(sender)
            instance.heard[sender] = time.time()
            options = options or ArrivalOptions()
            try:
                incoming.checked_mode(dialect.flavour, options)
            except ValueError as refused:
                raise SimError(400, "not_on_this_server", str(refused)) from None
            if kind != "text" or options.quote:
                message_id, event_id = dialect.media_arrived(records, instance, sender, text, kind, options=options)
            else:
                message_id, event_id = dialect.text_arrived(
                    records, instance, sender, text, push_name=push_name, addressing=addressing
                )
            return {"id": message_id, "eventId": event_id}

    def incoming_choice(self, instance_id: str, sender: str, kind: str, option_id: str, title: str) -> dict[str, Any]:
        """`sender` taps a button or a row of the last message the instance sent them, on a server
        whose interactive messages reach the user (Meta's; Evolution's lists): `{id, eventId}`."""
        with self._lock:
            records = self._records
            instance = records.instance(instance_id)
            dialect = self._dialect(instance)
            arrived = getattr(dialect, "choice_arrived", None)
            if arrived is None:
                raise SimError(400, "not_native", "this server's users answer a menu by typing the option's number")
            if not dialect.always_connected and not instance.connected:
                raise SimError(409, "not_connected", "the instance has no WhatsApp session")
            sender = sender.lstrip("+")
            instance.heard[sender] = time.time()
            message_id, event_id = arrived(records, instance, sender, kind=kind, option_id=option_id, title=title)
            return {"id": message_id, "eventId": event_id}

    def receipt(self, instance_id: str, message_id: str, status: str, *, outside_window: bool = False) -> None:
        """The recipient's phone got (or read) a message the instance sent; `outside_window`: a
        Cloud API number's `failed` status for the customer-service window (131047), which Meta
        may post after accepting a send its own window check let through."""
        with self._lock:
            records = self._records
            instance = records.instance(instance_id)
            message = next(
                (m for m in reversed(records.sent) if m.id == message_id and m.instance_id == instance_id), None
            )
            if message is None:
                raise SimError(404, "message_not_found")
            dialect = self._dialect(instance)
            if outside_window:
                refused = getattr(dialect, "window_failure", None)
                if refused is None or status != "failed":
                    raise SimError(400, "not_meta", "only a Cloud API number fails a send for the window")
                refused(records, instance, message)
                return
            dialect.receipt(records, instance, message, status)

    # --- calls -------------------------------------------------------------------------------
    # Calls are the calls server's alone; each change is posted as its `call` event. The answers
    # are call views (`Call.view`), taken under the lock.

    def dial(self, instance_id: str, phone: str, video: bool, idempotency_key: str | None) -> str:
        """Reserve a slot, then create the call (at once, or when held dials are released); returns its id.

        The reservation counts toward the limit but `/call/active` does not list it. A repeated
        Idempotency-Key returns the same call; a repeat while the first is in flight waits for it.
        """
        with self._lock:
            instance = self._calls_instance(instance_id)
            known = self._known_dial(instance, idempotency_key, phone, video)
            if known is not None:
                return known
            if not instance.connected:
                raise SimError(409, "not_connected", "the instance has no WhatsApp session")
            self._check_video(video)
            self._check_slot(instance)
            reservation = uuid.uuid4().hex
            instance.reservations.add(reservation)
            if idempotency_key is not None:
                instance.dials[idempotency_key] = DialRecord(phone, video)
            self._dials_changed.wait_for(lambda: not self.dials_held)
            instance.reservations.discard(reservation)
            call = self._new_call(instance, "outgoing", phone, video)
            if idempotency_key is not None:
                instance.dials[idempotency_key] = DialRecord(phone, video, call.call_id)
            self._dials_changed.notify_all()
            self._call_changed(instance, call, "ringing")
            return call.call_id

    def _known_dial(self, instance: Instance, key: str | None, phone: str, video: bool) -> str | None:
        """The call id an Idempotency-Key already produced, waiting while that dial is in flight."""
        if key is None:
            return None
        self._dials_changed.wait_for(lambda: key not in instance.dials or instance.dials[key].call_id is not None)
        record = instance.dials.get(key)
        if record is None:
            return None
        if (record.phone, record.video) != (phone, video):
            raise SimError(422, "idempotency_key_reused", "the key was used for another dial")
        return record.call_id

    def incoming_call(self, instance_id: str, sender: str, video: bool) -> str:
        """A call from `sender` rings on the instance; returns its id."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            if not instance.connected:
                raise SimError(409, "not_connected")
            self._check_video(video)
            self._check_slot(instance)
            call = self._new_call(instance, "incoming", sender, video)
            self._call_changed(instance, call, "offer")
            return call.call_id

    def active_calls(self, instance_id: str) -> list[dict[str, Any]]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            return [call.view() for call in instance.calls.values() if call.live]

    def call_history(self, instance_id: str) -> list[dict[str, Any]]:
        """Every call of the instance, newest first, ended ones included."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            return [call.view() for call in reversed(instance.calls.values())]

    def get_call(self, instance_id: str, call_id: str) -> dict[str, Any]:
        with self._lock:
            return self._call(self._calls_instance(instance_id), call_id).view()

    def hangup(self, instance_id: str, call_id: str) -> dict[str, Any]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._call(instance, call_id)
            self._end(instance, call, reason="hangup", ended_by="local")
            return call.view()

    def stop_video(self, instance_id: str, call_id: str) -> dict[str, Any]:
        """Turn the camera off: the call keeps its slot."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._live_call(instance, call_id)
            call.video = False
            self._call_changed(instance, call, "video")
            return call.view()

    def call_action(self, instance_id: str, call_id: str, action: str, details: CallActionBody) -> dict[str, Any]:
        """Drive a call from the peer's or the network's side (control API)."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._call(instance, call_id)
            if action == "end":
                self._end(instance, call, reason=details.reason or "hangup", ended_by=details.ended_by or "remote")
            elif action in ("recording_ready", "recording_failed"):
                recording = {"status": action.removeprefix("recording_"), "url": details.url}
                self._call_changed(instance, call, action, recording=recording)
            else:
                self._advance(instance, self._live_call(instance, call_id), action, details)
            return call.view()

    def _advance(self, instance: Instance, call: Call, action: str, details: CallActionBody) -> None:
        if action == "answer":
            if call.state != "ringing":
                raise SimError(409, "invalid_transition", f"cannot answer a call in state {call.state}")
            call.state, call.answered_ns = "connecting", time.time_ns()
            self._call_changed(instance, call, "answered")
        elif action == "active":
            call.state = "active"
            call.answered_ns = call.answered_ns or time.time_ns()
            self._call_changed(instance, call, "active")
        else:
            call.video = True if details.video is None else details.video
            self._call_changed(instance, call, "video")

    def require_live_call(self, instance_id: str, call_id: str) -> None:
        """For a media attachment: `404 call_not_found` for an unknown call, `409 call_ended` for an ended one."""
        with self._lock:
            self._live_call(self._calls_instance(instance_id), call_id)

    def call_is_live(self, instance_id: str, call_id: str) -> bool:
        with self._lock:
            instance = self._records.instances.get(instance_id)
            call = instance.calls.get(call_id) if instance is not None else None
            return call is not None and call.live

    def _call_changed(self, instance: Instance, call: Call, change: str, **extra: Any) -> None:
        self._calls.call_changed(self._records, instance, call, change, extra)

    def _check_slot(self, instance: Instance) -> None:
        capabilities = self._records.capabilities
        limit = (
            instance.calls_max_concurrent
            if capabilities.calls_per_instance_limit
            else capabilities.calls_max_concurrent
        )
        if instance.occupancy() >= limit:
            raise SimError(409, "line_busy", "no free call slot on this instance")

    def _new_call(self, instance: Instance, direction: str, peer: str, video: bool) -> Call:
        call = Call(uuid.uuid4().hex.upper(), direction, peer, instance.number, video, "ringing", time.time_ns())
        instance.calls[call.call_id] = call
        return call

    def _end(self, instance: Instance, call: Call, *, reason: str, ended_by: str) -> None:
        """End once: a repeat keeps the first reason and emits nothing."""
        if not call.live:
            return
        call.state, call.ended_ns, call.end_reason, call.ended_by = "ended", time.time_ns(), reason, ended_by
        self._call_changed(instance, call, "ended")

    def _check_video(self, video: bool) -> None:
        if video and not self._records.capabilities.calls_video:
            raise SimError(400, "video_unsupported")

    def _calls_instance(self, instance_id: str) -> Instance:
        if not self._records.capabilities.calls:
            raise SimError(404, "not_found", "this server has no calls")
        instance = self._records.instance(instance_id)
        if instance.kind != "calls":
            raise SimError(400, "not_calls_instance")
        return instance

    def _call(self, instance: Instance, call_id: str) -> Call:
        call = instance.calls.get(call_id)
        if call is None:
            raise SimError(404, "call_not_found")
        return call

    def _live_call(self, instance: Instance, call_id: str) -> Call:
        call = self._call(instance, call_id)
        if not call.live:
            raise SimError(409, "call_ended")
        return call

    # --- events ------------------------------------------------------------------------------

    def events(self, instance_id: str | None = None) -> list[dict[str, Any]]:
        """Calls-server events as their envelope; other flavours as `{eventId, instanceId, flavour,
        event, seq, payload}` (`payload`: the posted JSON, or the form fields with `jsonData` parsed)."""
        with self._lock:
            return self._records.event_views(instance_id)

    def redeliver(self, event_id: str) -> None:
        """Send an already emitted event again, byte for byte: what a duplicate looks like."""
        with self._lock:
            self._records.redeliver(event_id)


def _readable(body: bytes, content_type: str) -> Any:
    if content_type.startswith("application/x-www-form-urlencoded"):
        fields: dict[str, Any] = dict(parse_qsl(body.decode(), keep_blank_values=True))
        fields["jsonData"] = json.loads(fields["jsonData"])
        return fields
    return json.loads(body)

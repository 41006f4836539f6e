"""The simulator's state: instances, calls, subscriptions, faults and the events they emit.

Everything lives behind one lock, and an event is emitted under the same lock as the change
that causes it (the seed: "O AtendroZAP grava a configuração e o evento atomicamente"), so the
per-instance `seq` order is the order of the changes.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from devstack.simulator.schemas import (
    MAX_VERSION,
    CallActionBody,
    CapabilitiesPatch,
    CreateInstanceBody,
    FaultBody,
    GlobalWebhookBody,
    SimulatorConfig,
    WebhookBody,
)

LIVE_STATES = frozenset({"ringing", "connecting", "active"})
DEFAULT_EVENTS = {
    "calls": ["call", "call_settings", "connection"],
    "messages": ["message", "receipt", "connection"],
}
EVENT_LOG_SIZE = 10_000


class SimError(Exception):
    """An answer other than 2xx: becomes `{"error": code, "message": message}` with `status`."""

    def __init__(self, status: int, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.status = status
        self.code = code
        self.message = message or code


def rfc3339(ns: int) -> str:
    return datetime.fromtimestamp(ns // 1_000_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_nano(ns: int) -> str:
    seconds, fraction = divmod(ns, 1_000_000_000)
    return f"{datetime.fromtimestamp(seconds, UTC).strftime('%Y-%m-%dT%H:%M:%S')}.{fraction:09d}Z"


@dataclass
class Subscription:
    url: str
    events: list[str]
    filters: dict[str, Any]
    enabled: bool
    secret: str = field(repr=False)
    previous_secret: str | None = field(default=None, repr=False)

    def wants(self, event: str) -> bool:
        return self.enabled and event in self.events

    def signing_secrets(self) -> tuple[str, ...]:
        """The current secret first, then the one being rotated out, if any."""
        return (self.secret,) if self.previous_secret is None else (self.secret, self.previous_secret)

    def public_view(self, *, inherited: bool) -> dict[str, Any]:
        """What `GET /webhook` shows: never the secret."""
        return {
            "url": self.url,
            "events": list(self.events),
            "filters": dict(self.filters),
            "enabled": self.enabled,
            "inherited": inherited,
        }


@dataclass
class Call:
    call_id: str
    direction: str
    peer: str
    own_number: str
    video: bool
    state: str
    created_ns: int
    answered_ns: int | None = None
    ended_ns: int | None = None
    end_reason: str | None = None
    ended_by: str | None = None

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def view(self) -> dict[str, Any]:
        incoming = self.direction == "incoming"
        return {
            "callId": self.call_id,
            "state": self.state,
            "direction": self.direction,
            "from": self.peer if incoming else self.own_number,
            "to": self.own_number if incoming else self.peer,
            "video": self.video,
            "endReason": self.end_reason,
            "endedBy": self.ended_by,
            "createdAt": rfc3339_nano(self.created_ns),
            "answeredAt": rfc3339_nano(self.answered_ns) if self.answered_ns else None,
            "endedAt": rfc3339_nano(self.ended_ns) if self.ended_ns else None,
        }


@dataclass(frozen=True)
class DialRecord:
    """What an Idempotency-Key was first used for: a repeat returns the same call."""

    phone: str
    video: bool
    call_id: str | None = None  # None while the dial holds a reservation and has no call yet


@dataclass
class Instance:
    id: str
    token: str = field(repr=False)
    kind: str
    number: str
    connected: bool
    calls_max_concurrent: int
    calls_config_version: int
    updated_ns: int
    subscription: Subscription | None = None
    seq: int = 0
    calls: dict[str, Call] = field(default_factory=dict)
    dials: dict[str, DialRecord] = field(default_factory=dict)
    reservations: set[str] = field(default_factory=set)

    def occupancy(self) -> int:
        """Live calls in and out, voice or video, one slot each, plus dials reserved without a call id."""
        return sum(1 for call in self.calls.values() if call.live) + len(self.reservations)

    def calls_config(self) -> dict[str, Any]:
        return {
            "callsMaxConcurrent": self.calls_max_concurrent,
            "callsConfigVersion": self.calls_config_version,
        }


@dataclass(frozen=True)
class Delivery:
    """One event to POST to one URL, signed with these secrets at each attempt."""

    event_id: str
    instance_id: str
    url: str
    body: bytes
    secrets: tuple[str, ...] = field(repr=False)


@dataclass(frozen=True)
class EmittedEvent:
    envelope: dict[str, Any]
    delivery: Delivery | None


@dataclass(frozen=True)
class SentMessage:
    id: str
    instance_id: str
    phone: str
    body: str
    idempotency_key: str | None
    sent_ns: int

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instance": self.instance_id,
            "phone": self.phone,
            "body": self.body,
            "idempotencyKey": self.idempotency_key,
            "time": rfc3339_nano(self.sent_ns),
        }


@dataclass
class Fault:
    route: str
    method: str | None
    mode: str
    remaining: int


class SimulatorState:
    """All mutable state. Every public method takes the lock; helpers starting with `_` expect it held."""

    def __init__(
        self,
        config: SimulatorConfig,
        *,
        deliver: Callable[[Delivery], None],
    ) -> None:
        self._lock = threading.Lock()
        self._dials_changed = threading.Condition(self._lock)
        self._config = config
        self._deliver = deliver
        self.dials_held = False
        self.reset()

    def _reset(self) -> None:
        self.capabilities = self._config.capabilities.model_copy()
        self._release_dials()
        self._instances: dict[str, Instance] = {}
        self._global_subscription: Subscription | None = None
        self._sent: list[SentMessage] = []
        self._events: OrderedDict[str, EmittedEvent] = OrderedDict()
        self._faults: list[Fault] = []

    def reset(self) -> None:
        with self._lock:
            self._reset()

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

    # --- capabilities and faults -------------------------------------------------------------

    def capabilities_view(self) -> dict[str, Any]:
        with self._lock:
            caps = self.capabilities
            return {
                "capabilities": {
                    "calls": caps.calls,
                    "calls_per_instance_limit": caps.calls_per_instance_limit,
                    "calls_settings_webhook": caps.calls_settings_webhook,
                    "calls_video": caps.calls_video,
                },
                "calls_max_concurrent": caps.calls_max_concurrent,
                "calls_max_concurrent_range": {"min": 1, "max": 8},
            }

    def patch_capabilities(self, patch: CapabilitiesPatch) -> dict[str, Any]:
        with self._lock:
            self.capabilities = self.capabilities.model_copy(update=patch.model_dump(exclude_none=True))
        return self.capabilities_view()

    def add_fault(self, body: FaultBody) -> None:
        with self._lock:
            self._faults.append(Fault(body.route, body.method, body.mode, body.times))

    def take_fault(self, route: str, method: str) -> str | None:
        """Consume one pending fault for this route, oldest first."""
        with self._lock:
            for fault in self._faults:
                if fault.route == route and fault.method in (None, method):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return fault.mode
            return None

    # --- instances ---------------------------------------------------------------------------

    def create_instance(self, body: CreateInstanceBody) -> dict[str, Any]:
        with self._lock:
            if body.id in self._instances:
                raise SimError(409, "instance_exists")
            if any(instance.token == body.token for instance in self._instances.values()):
                raise SimError(409, "token_in_use")
            if body.webhook_url is not None and body.webhook_secret is None:
                raise SimError(400, "secret_required", "a webhook URL needs a secret")
            instance = Instance(
                id=body.id,
                token=body.token,
                kind=body.kind,
                number=body.number,
                connected=body.connected,
                calls_max_concurrent=body.calls_max_concurrent or self.capabilities.calls_max_concurrent,
                calls_config_version=body.calls_config_version,
                updated_ns=time.time_ns(),
            )
            if body.webhook_url is not None and body.webhook_secret is not None:
                events = body.webhook_events if body.webhook_events is not None else DEFAULT_EVENTS[body.kind]
                instance.subscription = Subscription(body.webhook_url, list(events), {}, True, body.webhook_secret)
            self._instances[body.id] = instance
            return self._control_view(instance)

    def instance_for_token(self, token: str) -> str | None:
        with self._lock:
            for instance in self._instances.values():
                if instance.token == token:
                    return instance.id
            return None

    def control_view(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            return self._control_view(self._instance(instance_id))

    def status(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            return {"instance": self._status_view(self._instance(instance_id))}

    def set_connection(self, instance_id: str, connected: bool, *, include_calls_config: bool) -> dict[str, Any]:
        with self._lock:
            instance = self._instance(instance_id)
            instance.connected = connected
            instance.updated_ns = time.time_ns()
            summary: dict[str, Any] = {"kind": instance.kind}
            if instance.kind == "calls" and include_calls_config:
                summary.update(instance.calls_config())
            data = {
                "connected": connected,
                "number": instance.number,
                "timestamp": rfc3339_nano(instance.updated_ns),
            }
            self._emit(instance, "connection", data, instance_summary=summary)
            return {"instance": self._status_view(instance)}

    def set_call_settings(self, instance_id: str, calls_max_concurrent: int) -> dict[str, Any]:
        """Save the limit; every accepted save increments the version, even with the same value."""
        with self._lock:
            instance = self._instance(instance_id)
            if not self.capabilities.calls_per_instance_limit:
                raise SimError(404, "not_found", "this server has no per-instance call limit")
            if instance.kind != "calls":
                raise SimError(400, "not_calls_instance")
            if instance.calls_config_version >= MAX_VERSION:
                raise SimError(409, "version_exhausted", "the 64-bit config version cannot grow")
            instance.calls_max_concurrent = calls_max_concurrent
            instance.calls_config_version += 1
            instance.updated_ns = time.time_ns()
            if self.capabilities.calls_settings_webhook:
                data = {
                    "kind": instance.kind,
                    **instance.calls_config(),
                    "updatedAt": rfc3339_nano(instance.updated_ns),
                }
                self._emit(instance, "call_settings", data)
            return {"instance": self._status_view(instance)}

    def _instance(self, instance_id: str) -> Instance:
        instance = self._instances.get(instance_id)
        if instance is None:
            raise SimError(404, "instance_not_found")
        return instance

    def _status_view(self, instance: Instance) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": instance.id,
            "kind": instance.kind,
            "connected": instance.connected,
            "updated": rfc3339(instance.updated_ns),
        }
        if instance.kind == "calls" and self.capabilities.calls_per_instance_limit:
            view.update(instance.calls_config())
        return view

    def _control_view(self, instance: Instance) -> dict[str, Any]:
        subscription, inherited = self._effective_subscription(instance)
        webhook = None
        if subscription is not None:
            webhook = {
                **subscription.public_view(inherited=inherited),
                "hasSecret": bool(subscription.secret),
                "rotating": subscription.previous_secret is not None,
            }
        return {
            **self._status_view(instance),
            "number": instance.number,
            **instance.calls_config(),
            "occupancy": instance.occupancy(),
            "reservations": len(instance.reservations),
            "seq": instance.seq,
            "calls": [call.view() for call in instance.calls.values()],
            "webhook": webhook,
        }

    # --- webhook subscriptions ---------------------------------------------------------------

    def get_webhook(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            subscription, inherited = self._effective_subscription(self._instance(instance_id))
            if subscription is None:
                return {"url": None, "events": [], "filters": {}, "enabled": False, "inherited": False}
            return subscription.public_view(inherited=inherited)

    def post_webhook(self, instance_id: str, body: WebhookBody) -> dict[str, Any]:
        """Merge into the current subscription and save it as the instance's own.

        Posting on an inherited subscription creates the instance's own copy, as the real
        server does. Omitting `secret` keeps the current one only for the same URL.
        """
        with self._lock:
            instance = self._instance(instance_id)
            current, _ = self._effective_subscription(instance)
            url = body.url if body.url is not None else (current.url if current else None)
            if url is None:
                raise SimError(400, "url_required")
            if body.secret is not None:
                secret, previous = body.secret, None
            elif current is not None and current.url == url:
                secret, previous = current.secret, current.previous_secret
            else:
                raise SimError(400, "secret_required", "a new URL needs a secret")
            instance.subscription = Subscription(
                url=url,
                events=list(body.events if body.events is not None else (current.events if current else [])),
                filters=dict(body.filters if body.filters is not None else (current.filters if current else {})),
                enabled=body.enabled if body.enabled is not None else (current.enabled if current else True),
                secret=secret,
                previous_secret=previous,
            )
            return instance.subscription.public_view(inherited=False)

    def set_webhook_secrets(self, instance_id: str, secret: str, previous_secret: str | None) -> None:
        """Start (or end, with no previous) a rotation on the instance's own subscription."""
        with self._lock:
            subscription = self._instance(instance_id).subscription
            if subscription is None:
                raise SimError(409, "no_own_subscription")
            subscription.secret, subscription.previous_secret = secret, previous_secret

    def set_global_webhook(self, body: GlobalWebhookBody | None) -> None:
        with self._lock:
            self._global_subscription = None
            if body is not None:
                self._global_subscription = Subscription(
                    body.url,
                    list(body.events),
                    dict(body.filters),
                    body.enabled,
                    body.secret,
                    body.previous_secret,
                )

    def _effective_subscription(self, instance: Instance) -> tuple[Subscription | None, bool]:
        if instance.subscription is not None:
            return instance.subscription, False
        return self._global_subscription, self._global_subscription is not None

    # --- messages ----------------------------------------------------------------------------

    def send_text(self, instance_id: str, phone: str, body: str, idempotency_key: str | None) -> dict[str, Any]:
        """Accept a message. Not idempotent, like the real server: a retry sends it twice."""
        with self._lock:
            instance = self._connected_instance(instance_id)
            message = SentMessage(_message_id(), instance.id, phone, body, idempotency_key, time.time_ns())
            self._sent.append(message)
            return {"id": message.id}

    def sent_messages(self) -> list[dict[str, Any]]:
        with self._lock:
            return [message.view() for message in self._sent]

    def incoming_message(self, instance_id: str, sender: str, text: str) -> dict[str, Any]:
        with self._lock:
            instance = self._connected_instance(instance_id)
            data = {
                "id": _message_id(),
                "from": sender,
                "text": text,
                "timestamp": rfc3339_nano(time.time_ns()),
            }
            self._emit(instance, "message", data)
            return {"id": data["id"]}

    def receipt(self, instance_id: str, message_id: str, status: str) -> None:
        with self._lock:
            instance = self._instance(instance_id)
            if not any(m.id == message_id and m.instance_id == instance_id for m in self._sent):
                raise SimError(404, "message_not_found")
            data = {"id": message_id, "status": status, "timestamp": rfc3339_nano(time.time_ns())}
            self._emit(instance, "receipt", data)

    def _connected_instance(self, instance_id: str) -> Instance:
        instance = self._instance(instance_id)
        if not instance.connected:
            raise SimError(409, "not_connected", "the instance has no WhatsApp session")
        return instance

    # --- calls -------------------------------------------------------------------------------

    def dial(self, instance_id: str, phone: str, video: bool, idempotency_key: str | None) -> dict[str, Any]:
        """Reserve a slot, then create the call (at once, or when held dials are released).

        The reservation counts toward the limit but `/call/active` does not list it. A repeated
        Idempotency-Key returns the same call; a repeat while the first is in flight waits for it.
        """
        with self._lock:
            instance = self._calls_instance(instance_id)
            known = self._known_dial(instance, idempotency_key, phone, video)
            if known is not None:
                return {"callId": known}
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
            self._emit_call(instance, call, "ringing")
            return {"callId": call.call_id}

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

    def incoming_call(self, instance_id: str, sender: str, video: bool) -> dict[str, Any]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            if not instance.connected:
                raise SimError(409, "not_connected")
            self._check_video(video)
            self._check_slot(instance)
            call = self._new_call(instance, "incoming", sender, video)
            self._emit_call(instance, call, "offer")
            return {"callId": call.call_id}

    def active_calls(self, instance_id: str) -> dict[str, Any]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            return {"calls": [call.view() for call in instance.calls.values() if call.live]}

    def call_history(self, instance_id: str) -> dict[str, Any]:
        """Every call of the instance, newest first, ended ones included."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            return {"calls": [call.view() for call in reversed(instance.calls.values())]}

    def get_call(self, instance_id: str, call_id: str) -> dict[str, Any]:
        with self._lock:
            return {"call": self._call(self._calls_instance(instance_id), call_id).view()}

    def hangup(self, instance_id: str, call_id: str) -> dict[str, Any]:
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._call(instance, call_id)
            self._end(instance, call, reason="hangup", ended_by="local")
            return {"call": call.view()}

    def stop_video(self, instance_id: str, call_id: str) -> dict[str, Any]:
        """Turn the camera off: the call keeps its slot."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._live_call(instance, call_id)
            call.video = False
            self._emit_call(instance, call, "video")
            return {"call": call.view()}

    def call_action(self, instance_id: str, call_id: str, action: str, details: CallActionBody) -> dict[str, Any]:
        """Drive a call from the peer's or the network's side (control API)."""
        with self._lock:
            instance = self._calls_instance(instance_id)
            call = self._call(instance, call_id)
            if action == "end":
                self._end(instance, call, reason=details.reason or "hangup", ended_by=details.ended_by or "remote")
            elif action in ("recording_ready", "recording_failed"):
                recording = {"status": action.removeprefix("recording_"), "url": details.url}
                self._emit_call(instance, call, action, recording=recording)
            else:
                self._advance(instance, self._live_call(instance, call_id), action, details)
            return {"call": call.view()}

    def _advance(self, instance: Instance, call: Call, action: str, details: CallActionBody) -> None:
        if action == "answer":
            if call.state != "ringing":
                raise SimError(409, "invalid_transition", f"cannot answer a call in state {call.state}")
            call.state, call.answered_ns = "connecting", time.time_ns()
            self._emit_call(instance, call, "answered")
        elif action == "active":
            call.state = "active"
            call.answered_ns = call.answered_ns or time.time_ns()
            self._emit_call(instance, call, "active")
        else:
            call.video = True if details.video is None else details.video
            self._emit_call(instance, call, "video")

    def _check_slot(self, instance: Instance) -> None:
        limit = (
            instance.calls_max_concurrent
            if self.capabilities.calls_per_instance_limit
            else self.capabilities.calls_max_concurrent
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
        self._emit_call(instance, call, "ended")

    def _check_video(self, video: bool) -> None:
        if video and not self.capabilities.calls_video:
            raise SimError(400, "video_unsupported")

    def _calls_instance(self, instance_id: str) -> Instance:
        if not self.capabilities.calls:
            raise SimError(404, "not_found", "this server has no calls")
        instance = self._instance(instance_id)
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
        with self._lock:
            return [
                {**event.envelope, "delivered": event.delivery is not None}
                for event in self._events.values()
                if instance_id is None or event.envelope["instanceId"] == instance_id
            ]

    def redeliver(self, event_id: str) -> None:
        """Send an already emitted event again, byte for byte: what a duplicate looks like."""
        with self._lock:
            event = self._events.get(event_id)
            if event is None:
                raise SimError(404, "event_not_found")
            if event.delivery is None:
                raise SimError(409, "event_not_subscribed", "the event was not sent to any URL")
            self._deliver(event.delivery)

    def _emit_call(self, instance: Instance, call: Call, sub_event: str, **extra: Any) -> None:
        data = {"type": sub_event, **call.view(), **extra, "timestamp": rfc3339_nano(time.time_ns())}
        self._emit(instance, "call", data)

    def _emit(
        self,
        instance: Instance,
        name: str,
        data: dict[str, Any],
        instance_summary: dict[str, Any] | None = None,
    ) -> None:
        instance.seq += 1
        envelope: dict[str, Any] = {
            "EventType": name,
            "event": name,
            "eventId": str(uuid.uuid4()),
            "instanceId": instance.id,
            "seq": instance.seq,
            "data": data,
        }
        if instance_summary is not None:
            envelope["instance"] = instance_summary
        body = json.dumps(envelope, separators=(",", ":")).encode()
        subscription, _ = self._effective_subscription(instance)
        delivery = None
        if subscription is not None and subscription.wants(name):
            delivery = Delivery(
                envelope["eventId"], instance.id, subscription.url, body, subscription.signing_secrets()
            )
            self._deliver(delivery)
        self._events[envelope["eventId"]] = EmittedEvent(envelope, delivery)
        if len(self._events) > EVENT_LOG_SIZE:
            self._events.popitem(last=False)


def _message_id() -> str:
    return "3EB0" + uuid.uuid4().hex[:16].upper()

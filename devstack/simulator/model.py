"""The simulator's records: instances of each flavour, calls, subscriptions, sent messages, deliveries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from devstack.simulator import wire

LIVE_STATES = frozenset({"ringing", "connecting", "active"})


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
    """The calls server's subscription (`GET/POST /webhook` at the root)."""

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
class Hook:
    """The webhook of a wuzapi, Evolution or Meta instance.

    `events` is what the server stores (wuzapi's `GET /webhook` shows it); `live_events` is what
    delivery reads (wuzapi's in-memory copy, which a `POST /webhook` without `events` empties).
    `secret` is wuzapi's HMAC key, Evolution's `jwt_key` or Meta's app secret.
    """

    url: str = ""
    events: list[str] = field(default_factory=list)
    live_events: list[str] = field(default_factory=list)
    secret: str | None = field(default=None, repr=False)


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
    """One WhatsApp number on one of the simulated servers (`flavour`).

    `connected` is the WhatsApp connection; `session` says whether a wuzapi-style server still
    has a client for it (False after a logout: sends answer `no session`).
    """

    id: str
    token: str = field(repr=False)
    kind: str
    number: str
    connected: bool
    calls_max_concurrent: int
    calls_config_version: int
    updated_ns: int
    flavour: str = "calls"
    session: bool = True
    # A phone is linked to the session (False: never paired, or logged out): starting the session
    # then draws pairing codes (`pairing.py`) from `pairing_since` until one is scanned.
    paired: bool = True
    pairing_since: float | None = None
    codes_drawn: int = 0
    pairing_attempt: int = 0
    subscription: Subscription | None = None
    hook: Hook = field(default_factory=Hook)
    webhook_format: str = "json"
    user_id: str = field(default_factory=wire.wuzapi_user_id)
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    meta_phone_id: str | None = None
    waba_id: str = ""
    verify_token: str | None = field(default=None, repr=False)
    # A Meta number's standing, as its phone number node answers it (`/_sim/.../number-status`).
    number_status: str = "CONNECTED"
    quality_rating: str = "GREEN"
    messaging_limit: str = "TIER_2K"
    throughput: str = "STANDARD"
    seq: int = 0
    calls: dict[str, Call] = field(default_factory=dict)
    dials: dict[str, DialRecord] = field(default_factory=dict)
    reservations: set[str] = field(default_factory=set)
    # An injected refusal of every send (`SendErrorBody`): its code and how many sends it still
    # refuses (None: until cleared).
    send_error: str | None = None
    send_error_remaining: int | None = None
    # Who the number has a conversation with (sent to, or heard from): the reach-out timelock
    # only refuses the others.
    contacts: set[str] = field(default_factory=set)
    # Evolution's contact rows: the last pushName heard, by the chat's `remoteJid`.
    push_names: dict[str, str] = field(default_factory=dict)
    # When each user last wrote to the number (unix seconds): a Cloud API number's
    # customer-service window with them.
    heard: dict[str, float] = field(default_factory=dict)

    def take_send_error(self, recipient: str) -> str | None:
        """The injected refusal for a send to `recipient`, if any, counting it down. A 463 spares
        the number's existing contacts, as WhatsApp's reach-out timelock does."""
        code = self.send_error
        if code is None or (code == "463" and recipient in self.contacts):
            return None
        if self.send_error_remaining is not None:
            self.send_error_remaining -= 1
            if self.send_error_remaining <= 0:
                self.send_error, self.send_error_remaining = None, None
        return code

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
    """One event to POST to one URL, signed at each attempt by `scheme` with these secrets.

    Schemes: `envelope` (the calls server: timestamp + `v1=` signatures), `wuzapi`
    (`x-hmac-signature`), `evolution` (a fresh JWT), `meta` (`X-Hub-Signature-256`).
    """

    event_id: str
    instance_id: str
    url: str
    body: bytes
    secrets: tuple[str, ...] = field(repr=False)
    scheme: str = "envelope"
    content_type: str = "application/json"


@dataclass(frozen=True)
class EmittedEvent:
    view: dict[str, Any]
    delivery: Delivery | None


@dataclass
class SentMessage:
    """A message the recipient's phone shows; a resend of the same id to it counts in `resends`."""

    id: str
    instance_id: str
    flavour: str
    phone: str
    body: str
    idempotency_key: str | None
    sent_ns: int
    resends: int = 0

    def view(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instance": self.instance_id,
            "flavour": self.flavour,
            "phone": self.phone,
            "body": self.body,
            "idempotencyKey": self.idempotency_key,
            "time": rfc3339_nano(self.sent_ns),
            "resends": self.resends,
        }


@dataclass
class Fault:
    route: str
    method: str | None
    mode: str
    remaining: int

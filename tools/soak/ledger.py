"""What the soak asked of the system, as a client would remember it: every send, incoming
message, reply and dial, with what the API answered; and every fault it injected. The accounting
compares this with what the outside world actually saw (`truth`)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class SendIntent:
    """One message a client meant to send once: a unique text, retried under one Idempotency-Key."""

    serial: int
    key: str  # which of the soak's API keys (its label)
    to: str
    text: str
    idempotency_key: str | None
    valid_for: int
    ids: set[str] = field(default_factory=set)  # the message ids the API answered (one, if all is well)
    answers: list[int] = field(default_factory=list)  # every HTTP status, replays included


@dataclass
class IncomingRecord:
    """One message a customer sent to one of the numbers (simulator `incoming-message`)."""

    serial: int
    instance: str
    flavour: str
    kind: str  # text, image, audio, video, document, sticker, location, reaction
    sender: str
    message_id: str | None = None  # the provider's id (None: the provider refused it)
    event_id: str | None = None  # the simulator's event id (the calls envelope's eventId too)
    refused: str | None = None  # e.g. not_connected: the number was offline, nothing was posted
    redelivered: int = 0


@dataclass
class ReplyRecord:
    """One agent reply in the helpdesk, posted to the instance's outgoing webhook (maybe again)."""

    serial: int
    instance: str
    flavour: str
    chatwoot_id: int
    phone: str
    text: str
    answers: list[str] = field(default_factory=list)  # "200 SENT", "200 PENDING", "500", ...


@dataclass
class DialIntent:
    """One call an attendant meant to place once (one Idempotency-Key, maybe replayed at once)."""

    serial: int
    attendant: str
    to: str
    idempotency_key: str
    answers: list[int] = field(default_factory=list)
    call_ids: set[str] = field(default_factory=set)
    reservations: set[str] = field(default_factory=set)  # the reservation ids the API answered
    copies: int = 1  # requests sent at once under the key
    outcome: str = ""  # connected, pending, line_busy, disconnected, error, ...


@dataclass
class Ledger:
    sends: list[SendIntent] = field(default_factory=list)
    incoming: list[IncomingRecord] = field(default_factory=list)
    replies: list[ReplyRecord] = field(default_factory=list)
    dials: list[DialIntent] = field(default_factory=list)
    counters: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)  # unexpected answers worth a look, capped
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _serial: int = 0

    def serial(self) -> int:
        with self._lock:
            self._serial += 1
            return self._serial

    def count(self, name: str, value: int = 1) -> None:
        with self._lock:
            self.counters[name] += value

    def note(self, text: str) -> None:
        with self._lock:
            if len(self.notes) < 200:
                self.notes.append(text)

    def add_send(self, intent: SendIntent) -> None:
        with self._lock:
            self.sends.append(intent)

    def add_incoming(self, record: IncomingRecord) -> None:
        with self._lock:
            self.incoming.append(record)

    def add_reply(self, record: ReplyRecord) -> None:
        with self._lock:
            self.replies.append(record)

    def add_dial(self, intent: DialIntent) -> None:
        with self._lock:
            self.dials.append(intent)

    def snapshot_incoming(self) -> list[IncomingRecord]:
        with self._lock:
            return list(self.incoming)

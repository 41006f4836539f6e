"""Calls: call records, dial attempts (reservations) and the rules that keep occupancy exact.

Occupancy is derived from idempotent records, never from a counter: the line's `occupants` map
holds one entry per pending reservation (`res_<...>`) and one per live call that holds a slot
(`call#<provider>#<instanceId>#<callId>`). Every entry is the projection of one record
(`DialAttempt.occupant()`, `CallRecord.occupant()`), written in the same transaction as the
record, so a duplicate or late event cannot count twice.

A call record merges what the provider said in an order-independent way, so any permutation or
duplication of one call's events reaches the same record:

- `state` only moves forward (ringing < connecting < active < ended): the provider's own state
  order, never arrival order; `ended` is terminal and its reason and origin are the first seen;
- `video` is the value of the event with the highest `seq`; `recording_*` events touch only the
  recording fields (highest `seq` wins) and never take or free a slot.

Outgoing calls are correlated with our dial attempts: the dial's HTTP answer binds its callId
exactly; a webhook that arrives first binds the one pending attempt to the same peer, and when
several attempts to that peer are pending it waits for their answers (the attempts keep
counting meanwhile, so nothing is counted twice or missed).
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictStr
from pydantic.alias_generators import to_camel

from switchboard.core.errors import CallEnded, CallOwned, Forbidden
from switchboard.core.model import Model
from switchboard.lines.domain import Direction, Line, Occupant
from switchboard.providers.base import CallState, ProviderCall

LIVE_STATES = frozenset({"ringing", "connecting", "active"})
STATE_RANK: dict[str, int] = {"ringing": 0, "connecting": 1, "active": 2, "ended": 3}
RECORDING_TYPES = frozenset({"recording_ready", "recording_failed"})
# A `call` event without `state` (older servers) still says where the call is by its type.
STATE_OF_TYPE: dict[str, CallState] = {
    "offer": "ringing",
    "ringing": "ringing",
    "answered": "connecting",
    "active": "active",
    "ended": "ended",
}
EndOrigin = Literal["event", "reconcile", "provider_answer"]


class LineNotReady(Exception):
    """The line has no item, no `occupants` map or no known limit yet: prepare it, then admit again."""

    def __init__(self, line: Line | None) -> None:
        super().__init__("the line is not ready for admission")
        self.line = line


class StaleRecord(Exception):
    """The record (or the attempt it binds) changed since it was read: read again and decide again."""


class AttemptNotPending(Exception):
    """A reservation was asked for an attempt that is no longer pending (bound to its call or
    released since it was read): read it again and replay what it became."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def digits(phone: str | None) -> str:
    """A phone as digits only, so `+55 11 9...` and `5511 9...@s.whatsapp.net` compare equal."""
    return re.sub(r"\D", "", (phone or "").split("@", 1)[0])


def call_occupant_id(provider_id: str, provider_instance_id: str, call_id: str) -> str:
    return f"call#{provider_id}#{provider_instance_id}#{call_id}"


def reservation_id(tenant: str, instance: str, attendant: str, idempotency_key: str) -> str:
    """The same (tenant, instance, attendant, key) always names the same reservation.

    It is also the Idempotency-Key sent to the provider, so two attendants reusing one key
    string never collide there.
    """
    material = "\x1f".join((tenant, instance, attendant, idempotency_key)).encode()
    return "res_" + hashlib.sha256(material).hexdigest()[:32]


# --- provider `call` events ------------------------------------------------------------------


class Recording(Model):
    model_config = ConfigDict(extra="ignore")

    status: StrictStr | None = None
    url: StrictStr | None = None


class CallEventData(Model):
    """`data` of a provider `call` event (the call object plus `type`, `timestamp`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    type: StrictStr
    call_id: StrictStr = Field(min_length=1, max_length=128)
    state: CallState | None = None
    direction: Direction | None = None
    from_: StrictStr | None = Field(default=None, alias="from")
    to: StrictStr | None = None
    video: StrictBool | None = None
    end_reason: StrictStr | None = None
    ended_by: StrictStr | None = None
    created_at: StrictStr | None = None
    answered_at: StrictStr | None = None
    ended_at: StrictStr | None = None
    recording: Recording | None = None

    @property
    def effective_state(self) -> CallState | None:
        return self.state or STATE_OF_TYPE.get(self.type)

    @property
    def peer(self) -> str | None:
        return self.from_ if self.direction == "incoming" else self.to


# --- records ---------------------------------------------------------------------------------


class CallRecord(Model):
    """One call, keyed (provider, provider instance id, callId): the same callId elsewhere is another call.

    `holds_slot`: True when the call takes a slot while live (incoming calls, outgoing calls
    bound to their reservation or dialled outside switchboard); False while an outgoing call
    waits for its dial answer to say which pending reservation it is (that reservation counts
    it meanwhile); None until the direction is known.
    """

    model_config = ConfigDict(extra="ignore")

    tenant: str
    instance: str
    provider_id: str
    provider_instance_id: str
    call_id: str
    state: CallState | None = None
    direction: Direction | None = None
    peer: str | None = None
    from_number: str | None = None  # the call's `from` and `to`, as the provider first said them
    to_number: str | None = None
    video: bool = False
    video_seq: int | None = None
    last_seq: int | None = None
    holds_slot: bool | None = None
    owner: str | None = None
    reservation_id: str | None = None
    end_reason: str | None = None
    ended_by: str | None = None
    end_origin: EndOrigin | None = None
    created_at: str | None = None
    answered_at: str | None = None
    ended_at: str | None = None
    recording_status: str | None = None
    recording_url: str | None = None
    recording_seq: int | None = None
    first_seen: str = Field(default_factory=lambda: utcnow().isoformat())
    rev: int = 0  # optimistic lock: every write is conditioned on the revision it read

    @property
    def occupant_id(self) -> str:
        return call_occupant_id(self.provider_id, self.provider_instance_id, self.call_id)

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def ended(self) -> bool:
        return self.state == "ended"

    def occupant(self) -> Occupant | None:
        """The line entry this call keeps while it is live and holds a slot; None otherwise."""
        if not (self.live and self.holds_slot and self.direction and self.state):
            return None
        return Occupant(
            kind="call",
            id=self.occupant_id,
            call_id=self.call_id,
            direction=self.direction,
            video=self.video,
            state=self.state,
            owner=self.owner,
            since=self.created_at or self.first_seen,
            from_number=self.from_number,
            to_number=self.to_number,
        )

    def same_content(self, other: CallRecord | None) -> bool:
        if other is None:
            return False
        ignored = {"rev", "first_seen"}
        return self.model_dump(exclude=ignored) == other.model_dump(exclude=ignored)


def _advance(record: CallRecord, state: CallState | None, origin: EndOrigin, source: Any) -> dict[str, Any]:
    """Changes for a forward move of `state`; an older or equal state changes nothing."""
    if state is None:
        return {}
    if record.state is not None and STATE_RANK[state] <= STATE_RANK[record.state]:
        return {}
    changes: dict[str, Any] = {"state": state}
    if state == "ended":
        changes |= {
            "end_reason": getattr(source, "end_reason", None),
            "ended_by": getattr(source, "ended_by", None),
            "end_origin": origin,
            "ended_at": getattr(source, "ended_at", None),
        }
    return changes


def _identity(
    record: CallRecord, direction: Direction | None, peer: str | None, from_number: str | None, to_number: str | None
) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if record.direction is None and direction is not None:
        changes["direction"] = direction
        if direction == "incoming":
            changes["holds_slot"] = True  # the provider already admitted it: no limit check
    if record.peer is None and peer:
        changes["peer"] = peer
    if record.from_number is None and from_number:
        changes["from_number"] = digits(from_number) or None
    if record.to_number is None and to_number:
        changes["to_number"] = digits(to_number) or None
    return changes


def new_record(tenant: str, instance: str, provider_id: str, provider_instance_id: str, call_id: str) -> CallRecord:
    return CallRecord(
        tenant=tenant,
        instance=instance,
        provider_id=provider_id,
        provider_instance_id=provider_instance_id,
        call_id=call_id,
    )


def apply_event(record: CallRecord, data: CallEventData, seq: int | None) -> CallRecord:
    """The record after one `call` event; idempotent and independent of the order of events."""
    changes = _identity(record, data.direction, data.peer, data.from_, data.to)
    for name in ("created_at", "answered_at"):
        if getattr(record, name) is None and getattr(data, name) is not None:
            changes[name] = getattr(data, name)
    if data.type in RECORDING_TYPES:
        if seq is None or record.recording_seq is None or seq > record.recording_seq:
            recording = data.recording or Recording()
            changes |= {
                "recording_status": recording.status or data.type.removeprefix("recording_"),
                "recording_url": recording.url,
                "recording_seq": seq,
            }
    else:
        changes |= _advance(record, data.effective_state, "event", data)
        if data.video is not None and (record.video_seq is None or (seq is not None and seq > record.video_seq)):
            changes |= {"video": data.video, "video_seq": seq if seq is not None else record.video_seq}
    if seq is not None and (record.last_seq is None or seq > record.last_seq):
        changes["last_seq"] = seq
    return record.model_copy(update=changes) if changes else record


def apply_provider_call(record: CallRecord, call: ProviderCall, origin: EndOrigin) -> CallRecord:
    """The record after a read of the provider (`GET /call/active`, `/call/{id}`, history, hangup).

    Only forward moves apply, so a newer event stored meanwhile is never undone. Media is left
    to events (they carry `seq`); a read sets it only on a record that has none yet.
    """
    changes = _identity(record, call.direction, call.peer, call.from_number, call.to_number)
    changes |= _advance(record, call.state, origin, call)
    if record.state is None and record.video_seq is None:
        changes["video"] = call.video
    return record.model_copy(update=changes) if changes else record


def bind_to_attempt(record: CallRecord, attempt: DialAttempt) -> CallRecord:
    """The outgoing call is the one this attempt dialled: its attendant owns it and it holds the slot."""
    return record.model_copy(
        update={
            "direction": record.direction or "outgoing",
            "peer": record.peer or attempt.to,
            "to_number": record.to_number or digits(attempt.to) or None,
            "video": record.video if record.video_seq is not None else attempt.video,
            "holds_slot": True,
            "owner": record.owner or attempt.attendant,
            "reservation_id": attempt.id,
        }
    )


def claim(record: CallRecord, attendant: str, *, transfer_to: str | None, is_admin: bool) -> CallRecord:
    """Take an unowned call (or keep one's own), or transfer it when the caller is its owner or an admin."""
    if not record.live:
        raise CallEnded("the call is not live")
    if transfer_to is not None:
        if not (is_admin or record.owner in (None, attendant)):
            raise Forbidden("only the call's owner or an admin can transfer it")
        return record.model_copy(update={"owner": transfer_to})
    if record.owner not in (None, attendant):
        raise CallOwned("another attendant owns this call", owner=record.owner)
    return record.model_copy(update={"owner": attendant})


def may_control(record: CallRecord, attendant: str, *, is_admin: bool) -> bool:
    """Hang up or stop the camera: the owner or an admin."""
    return is_admin or (record.owner is not None and record.owner == attendant)


# --- dial attempts ---------------------------------------------------------------------------

AttemptState = Literal["pending", "connected", "released"]


class DialAttempt(Model):
    """One dial, named by its reservation id; it holds a slot while `pending`.

    `connected`: the provider gave the callId and the reservation became that call.
    `released`: the provider refused it for good (line busy, disconnected, rejected); a retry
    with the same key may try again.
    """

    model_config = ConfigDict(extra="ignore")

    id: str
    tenant: str
    instance: str
    attendant: str
    to: str
    video: bool = False
    state: AttemptState = "pending"
    call_id: str | None = None
    created_at: str = Field(default_factory=lambda: utcnow().isoformat())
    release_reason: str | None = None

    def occupant(self) -> Occupant:
        return Occupant(
            kind="reservation",
            id=self.id,
            call_id=None,
            direction="outgoing",
            video=self.video,
            state="reserved",
            owner=self.attendant,
            since=self.created_at,
            to_number=digits(self.to) or None,
        )

    def same_dial(self, to: str, video: bool) -> bool:
        return digits(self.to) == digits(to) and self.video == video

    def age_seconds(self, now: datetime) -> float:
        return (now - datetime.fromisoformat(self.created_at)).total_seconds()


def occupant_value(occupant: Occupant) -> dict[str, Any]:
    """The stored map value (camelCase, like the rest of the line)."""
    return occupant.model_dump(by_alias=True)


# --- media attachments -----------------------------------------------------------------------


class Attachment(Model):
    """Which attendant a call's provider media session was last attached for."""

    model_config = ConfigDict(extra="ignore")

    tenant: str
    instance: str
    provider_id: str
    provider_instance_id: str
    call_id: str
    attendant: str
    session_id: str
    attached_at: str

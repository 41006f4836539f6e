"""Ban watch: the health of one instance (one WhatsApp number's session), from the provider's own
signals and from what switchboard sees it send. Pure rules, no I/O.

Each signal is a `Reason` with the state it puts the instance in, since when, and (for a pause
that lifts by itself) until when. The instance's state is the most severe of its reasons still
active at the time of reading, so a pause that expires needs no write: the next read, by the
send worker or the API, already finds the instance healthy (the scheduled reconciliation then
writes and announces the change, `BanWatch.refresh`).

| signal | state | lasts (default) |
|---|---|---|
| wuzapi/whatsmeow 463, the reach-out timelock | paused_for_new_contacts | 6 h, renewed by each 463 |
| Meta 130429, the number's throughput limit | paused_for_new_contacts | 5 min |
| Meta 131056, the pair rate limit | warning | 10 min |
| Meta 131049, not delivered for ecosystem engagement | warning | 1 h |
| disconnection with a logged-out reason | paused | until the instance connects again |
| more sends this minute than `max_sends_per_minute` | warning | to the end of the next minute |
| more sends this hour than `max_sends_per_hour` | paused_for_new_contacts | to the end of the hour |
| delivered / sent < `min_delivery_ratio` over a window of `delivery_window` sends | warning | until a window is above |
| distinct texts < `min_text_diversity`, recipients >= 0.5, of `diversity_sample` sends | warning | until diverse |
| a Meta number's Graph API `status` FLAGGED or RESTRICTED | paused_for_new_contacts | while a read says so |
| its `quality_rating` RED | paused_for_new_contacts | while a read says so |
| its `status` RATE_LIMITED | warning | while a read says so |
| its `status` DISCONNECTED, PENDING, UNVERIFIED, BANNED, DELETED, MIGRATED | paused | while a read says so |

The diversity sample keeps, for each of the last `diversity_sample` sends, short hashes of the
recipient and of the normalised text (never the number or the text: the health item is
operational data, read by the API and the pool, not a message store). The same text to many
different people is what bulk-spam detection punishes; the same text to the few people of a
conversation is not.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field

from switchboard.core.model import Model
from switchboard.core.text import text_hash


class HealthState(StrEnum):
    HEALTHY = "healthy"
    WARNING = "warning"
    PAUSED_FOR_NEW_CONTACTS = "paused_for_new_contacts"
    PAUSED = "paused"


SEVERITY = {
    HealthState.HEALTHY: 0,
    HealthState.WARNING: 1,
    HealthState.PAUSED_FOR_NEW_CONTACTS: 2,
    HealthState.PAUSED: 3,
}

TIMELOCK = "timelock_463"
THROUGHPUT = "meta_throughput_130429"
PAIR_RATE = "meta_pair_rate_131056"
ECOSYSTEM = "meta_ecosystem_131049"
LOGGED_OUT = "logged_out"
VELOCITY_MINUTE = "velocity_minute"
VELOCITY_HOUR = "velocity_hour"
LOW_DELIVERY = "low_delivery_ratio"
REPEATED_TEXT = "repeated_text"
# A Meta number's standing, read from its phone number node: one reason per word of `status` that
# speaks of its sending (`meta_status_restricted`), and `meta_quality_red`. They are levels, not
# events: each read replaces the previous read's, so one the Graph API no longer reports lifts.
STANDING_STATUS_PREFIX = "meta_status_"
QUALITY_RED = "meta_quality_red"
# FLAGGED (quality low: Meta lowers the messaging limit unless it recovers) and RESTRICTED (its
# limit of business-initiated conversations is reached) still allow answering the people who
# wrote: the number keeps its conversations and reaches no one new. The others cannot send at all.
STANDING_STATES = {
    "FLAGGED": HealthState.PAUSED_FOR_NEW_CONTACTS,
    "RESTRICTED": HealthState.PAUSED_FOR_NEW_CONTACTS,
    "RATE_LIMITED": HealthState.WARNING,
    "DISCONNECTED": HealthState.PAUSED,
    "PENDING": HealthState.PAUSED,
    "UNVERIFIED": HealthState.PAUSED,
    "BANNED": HealthState.PAUSED,
    "DELETED": HealthState.PAUSED,
    "MIGRATED": HealthState.PAUSED,
}

# Distinct recipients over the sample from which a sample of repeated texts is a broadcast, not a
# conversation.
BROADCAST_RECIPIENTS = 0.5
# Hex characters kept of each hash: enough to tell 500 sends apart, too few to make the stored
# value an identifier of the recipient.
FINGERPRINT_LENGTH = 8


# One send in the diversity sample: its slot, recipient and text fingerprints.
SampleEntry = tuple[int, str, str]


class HealthChanged(Exception):
    """Another writer changed the reasons since they were read: read again."""


class Thresholds(Model):
    """The ban watch's defaults (each overridable by an environment variable, see Settings)."""

    model_config = ConfigDict(frozen=True)

    timelock_pause_seconds: int = Field(default=6 * 3600, ge=0)
    throughput_pause_seconds: int = Field(default=300, ge=0)
    pair_rate_warning_seconds: int = Field(default=600, ge=0)
    ecosystem_warning_seconds: int = Field(default=3600, ge=0)
    max_sends_per_minute: int = Field(default=30, ge=1)
    max_sends_per_hour: int = Field(default=600, ge=1)
    delivery_window: int = Field(default=50, ge=1)
    min_delivery_ratio: float = Field(default=0.5, ge=0, le=1)
    diversity_sample: int = Field(default=50, ge=1, le=500)
    min_text_diversity: float = Field(default=0.1, ge=0, le=1)


class Reason(Model):
    model_config = ConfigDict(frozen=True)

    code: str
    state: HealthState
    since: datetime
    until: datetime | None = None  # None: until the signal clears
    count: int = 1

    def active(self, now: datetime) -> bool:
        return self.until is None or self.until > now


class Health(Model):
    """The stored health of one instance: reasons, the state last written, and the counters.

    `version` guards the reasons (conditional writes); the counters are only ever added to,
    so concurrent sends never conflict on them.
    """

    model_config = ConfigDict(frozen=True)

    instance_key: str
    reasons: dict[str, Reason] = Field(default_factory=dict)
    state: HealthState = HealthState.HEALTHY  # as of the last write (a pause may have expired since)
    since: datetime | None = None
    version: int = 0
    at_minute: int = 0  # epoch minute of `minute_sends`
    minute_sends: int = 0
    at_hour: int = 0  # epoch hour of `hour_sends`
    hour_sends: int = 0
    window_sent: int = 0
    window_delivered: int = 0
    delivery_ratio: float | None = None  # of the last complete window
    failures: dict[str, int] = Field(default_factory=dict)  # provider code -> sends it refused
    send_seq: int = 0  # sends ever counted; the next send's sample slot is `send_seq mod diversity_sample`
    sample_recipients: dict[int, str] = Field(default_factory=dict)  # slot -> recipient fingerprint
    sample_texts: dict[int, str] = Field(default_factory=dict)  # slot -> text fingerprint

    def active_reasons(self, now: datetime) -> list[Reason]:
        return sorted(
            (reason for reason in self.reasons.values() if reason.active(now)),
            key=lambda reason: (-SEVERITY[reason.state], reason.since),
        )

    def state_at(self, now: datetime) -> HealthState:
        return max((reason.state for reason in self.active_reasons(now)), key=SEVERITY.__getitem__, default=HEALTHY)

    def blocks(self, now: datetime, *, new_contact: bool) -> HealthState | None:
        """The state that keeps this instance from sending now (None: it may send)."""
        state = self.state_at(now)
        if state is HealthState.PAUSED or (state is HealthState.PAUSED_FOR_NEW_CONTACTS and new_contact):
            return state
        return None


HEALTHY = HealthState.HEALTHY


def _after(now: datetime, seconds: int) -> datetime:
    return now + timedelta(seconds=seconds)


class Diversity(Model):
    """Distinct recipients and distinct texts over the sample of recent sends (ratios None when empty)."""

    model_config = ConfigDict(frozen=True)

    sample: int = 0
    recipients: float | None = None
    texts: float | None = None


def fingerprints(instance_key: str, recipient: str, text: str) -> tuple[str, str]:
    """What the diversity sample keeps of a send: short hashes of the recipient (salted with the
    instance, so equal numbers do not match across instances) and of the text as the spam guard
    compares it (trimmed, whitespace collapsed, casefolded)."""
    person = hashlib.sha256(f"{instance_key}\0{recipient.strip()}".encode()).hexdigest()
    return person[:FINGERPRINT_LENGTH], text_hash(text)[:FINGERPRINT_LENGTH]


def diversity(health: Health, limits: Thresholds) -> Diversity:
    """The sample's slots below `diversity_sample` (slots past a lowered sample size are ignored)."""
    slots = [
        slot for slot in health.sample_recipients if slot < limits.diversity_sample and slot in health.sample_texts
    ]
    if not slots:
        return Diversity()
    recipients = len({health.sample_recipients[slot] for slot in slots})
    texts = len({health.sample_texts[slot] for slot in slots})
    return Diversity(
        sample=len(slots), recipients=round(recipients / len(slots), 4), texts=round(texts / len(slots), 4)
    )


def provider_signal(code: str | None, now: datetime, limits: Thresholds) -> Reason | None:
    """The reason a provider's refusal code gives, None for a code that says nothing of the number."""
    if code == "463":
        return Reason(
            code=TIMELOCK,
            state=HealthState.PAUSED_FOR_NEW_CONTACTS,
            since=now,
            until=_after(now, limits.timelock_pause_seconds),
        )
    if code == "130429":
        return Reason(
            code=THROUGHPUT,
            state=HealthState.PAUSED_FOR_NEW_CONTACTS,
            since=now,
            until=_after(now, limits.throughput_pause_seconds),
        )
    if code == "131056":
        return Reason(
            code=PAIR_RATE, state=HealthState.WARNING, since=now, until=_after(now, limits.pair_rate_warning_seconds)
        )
    if code == "131049":
        return Reason(
            code=ECOSYSTEM, state=HealthState.WARNING, since=now, until=_after(now, limits.ecosystem_warning_seconds)
        )
    return None


def is_standing(code: str) -> bool:
    return code.startswith(STANDING_STATUS_PREFIX) or code == QUALITY_RED


def standing_reasons(status: str | None, quality_rating: str | None, now: datetime) -> dict[str, Reason]:
    """The reasons a number's standing gives (none for CONNECTED, GREEN, YELLOW, NA or a word not known)."""
    reasons: dict[str, Reason] = {}
    state = STANDING_STATES.get(status or "")
    if state is not None:
        code = f"{STANDING_STATUS_PREFIX}{(status or '').lower()}"
        reasons[code] = Reason(code=code, state=state, since=now)
    if quality_rating == "RED":
        reasons[QUALITY_RED] = Reason(code=QUALITY_RED, state=HealthState.PAUSED_FOR_NEW_CONTACTS, since=now)
    return reasons


def with_standing(reasons: dict[str, Reason], standing: dict[str, Reason]) -> dict[str, Reason]:
    """`reasons` with the standing read now in place of the last read's; a reason still reported
    keeps its `since` (the number has been restricted since then, not since this read)."""
    kept = {code: reason for code, reason in reasons.items() if not is_standing(code)}
    return {**kept, **{code: reasons.get(code, reason) for code, reason in standing.items()}}


def with_reason(reasons: dict[str, Reason], reason: Reason, now: datetime) -> dict[str, Reason]:
    """`reasons` with `reason` added; a reason still active keeps its `since` and is extended."""
    current = reasons.get(reason.code)
    if current is not None and current.active(now):
        until = None if current.until is None or reason.until is None else max(current.until, reason.until)
        reason = current.model_copy(update={"until": until, "count": current.count + 1, "state": reason.state})
    return {**reasons, reason.code: reason}


def without(reasons: dict[str, Reason], code: str) -> dict[str, Reason]:
    return {key: value for key, value in reasons.items() if key != code}


def pruned(reasons: dict[str, Reason], now: datetime) -> dict[str, Reason]:
    """Only the reasons still active: an expired one is history, not state."""
    return {code: reason for code, reason in reasons.items() if reason.active(now)}


def after_send(health: Health, now: datetime, limits: Thresholds) -> dict[str, Reason]:
    """The reasons once the send just counted in `health` is taken into account (velocity,
    delivery at the end of a window, and the diversity of a full sample)."""
    reasons = pruned(health.reasons, now)
    minute_end = datetime.fromtimestamp((health.at_minute + 2) * 60, UTC)
    if health.minute_sends > limits.max_sends_per_minute and VELOCITY_MINUTE not in reasons:
        reasons = with_reason(
            reasons, Reason(code=VELOCITY_MINUTE, state=HealthState.WARNING, since=now, until=minute_end), now
        )
    hour_end = datetime.fromtimestamp((health.at_hour + 1) * 3600, UTC)
    if health.hour_sends > limits.max_sends_per_hour and VELOCITY_HOUR not in reasons:
        reasons = with_reason(
            reasons,
            Reason(code=VELOCITY_HOUR, state=HealthState.PAUSED_FOR_NEW_CONTACTS, since=now, until=hour_end),
            now,
        )
    ratio = window_ratio(health, limits)
    if ratio is not None:
        if ratio < limits.min_delivery_ratio:
            if LOW_DELIVERY not in reasons:
                reasons = with_reason(reasons, Reason(code=LOW_DELIVERY, state=HealthState.WARNING, since=now), now)
        else:
            reasons = without(reasons, LOW_DELIVERY)
    return _judge_diversity(reasons, diversity(health, limits), now, limits)


def _judge_diversity(
    reasons: dict[str, Reason], sample: Diversity, now: datetime, limits: Thresholds
) -> dict[str, Reason]:
    if sample.sample < limits.diversity_sample or sample.texts is None or sample.recipients is None:
        return reasons  # too few sends to judge: a reason already there stays until a full sample clears it
    if sample.texts < limits.min_text_diversity and sample.recipients >= BROADCAST_RECIPIENTS:
        if REPEATED_TEXT in reasons:
            return reasons
        return with_reason(reasons, Reason(code=REPEATED_TEXT, state=HealthState.WARNING, since=now), now)
    return without(reasons, REPEATED_TEXT)


def window_ratio(health: Health, limits: Thresholds) -> float | None:
    """Delivered over sent once a window of `delivery_window` sends is complete, else None."""
    if health.window_sent < limits.delivery_window:
        return None
    return min(1.0, health.window_delivered / health.window_sent)


def lapsed_at(health: Health, now: datetime) -> datetime:
    """When the instance reached the state it is in at `now` by the expiry of its more severe
    reasons (`now` when nothing expired): the moment the last of those lifted."""
    floor = SEVERITY[health.state_at(now)]
    lifted = [
        reason.until
        for reason in health.reasons.values()
        if reason.until is not None and reason.until <= now and SEVERITY[reason.state] > floor
    ]
    return max(lifted, default=now)


def view(health: Health, now: datetime, limits: Thresholds) -> dict[str, Any]:
    """What the API and the `number.health.changed` event say of an instance's health."""
    active = health.active_reasons(now)
    state = health.state_at(now)
    return {
        "state": str(state),
        "since": _since(health, active, state, now),
        "pausedUntil": _paused_until(active),
        "reasons": [
            {
                "code": reason.code,
                "state": str(reason.state),
                "since": reason.since.isoformat(),
                "until": reason.until.isoformat() if reason.until else None,
                "count": reason.count,
            }
            for reason in active
        ],
        "diversity": diversity(health, limits).model_dump(),
    }


def _since(health: Health, active: list[Reason], state: HealthState, now: datetime) -> str | None:
    if state is HEALTHY:
        # Healthy since the last reason ended (or the last write that left it healthy).
        ended = [reason.until for reason in health.reasons.values() if reason.until is not None and reason.until <= now]
        latest = max([*ended, *([health.since] if health.since and health.state is HEALTHY else [])], default=None)
        return latest.isoformat() if latest else None
    return min(reason.since for reason in active if reason.state is state).isoformat()


def _paused_until(active: list[Reason]) -> str | None:
    """When the last active pause lifts by itself (None: no pause, or one that waits for its signal)."""
    pauses = [reason for reason in active if SEVERITY[reason.state] >= SEVERITY[HealthState.PAUSED_FOR_NEW_CONTACTS]]
    if not pauses or any(reason.until is None for reason in pauses):
        return None
    return max(reason.until for reason in pauses if reason.until is not None).isoformat()

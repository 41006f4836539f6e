"""Calls: the per-instance line (versioned call limit and its occupants) and the snapshot rule.

One line per instance holds the limit the provider admits (1..8), its 64-bit config version and
the occupants (live calls and pending reservations) that take its slots. The limit and version
change only through `judge`, the one rule for every snapshot source (the answer of a POST, a
GET status, a `call_settings` event, a `connection` event): a higher version replaces, a lower
one is ignored, an equal one is idempotent, an equal one with another value is a conflict that
a fresh status read resolves. A version is compared as an integer; an absent version is not 0.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import ConfigDict, Field, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from switchboard.core.model import Model

MIN_LIMIT = 1
MAX_LIMIT = 8
MAX_VERSION = 2**63 - 1

SnapshotSource = Literal["post", "status", "call_settings", "connection"]
OccupantKind = Literal["reservation", "call"]
OccupantState = Literal["reserved", "ringing", "connecting", "active"]
Direction = Literal["incoming", "outgoing"]


class Occupant(Model):
    """One slot taker, stored under `occupants.<occupant id>` of the line (written by the calls capability).

    The occupant id is `res_<...>` for a reservation, `call#<provider>#<instanceId>#<callId>` for a call.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    kind: OccupantKind
    id: str
    call_id: str | None = None
    direction: Direction
    video: bool = False
    state: OccupantState
    owner: str | None = None
    since: str
    # Who calls whom, as the provider's call events say (a reservation knows only whom it dials).
    from_number: str | None = Field(default=None, alias="from")
    to_number: str | None = Field(default=None, alias="to")


class Line(Model):
    """The line item of one instance. `version` is None until a snapshot with a version arrives."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    instance: str
    tenant: str
    limit: int | None = None
    version: int | None = None
    updated_at: str | None = None
    conflict: bool = False
    # Where the stored limit came from (the snapshot that last set it); None on lines stored before.
    source: SnapshotSource | None = None
    occupants: dict[str, Occupant] = Field(default_factory=dict)

    @property
    def occupancy(self) -> int:
        return len(self.occupants)

    @property
    def available(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.occupancy)

    @property
    def excess(self) -> int | None:
        """Occupants above the limit (after a reduction): nobody is hung up, new dials wait."""
        return None if self.limit is None else max(0, self.occupancy - self.limit)

    def live_calls(self) -> list[Occupant]:
        return sorted((o for o in self.occupants.values() if o.kind == "call"), key=lambda o: o.since)

    def reservations(self) -> list[Occupant]:
        return sorted((o for o in self.occupants.values() if o.kind == "reservation"), key=lambda o: o.since)


class Snapshot(Model):
    """A (limit, version) pair the provider reported, and where it came from.

    Only a `status` read is authoritative at an equal version: it is the reconciliation read,
    so it settles a conflict (its value wins and the flag is cleared).
    """

    model_config = ConfigDict(frozen=True)

    limit: int = Field(ge=MIN_LIMIT, le=MAX_LIMIT)
    version: int | None = Field(default=None, ge=0, le=MAX_VERSION)
    updated_at: str | None = None
    source: SnapshotSource

    @property
    def authoritative(self) -> bool:
        return self.source == "status"


class Verdict(StrEnum):
    REPLACE = "replace"  # newer (or the first version known): limit, version, updatedAt replaced
    IGNORE = "ignore"  # older, or version-less while a version is known
    SAME = "same"  # equal version and limit: nothing to write
    CONFLICT = "conflict"  # equal version, other limit: keep the value, flag it, read the status
    RESOLVE = "resolve"  # a status read at the stored version: its value wins, the flag is cleared


def judge(stored_limit: int | None, stored_version: int | None, conflict: bool, snapshot: Snapshot) -> Verdict:
    """The snapshot rule, as pure logic; the repository enforces the same rule in its conditions.

    A snapshot without a version sets the limit only while no version is known (old servers),
    and is ignored once one is: it can never be ordered against a versioned value.
    """
    if snapshot.version is None:
        if stored_version is not None:
            return Verdict.IGNORE
        return Verdict.SAME if stored_limit == snapshot.limit else Verdict.REPLACE
    if stored_version is None or snapshot.version > stored_version:
        return Verdict.REPLACE
    if snapshot.version < stored_version:
        return Verdict.IGNORE
    if snapshot.limit == stored_limit:
        return Verdict.RESOLVE if conflict and snapshot.authoritative else Verdict.SAME
    return Verdict.RESOLVE if snapshot.authoritative else Verdict.CONFLICT


class SnapshotResult(Model):
    """What applying one snapshot did, and the line as stored afterwards.

    `changed` is True when the stored limit or version moved: the only case worth notifying
    (a conflict flag set or cleared on an unchanged value is not).
    """

    verdict: Verdict
    line: Line
    changed: bool


class CallSettingsData(Model):
    """`data` of a `call_settings` event. It has no callId: it never creates a call."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    kind: StrictStr
    calls_max_concurrent: StrictInt = Field(ge=MIN_LIMIT, le=MAX_LIMIT)
    calls_config_version: StrictInt | None = Field(default=None, ge=0, le=MAX_VERSION)
    updated_at: StrictStr | None = None


class EnvelopeInstance(Model):
    """The top-level `instance` object of a `connection` event; the calls fields are optional."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    kind: StrictStr | None = None
    calls_max_concurrent: StrictInt | None = Field(default=None, ge=MIN_LIMIT, le=MAX_LIMIT)
    calls_config_version: StrictInt | None = Field(default=None, ge=0, le=MAX_VERSION)

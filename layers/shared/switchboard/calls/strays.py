"""Stray line entries: an occupant with neither a live call nor a pending attempt behind it.

Every entry of a line's `occupants` is written in the same transaction as the record it projects
(a reservation with its pending attempt, a call entry with its live call record), so a stray can
only come from a writer that broke that rule: a replica still running older code during a deploy,
or a bug. Nothing else would ever free it, and a limit-1 connection could then not dial at all;
so reconciliation removes strays, one conditional transaction each:

- a reservation whose attempt is missing or no longer `pending` (bound to its call, released),
  once the entry is older than the grace the reconciler passes: the window in which a dial's
  outcome may still be unknown (`REDIAL_WINDOW`). Within it a reservation is never freed on a
  guess, as the ambiguous-outcome rule demands, even if its attempt cannot be read;
- a call entry whose record is missing, ended or no longer holding a slot. Its record and entry
  only ever change together, so no grace is needed: the removal is conditioned on the record's
  revision as read, and a record that moved meanwhile is judged again at the next reconciliation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Protocol

from switchboard.calls.domain import CallRecord, DialAttempt
from switchboard.catalog.domain import instance_key
from switchboard.core.observability import logger
from switchboard.lines.domain import Line, Occupant


class StrayStore(Protocol):
    def line(self, tenant: str, instance: str) -> Line | None: ...
    def attempts(self, tenant: str, instance: str, attempt_ids: Collection[str]) -> dict[str, DialAttempt]: ...
    def calls_of_occupants(
        self, tenant: str, instance: str, occupant_ids: Collection[str]
    ) -> dict[str, CallRecord]: ...
    def release_stray(
        self, tenant: str, instance: str, occupant: Occupant, behind: DialAttempt | CallRecord | None
    ) -> bool: ...


def _older_than(since: str, now: datetime, grace: timedelta) -> bool:
    """Whether an entry's `since` is past the grace; one that cannot be read counts as old (our own
    reservations always write an ISO timestamp, so only a foreign writer leaves another)."""
    try:
        moment = datetime.fromisoformat(since)
    except ValueError:
        return True
    if moment.tzinfo is None:
        return True
    return now - moment > grace


def strays(
    line: Line,
    attempts: Mapping[str, DialAttempt],
    calls: Mapping[str, CallRecord],
    now: datetime,
    grace: timedelta,
) -> list[tuple[Occupant, DialAttempt | CallRecord | None]]:
    """The line's entries nothing holds, each with the record it was judged by (None: missing)."""
    found: list[tuple[Occupant, DialAttempt | CallRecord | None]] = []
    for occupant_id, occupant in sorted(line.occupants.items()):
        if occupant.kind == "reservation":
            attempt = attempts.get(occupant_id)
            if (attempt is None or attempt.state != "pending") and _older_than(occupant.since, now, grace):
                found.append((occupant, attempt))
        else:
            record = calls.get(occupant_id)
            if record is None or record.occupant() is None:
                found.append((occupant, record))
    return found


def release_strays(store: StrayStore, tenant: str, instance: str, now: datetime, grace: timedelta) -> int:
    """Remove the line's stray entries; how many were removed now."""
    line = store.line(tenant, instance)
    if line is None or not line.occupants:
        return 0
    kinds = {kind: [key for key, o in line.occupants.items() if o.kind == kind] for kind in ("reservation", "call")}
    attempts = store.attempts(tenant, instance, kinds["reservation"]) if kinds["reservation"] else {}
    calls = store.calls_of_occupants(tenant, instance, kinds["call"]) if kinds["call"] else {}
    released = 0
    for occupant, behind in strays(line, attempts, calls, now, grace):
        if store.release_stray(tenant, instance, occupant, behind):
            released += 1
            logger.warning(
                "stray line entry released",
                extra={
                    "instance": instance_key(tenant, instance),
                    "occupant": occupant.id,
                    "kind": occupant.kind,
                    "behind": getattr(behind, "state", None),
                },
            )
    return released

"""Number pool: the numbers one API key sends through, and how a message picks one.

Pure rules, no I/O. The stored `Pool` is one ordered list per key (position = priority) edited
with optimistic concurrency. For sending, the service loads a `SendingConfig` (the key, its pool
and each number's usable routes, cached a few seconds per container), reads the recipient's
`Affinity` and calls `plan_numbers`, which asks for a round-robin ticket only on an affinity miss.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import ConfigDict, Field

from switchboard.catalog.domain import MAX_POOL_SIZE, Instance, PacingOverride
from switchboard.core.clock import new_id, utcnow
from switchboard.core.errors import AlreadyExists, Conflict, InvalidInput, NotFound, UnknownReference
from switchboard.core.model import Model
from switchboard.providers.kinds import ProviderKind

SelectionMode = Literal["default", "pool"]


# --- the stored pool -------------------------------------------------------------------------


class PoolEntry(Model):
    id: str
    number_id: str
    added_at: datetime = Field(default_factory=utcnow)


def unknown_pool_number() -> UnknownReference:
    """A pool entry naming a number the tenant does not have (missing, or another tenant's)."""
    return UnknownReference("whatsappNumberId names no number of this tenant", code="unknown_number")


class Pool(Model):
    """The pool of one API key. `version` is the optimistic-concurrency token of its one item."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    api_key_id: str
    entries: tuple[PoolEntry, ...] = ()
    version: int = 0

    def number_ids(self) -> list[str]:
        return [entry.number_id for entry in self.entries]

    def entry_for(self, number_id: str) -> PoolEntry | None:
        return next((entry for entry in self.entries if entry.number_id == number_id), None)

    def added(self, number_id: str) -> tuple[Pool, PoolEntry]:
        """The pool with `number_id` appended (lowest priority). Raises AlreadyExists, Conflict."""
        if self.entry_for(number_id):
            raise AlreadyExists("the number is already in this pool", code="number_already_in_pool")
        if len(self.entries) >= MAX_POOL_SIZE:
            raise Conflict(f"a pool holds at most {MAX_POOL_SIZE} numbers", code="pool_full", limit=MAX_POOL_SIZE)
        entry = PoolEntry(id=new_id("pool"), number_id=number_id)
        return self.model_copy(update={"entries": (*self.entries, entry)}), entry

    def removed(self, number_id: str) -> Pool:
        if not self.entry_for(number_id):
            raise NotFound("the number is not in this pool", code="number_not_in_pool")
        return self.model_copy(update={"entries": tuple(e for e in self.entries if e.number_id != number_id)})

    def keeping(self, number_ids: set[str]) -> Pool:
        """The pool without the entries whose number is not in `number_ids` (numbers deleted since)."""
        if all(entry.number_id in number_ids for entry in self.entries):
            return self
        return self.model_copy(update={"entries": tuple(e for e in self.entries if e.number_id in number_ids)})

    def reordered(self, number_ids: list[str]) -> Pool:
        """The same entries in the order of `number_ids`, which must be a permutation of the pool."""
        if len(number_ids) != len(self.entries) or set(number_ids) != set(self.number_ids()):
            raise InvalidInput("numberIds must list every number of the pool exactly once", code="not_a_permutation")
        by_id = {entry.number_id: entry for entry in self.entries}
        return self.model_copy(update={"entries": tuple(by_id[number_id] for number_id in number_ids)})


# --- what the send worker needs ----------------------------------------------------------------


class Route(Model):
    """One way to send from a number: an instance, or (Meta Cloud number) the provider itself."""

    model_config = ConfigDict(frozen=True)

    provider_id: str
    kind: ProviderKind
    base_url: str
    provider_instance_id: str
    instance: str | None = None  # None: the provider's admin token is the credential (Meta Cloud)
    meta_phone_id: str | None = None
    source: Instance | None = Field(default=None, repr=False)  # the instance record, for usage counting


class NumberRoutes(Model):
    """A number with its usable routes in the order to try them (provider, then instance priority)."""

    model_config = ConfigDict(frozen=True)

    number_id: str
    digits: str
    added_at: datetime | None = None  # when it joined the pool; None for the default number
    routes: tuple[Route, ...] = ()
    # The number's own pacing, read with the number: the pacer needs no read of its own per send.
    pacing: PacingOverride | None = None
    waba_id: str | None = None  # a Cloud API number's business account: where its templates are

    @property
    def connected(self) -> bool:
        return bool(self.routes)


class SendingConfig(Model):
    model_config = ConfigDict(frozen=True)

    tenant: str
    api_key_id: str
    mode: SelectionMode
    webhook_url: str | None = None
    at_least_once: bool = False  # resend after an ambiguous timeout even where a copy may result
    default: NumberRoutes | None = None
    pool: tuple[NumberRoutes, ...] = ()


# WhatsApp's customer-service window: for 24 h after a person writes to a number, that number
# may answer them freely, and WhatsApp's reach-out limits (the 463 timelock) spare the reply.
# Past it, a number that only ever heard from them is a stranger again.
HEARD_WINDOW = timedelta(hours=24)


class Affinity(Model):
    """What a tenant's numbers know of one recipient (one item per tenant and recipient): the
    number that last sent to them (absent when none ever did) and, per number id, when each
    number last heard from them (an incoming message)."""

    number_id: str | None = None
    number: str | None = None
    sent_at: datetime | None = None
    heard: dict[str, datetime] = Field(default_factory=dict)

    def heard_by(self, now: datetime) -> frozenset[str]:
        """The numbers the recipient wrote to within `HEARD_WINDOW` of `now`."""
        return frozenset(number_id for number_id, at in self.heard.items() if now - at <= HEARD_WINDOW)


class NumberPlan(Model):
    """The numbers to try, in order, and the `pool.number.resolved` trace data.

    `attached` is the pool number the recipient's affinity still points at, connected or not.
    """

    numbers: list[NumberRoutes]
    resolved: dict[str, Any]
    attached: NumberRoutes | None = None

    def keeps_affinity_after(self, sent_from: NumberRoutes) -> bool:
        """True when a send from `sent_from` must not move the recipient's affinity.

        Served by another number while its own is down, the recipient goes back to its number
        once it reconnects: the affinity only moves when no pool number holds it.
        """
        return self.attached is not None and self.attached.number_id != sent_from.number_id


def usable_affinity(config: SendingConfig, affinity: Affinity | None) -> NumberRoutes | None:
    """The pool number the recipient is attached to, if it is still in the pool.

    An affinity older than the number's (re)entry in the pool is void: leaving the pool drops it.
    """
    if affinity is None or affinity.number_id is None or affinity.sent_at is None:
        return None  # no number ever sent to them (at most, some heard from them)
    for number in config.pool:
        if number.number_id == affinity.number_id:
            return number if number.added_at is None or affinity.sent_at >= number.added_at else None
    return None


def known_to(config: SendingConfig, affinity: Affinity | None, now: datetime) -> frozenset[str]:
    """The numbers the recipient is no new contact of: the pool number attached to them (see
    `usable_affinity`) and every number they wrote to within `HEARD_WINDOW` (whether or not it
    is in the pool: who wrote to a number is WhatsApp's fact about the number, not the pool's)."""
    if affinity is None:
        return frozenset()
    attached = usable_affinity(config, affinity)
    heard = affinity.heard_by(now)
    return heard | {attached.number_id} if attached is not None else heard


@dataclass(frozen=True, slots=True)
class Ticket:
    """One turn of a key's round-robin counter: the `count`-th (1-based) of shard `shard` of `shards`.

    One shard walks the pool 1, 2, 3, ... from its first number. With several, the shards' counts
    interleave as one counter's would (shard 0's first ticket, shard 1's first, ..., then every
    shard's second), so shards taken in turn walk the pool as one counter does and a number's
    share is off only by how unevenly the shards were taken, not by how many there are.
    """

    count: int
    shard: int = 0
    shards: int = 1

    def pool_index(self, size: int) -> int:
        position = (self.count - 1) * self.shards + self.shard
        common = math.gcd(self.shards, size)
        if common > 1:
            # Interleaved alone, a shard would only ever reach the numbers `shard` modulo `common`
            # (10 shards, a pool of 10: one number each); after every full turn of all shards
            # over the pool, step one number so that each shard walks the whole pool too.
            position += position // (self.shards * size // common)
        return position % size


def plan_numbers(config: SendingConfig, affinity: Affinity | None, take_ticket: Callable[[], Ticket]) -> NumberPlan:
    """Affinity first, else the round-robin ticket; then every other pool number in rotation.

    Default mode, or an empty pool, uses the default number only. `take_ticket` (an atomic
    counter) is called only when affinity does not decide. Disconnected numbers stay in the
    list: the worker records each one it passes over.
    """
    if config.mode != "pool" or not config.pool:
        default = config.default
        return NumberPlan(
            numbers=[default] if default else [],
            resolved=_resolved("default", affinity, default, None, len(config.pool)),
        )
    pool = list(config.pool)
    attached = usable_affinity(config, affinity)
    ticket_index: int | None = None
    if attached is not None and attached.connected:
        start = pool.index(attached)
    else:
        ticket_index = take_ticket().pool_index(len(pool))
        start = ticket_index
    ordered = pool[start:] + pool[:start]
    first = next((number for number in ordered if number.connected), None)
    return NumberPlan(
        numbers=ordered, resolved=_resolved("pool", affinity, first, ticket_index, len(pool)), attached=attached
    )


def _resolved(
    mode: SelectionMode, affinity: Affinity | None, number: NumberRoutes | None, index: int | None, size: int
) -> dict[str, Any]:
    return {
        "selectionMode": mode,
        "affinityNumber": affinity.number if affinity else None,
        "resolvedNumber": number.digits if number and number.connected else None,
        "roundRobinIndex": index,
        "poolSize": size,
    }

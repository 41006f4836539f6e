"""The connection state on the instance item (the catalog's `InstanceItem`, pk
`INSTANCE#<tenant>:<name>`, sk `#META`).

Attributes: `state`, `state_changed_at`, `state_seq` (the provider `seq` of the last ordered
event written) and `state_rev` (moved on by every write of the state). Each write is one
conditional update of these attributes alone (see `domain.py` for the rules); nothing else writes
them except the catalog, which starts them over when an instance is bound to another provider
session.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from switchboard.catalog.domain import InstanceState
from switchboard.catalog.models import InstanceItem
from switchboard.connection_state.domain import StateWrite, StoredState
from switchboard.core import store


class ConnectionStateRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def apply_event(self, key: str, state: InstanceState, seq: int, at: datetime) -> StateWrite:
        """Write an ordered event's state if its `seq` is newer than the stored one."""
        newer = InstanceItem.state_seq.does_not_exist() | (InstanceItem.state_seq < seq)
        return self._update(key, [*_written(state, at), InstanceItem.state_seq.set(seq)], newer)

    def apply_read(self, key: str, state: InstanceState, before: StoredState, at: datetime) -> StateWrite:
        """Write a status read's state if nothing wrote the state since `before` was read."""
        unchanged = InstanceItem.state_rev == before.rev
        if not before.rev:  # an item from before the revision existed has none: it counts as 0
            unchanged = InstanceItem.state_rev.does_not_exist() | unchanged
        return self._update(key, _written(state, at), unchanged)

    def stored(self, key: str) -> StoredState | None:
        """The stored state and revision (a consistent read); None when the instance is gone."""
        try:
            item = InstanceItem.get(
                InstanceItem.pk_for(key),
                InstanceItem.sk_for(),
                consistent_read=True,
                attributes_to_get=["pk", "state", "state_rev"],
            )
        except InstanceItem.DoesNotExist:
            return None
        return StoredState(state=_state(item), rev=item.state_rev or 0)

    @staticmethod
    def _update(key: str, actions: Sequence[Action], condition: Condition) -> StateWrite:
        instance = InstanceItem(InstanceItem.pk_for(key), InstanceItem.sk_for())
        try:
            previous = store.update_returning_old(instance, actions, InstanceItem.pk.exists() & condition)
        except store.ConditionFailed:
            return StateWrite(written=False)
        return StateWrite(written=True, previous=_state(previous))


def _written(state: InstanceState, at: datetime) -> list[Action]:
    """What every write of the state sets: the state, when, and the next revision."""
    return [InstanceItem.state.set(state), InstanceItem.state_changed_at.set(at), InstanceItem.state_rev.add(1)]


def _state(item: InstanceItem) -> InstanceState:
    # An instance never connected has no stored state: the API shows it DISCONNECTED.
    return "CONNECTED" if item.state == "CONNECTED" else "DISCONNECTED"

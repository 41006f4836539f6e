"""The connection state on the instance item (pk `INSTANCE#<tenant>:<name>`, sk `#META`).

Attributes: `state`, `state_changed_at`, `state_seq` (the provider `seq` of the last ordered
event written) and `state_rev` (moved on by every write of the state). Each write is one
conditional UpdateItem (see `domain.py` for the rules); nothing else writes these attributes
except the catalog, which resets them when an instance is bound to another provider session.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from switchboard.catalog.domain import InstanceState
from switchboard.connection_state.domain import StateWrite, StoredState
from switchboard.core.dynamo import entity_key, is_condition_failure


class ConnectionStateRepository:
    def __init__(self, table: Any) -> None:
        self._table = table

    def apply_event(self, key: str, state: InstanceState, seq: int, at: datetime) -> StateWrite:
        """Write an ordered event's state if its `seq` is newer than the stored one."""
        return self._update(
            key,
            "SET #state = :state, state_seq = :seq, state_changed_at = :at ADD state_rev :one",
            "attribute_exists(pk) AND (attribute_not_exists(state_seq) OR state_seq < :seq)",
            {":state": state, ":seq": seq, ":at": at.isoformat(), ":one": 1},
        )

    def apply_read(self, key: str, state: InstanceState, before: StoredState, at: datetime) -> StateWrite:
        """Write a status read's state if nothing wrote the state since `before` was read."""
        values: dict[str, Any] = {":state": state, ":at": at.isoformat(), ":one": 1, ":rev": before.rev}
        condition = "attribute_exists(pk) AND state_rev = :rev"
        if not before.rev:  # an item from before the revision existed has none: it counts as 0
            condition = "attribute_exists(pk) AND (attribute_not_exists(state_rev) OR state_rev = :rev)"
        return self._update(key, "SET #state = :state, state_changed_at = :at ADD state_rev :one", condition, values)

    def stored(self, key: str) -> StoredState | None:
        """The stored state and revision (a consistent read); None when the instance is gone."""
        item = self._table.get_item(
            Key=entity_key("INSTANCE", key),
            ConsistentRead=True,
            ProjectionExpression="pk, #state, state_rev",
            ExpressionAttributeNames={"#state": "state"},
        ).get("Item")
        if not item:
            return None
        return StoredState(state=item.get("state", "DISCONNECTED"), rev=int(item.get("state_rev", 0)))

    def _update(self, key: str, expression: str, condition: str, values: dict[str, Any]) -> StateWrite:
        try:
            answer = self._table.update_item(
                Key=entity_key("INSTANCE", key),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=values,
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return StateWrite(written=False)
            raise
        # An instance never connected has no stored state: the API shows it DISCONNECTED.
        previous = (answer.get("Attributes") or {}).get("state", "DISCONNECTED")
        return StateWrite(written=True, previous=previous)

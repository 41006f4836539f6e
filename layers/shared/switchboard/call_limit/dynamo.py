"""The line item of each instance (`LINE#<instance key>` / `#META`): limit, version and their snapshot writes.

The call limit owns `limit`, `version`, `updatedAt`, `conflict` (written only here); the calls capability owns
`occupants`. Every write here keeps `occupants` (creating it empty when the item is new), so
the two sides never overwrite each other.

A snapshot is applied by conditional writes that encode `switchboard.call_limit.domain.judge`:
first "replace if newer" (one request in the common case); when that condition fails, the
item as it was (returned by the failed write itself) says whether the snapshot is older, the
same, or a conflict, and a second write conditioned on exactly that state records it. A write
that loses a race to a newer snapshot is judged again against what won.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from switchboard.call_limit.domain import Line, Snapshot, SnapshotResult, Verdict, judge
from switchboard.catalog.domain import instance_key
from switchboard.core.dynamo import from_item, is_condition_failure
from switchboard.core.observability import logger

META = "#META"
NAMES = {
    "#limit": "limit",
    "#version": "version",
    "#conflict": "conflict",
    "#updated": "updatedAt",
    "#source": "source",
}
# Each decision loses at most one race per concurrent newer snapshot; this bound only stops a bug from spinning.
MAX_ATTEMPTS = 8
_deserializer = TypeDeserializer()


def line_key(tenant: str, instance_name: str) -> dict[str, str]:
    return {"pk": f"LINE#{instance_key(tenant, instance_name)}", "sk": META}


def line_from_item(instance_name: str, item: dict[str, Any]) -> Line:
    return from_item(Line, {**item, "instance": instance_name})


class LineRepository:
    def __init__(self, table: Any) -> None:
        self._table = table

    def get(self, tenant: str, instance_name: str) -> Line | None:
        item = self._table.get_item(Key=line_key(tenant, instance_name), ConsistentRead=True).get("Item")
        return line_from_item(instance_name, item) if item else None

    def apply_snapshot(self, tenant: str, instance_name: str, snapshot: Snapshot) -> SnapshotResult:
        """Apply one snapshot by the snapshot rule; returns the verdict and the stored line."""
        for _ in range(MAX_ATTEMPTS):
            current = self._replace_if_newer(instance_name, tenant, snapshot)
            if isinstance(current, SnapshotResult):
                return current
            verdict = judge(current.limit, current.version, current.conflict, snapshot)
            if verdict in (Verdict.IGNORE, Verdict.SAME):
                return SnapshotResult(verdict=verdict, line=current, changed=False)
            if verdict is Verdict.CONFLICT:
                stored = self._flag_conflict(instance_name, current, snapshot)
            elif verdict is Verdict.RESOLVE:
                stored = self._resolve(instance_name, tenant, snapshot)
            else:  # REPLACE: the item changed between the two reads; judge it again.
                continue
            if stored is not None:
                return SnapshotResult(verdict=verdict, line=stored, changed=stored.limit != current.limit)
        raise RuntimeError(f"snapshot for {instance_name} not settled after {MAX_ATTEMPTS} attempts")

    # --- the conditional writes ------------------------------------------------------------

    def _replace_if_newer(self, instance_name: str, tenant: str, snapshot: Snapshot) -> SnapshotResult | Line:
        """REPLACE when the rule says so; otherwise the line as it is (from the failed write)."""
        values: dict[str, Any] = {
            ":tenant": tenant,
            ":l": snapshot.limit,
            ":empty": {},
            ":false": False,
            ":s": snapshot.source,
        }
        sets = [
            "tenant = :tenant",
            "#limit = :l",
            "#conflict = :false",
            "#source = :s",
            "occupants = if_not_exists(occupants, :empty)",
        ]
        removes: list[str] = []
        if snapshot.version is None:
            condition = "attribute_not_exists(#version) AND (attribute_not_exists(#limit) OR #limit <> :l)"
        else:
            condition = "attribute_not_exists(#version) OR #version < :v"
            values[":v"] = Decimal(snapshot.version)
            sets.append("#version = :v")
        if snapshot.updated_at is not None:
            values[":u"] = snapshot.updated_at
            sets.append("#updated = :u")
        else:
            removes.append("#updated")
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        try:
            answer = self._table.update_item(
                Key=line_key(tenant, instance_name),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=NAMES,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            old = {name: _deserializer.deserialize(value) for name, value in error.response.get("Item", {}).items()}
            return line_from_item(instance_name, {"tenant": tenant, **old})
        line = line_from_item(instance_name, answer["Attributes"])
        logger.info(
            "call limit snapshot applied",
            extra={
                "instance": instance_key(tenant, instance_name),
                "limit": snapshot.limit,
                "version": str(snapshot.version),
            },
        )
        return SnapshotResult(verdict=Verdict.REPLACE, line=line, changed=True)

    def _flag_conflict(self, instance_name: str, current: Line, snapshot: Snapshot) -> Line | None:
        """Flag an equal version with another value, if the line still holds what was judged."""
        logger.warning(
            "call limit conflict: same version, different value",
            extra={
                "instance": instance_name,
                "version": str(snapshot.version),
                "stored_limit": current.limit,
                "seen_limit": snapshot.limit,
                "source": snapshot.source,
            },
        )
        return self._conditional_update(
            current.tenant,
            instance_name,
            "SET #conflict = :true",
            "#version = :v AND #limit = :stored",
            {":true": True, ":v": Decimal(snapshot.version or 0), ":stored": current.limit},
        )

    def _resolve(self, instance_name: str, tenant: str, snapshot: Snapshot) -> Line | None:
        """A status read at the stored version settles it: its value, no conflict flag."""
        values: dict[str, Any] = {
            ":tenant": tenant,
            ":l": snapshot.limit,
            ":v": Decimal(snapshot.version or 0),
            ":false": False,
            ":true": True,
            ":s": snapshot.source,
        }
        sets = "SET tenant = :tenant, #limit = :l, #conflict = :false, #source = :s"
        if snapshot.updated_at is not None:
            values[":u"] = snapshot.updated_at
            sets += ", #updated = :u"
        logger.info(
            "call limit conflict resolved by a status read", extra={"instance": instance_key(tenant, instance_name)}
        )
        return self._conditional_update(
            tenant, instance_name, sets, "#version = :v AND (#limit <> :l OR #conflict = :true)", values
        )

    def _conditional_update(
        self, tenant: str, instance_name: str, expression: str, condition: str, values: dict[str, Any]
    ) -> Line | None:
        """The line after the write, or None when the condition no longer holds (judge again)."""
        used = {name: attribute for name, attribute in NAMES.items() if name in expression or name in condition}
        try:
            answer = self._table.update_item(
                Key=line_key(tenant, instance_name),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=used,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if is_condition_failure(error):
                return None
            raise
        return line_from_item(instance_name, answer["Attributes"])

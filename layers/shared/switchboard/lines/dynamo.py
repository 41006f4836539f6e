"""The line item of each instance (`LINE#<instance key>` / `#META`): limit, version and their snapshot writes.

The call limit owns `limit`, `version`, `updatedAt`, `conflict`, `source` (written only by the
snapshot writes here); the calls capability decides `occupants`, through the operations this
repository offers it (`record_admission`, `record_occupants`, `record_occupant_removed`, joining
the calls' unit of work, and `ensure_occupants`). Every snapshot write keeps `occupants`
(creating it empty when the item is new), so the two sides never overwrite each other.

A snapshot is applied by conditional writes that encode `switchboard.lines.domain.judge`:
first "replace if newer" (one request in the common case); when that condition fails, the
item as it was (returned by the failed write itself) says whether the snapshot is older, the
same, or a conflict, and a second write conditioned on exactly that state records it. A write
that loses a race to a newer snapshot is judged again against what won.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from pynamodb.attributes import BooleanAttribute, UnicodeAttribute
from pynamodb.expressions.condition import Condition, size
from pynamodb.expressions.operand import Value
from pynamodb.expressions.update import Action

from switchboard.catalog.domain import instance_key
from switchboard.core import store
from switchboard.core.observability import logger
from switchboard.core.store import DocumentAttribute, IntegerAttribute, Refusal, TableItem, UnitOfWork
from switchboard.lines.domain import Line, Occupant, Snapshot, SnapshotResult, Verdict, judge

# Each decision loses at most one race per concurrent newer snapshot; this bound only stops a bug from spinning.
MAX_ATTEMPTS = 8
# One entry of `occupants`: a map stored as the rest of the line (camelCase names).
_OCCUPANT = DocumentAttribute()

# What a refused admission means, given the line as the refusal saw it (None: there is no line
# item) and whether that line has an `occupants` map yet.
AdmissionRefused = Callable[[Line | None, bool], BaseException]


class LineItem(TableItem):
    """The line of one instance: the provider's call limit and what occupies its slots."""

    PREFIX = "LINE"

    tenant = UnicodeAttribute(null=True)
    limit = IntegerAttribute(null=True)
    version = IntegerAttribute(null=True)  # the provider's config version, compared as an integer
    updated_at = UnicodeAttribute(attr_name="updatedAt", null=True)
    conflict = BooleanAttribute(null=True)
    source = UnicodeAttribute(null=True)
    occupants = DocumentAttribute(null=True)  # occupant id -> occupant (`Occupant`, camelCase)

    @classmethod
    def of(cls, tenant: str, instance_name: str) -> LineItem:
        return cls(cls.pk_for(instance_key(tenant, instance_name)), cls.sk_for())


def line_key(tenant: str, instance_name: str) -> dict[str, str]:
    """The line's key, for a raw read of the item as stored."""
    item = LineItem.of(tenant, instance_name)
    return {"pk": item.pk, "sk": item.sk}


def _line(instance_name: str, item: LineItem, tenant: str | None = None) -> Line:
    return Line.model_validate(
        {
            "instance": instance_name,
            "tenant": item.tenant or tenant,
            "limit": item.limit,
            "version": item.version,
            "updated_at": item.updated_at,
            "conflict": bool(item.conflict),
            "source": item.source,
            "occupants": item.occupants or {},
        }
    )


def _occupant(occupant: Occupant) -> Value:
    return Value(occupant.model_dump(by_alias=True), attribute=_OCCUPANT)


class LineRepository:
    def __init__(self, table: Any) -> None:
        """`table`: the composition root's table, whose building bound the item models."""
        self._table = table

    def get(self, tenant: str, instance_name: str) -> Line | None:
        key = LineItem.of(tenant, instance_name)
        try:
            item = LineItem.get(key.pk, key.sk, consistent_read=True)
        except LineItem.DoesNotExist:
            return None
        return _line(instance_name, item)

    # --- the occupants, as the calls capability decides them ---------------------------------

    def ensure_occupants(self, tenant: str, instance_name: str) -> None:
        """Create the line item or its `occupants` map if missing; never touches the limit's attributes."""
        store.update(
            LineItem.of(tenant, instance_name),
            [
                LineItem.occupants.set(LineItem.occupants | Value({}, attribute=_OCCUPANT)),
                LineItem.tenant.set(LineItem.tenant | tenant),
            ],
        )

    def record_admission(
        self, uow: UnitOfWork, tenant: str, instance_name: str, occupant: Occupant, *, refused: AdmissionRefused
    ) -> None:
        """Join `uow` with taking a slot for `occupant`: the line has a free slot and the occupant
        is not on it yet; else `refused` of the line as the refusal saw it (read again where the
        endpoint does not return it)."""

        def refusal(refusal: Refusal) -> BaseException:
            stored = refusal.old(LineItem)
            if stored is None:
                key = LineItem.of(tenant, instance_name)
                try:
                    stored = LineItem.get(key.pk, key.sk, consistent_read=True)
                except LineItem.DoesNotExist:
                    return refused(None, False)
            return refused(_line(instance_name, stored, tenant), stored.occupants is not None)

        entry = LineItem.occupants[occupant.id]
        uow.update(
            LineItem.of(tenant, instance_name),
            [entry.set(_occupant(occupant))],
            (size(LineItem.occupants) < LineItem.limit) & entry.does_not_exist(),  # type: ignore[no-untyped-call]  # PynamoDB leaves `size` unannotated
            refused=refusal,
            return_old=True,
        )

    def record_occupants(
        self,
        uow: UnitOfWork,
        tenant: str,
        instance_name: str,
        *,
        put: Occupant | None = None,
        remove: Collection[str] = (),
        refused: BaseException,
    ) -> None:
        """Join `uow` with setting `put` and removing the entries `remove` (a nested entry needs
        the map: `refused` when the line has none yet)."""
        actions: list[Action] = [LineItem.occupants[occupant_id].remove() for occupant_id in remove]
        if put is not None:
            actions.insert(0, LineItem.occupants[put.id].set(_occupant(put)))
        uow.update(LineItem.of(tenant, instance_name), actions, LineItem.occupants.exists(), refused=refused)

    def record_occupant_removed(
        self, uow: UnitOfWork, tenant: str, instance_name: str, occupant_id: str, *, refused: BaseException
    ) -> None:
        """Join `uow` with removing one entry that is on the line (`refused` when it is not)."""
        entry = LineItem.occupants[occupant_id]
        uow.update(LineItem.of(tenant, instance_name), [entry.remove()], entry.exists(), refused=refused)

    # --- the snapshot rule -----------------------------------------------------------------

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
        actions: list[Action] = [
            LineItem.tenant.set(tenant),
            LineItem.limit.set(snapshot.limit),
            LineItem.conflict.set(False),
            LineItem.source.set(snapshot.source),
            LineItem.occupants.set(LineItem.occupants | Value({}, attribute=_OCCUPANT)),
        ]
        condition: Condition
        if snapshot.version is None:
            condition = LineItem.version.does_not_exist() & (
                LineItem.limit.does_not_exist() | (LineItem.limit != snapshot.limit)
            )
        else:
            condition = LineItem.version.does_not_exist() | (LineItem.version < snapshot.version)
            actions.append(LineItem.version.set(snapshot.version))
        if snapshot.updated_at is not None:
            actions.append(LineItem.updated_at.set(snapshot.updated_at))
        else:
            actions.append(LineItem.updated_at.remove())
        try:
            item = store.update(LineItem.of(tenant, instance_name), actions, condition, return_old=True)
        except store.ConditionFailed as refused:
            old = refused.old(LineItem)
            return _line(instance_name, old, tenant) if old else Line(instance=instance_name, tenant=tenant)
        logger.info(
            "call limit snapshot applied",
            extra={
                "instance": instance_key(tenant, instance_name),
                "limit": snapshot.limit,
                "version": str(snapshot.version),
            },
        )
        return SnapshotResult(verdict=Verdict.REPLACE, line=_line(instance_name, item), changed=True)

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
            [LineItem.conflict.set(True)],
            (LineItem.version == (snapshot.version or 0)) & (LineItem.limit == current.limit),
        )

    def _resolve(self, instance_name: str, tenant: str, snapshot: Snapshot) -> Line | None:
        """A status read at the stored version settles it: its value, no conflict flag."""
        actions: list[Action] = [
            LineItem.tenant.set(tenant),
            LineItem.limit.set(snapshot.limit),
            LineItem.conflict.set(False),
            LineItem.source.set(snapshot.source),
        ]
        if snapshot.updated_at is not None:
            actions.append(LineItem.updated_at.set(snapshot.updated_at))
        logger.info(
            "call limit conflict resolved by a status read", extra={"instance": instance_key(tenant, instance_name)}
        )
        return self._conditional_update(
            tenant,
            instance_name,
            actions,
            (LineItem.version == (snapshot.version or 0))
            & ((LineItem.limit != snapshot.limit) | (LineItem.conflict == True)),  # noqa: E712  # an expression
        )

    @staticmethod
    def _conditional_update(
        tenant: str, instance_name: str, actions: list[Action], condition: Condition
    ) -> Line | None:
        """The line after the write, or None when the condition no longer holds (judge again)."""
        try:
            item = store.update(LineItem.of(tenant, instance_name), actions, condition)
        except store.ConditionFailed:
            return None
        return _line(instance_name, item)

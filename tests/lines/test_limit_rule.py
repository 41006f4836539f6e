"""The snapshot rule for the call limit: as pure logic, and as the conditional writes that enforce it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from switchboard import bootstrap
from switchboard.lines.domain import MAX_VERSION, Snapshot, SnapshotSource, Verdict, judge
from switchboard.lines.dynamo import LineRepository, line_key

BIG = 9007199254740993  # 2**53 + 1: the first integer a float cannot hold


def snap(limit: int, version: int | None, source: SnapshotSource = "call_settings", at: str | None = None) -> Snapshot:
    return Snapshot(limit=limit, version=version, updated_at=at, source=source)


# --- the rule as pure logic ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "snapshot", "expected"),
    [
        ((None, None, False), snap(2, 0), Verdict.REPLACE),  # first snapshot, version 0
        ((1, 3, False), snap(2, 4), Verdict.REPLACE),
        ((1, 3, False), snap(2, 2), Verdict.IGNORE),
        ((2, 3, False), snap(2, 3), Verdict.SAME),
        ((2, 3, False), snap(5, 3), Verdict.CONFLICT),
        ((2, 3, False), snap(5, 3, "post"), Verdict.CONFLICT),
        ((2, 3, False), snap(5, 3, "status"), Verdict.RESOLVE),
        ((2, 3, True), snap(2, 3, "status"), Verdict.RESOLVE),  # the read confirms: flag cleared
        ((2, 3, True), snap(2, 3), Verdict.SAME),  # only a status read settles a conflict
        ((1, 0, False), snap(3, None), Verdict.IGNORE),  # version 0 is known: version-less is ignored
        ((None, None, False), snap(3, None), Verdict.REPLACE),  # old server: no version known yet
        ((3, None, False), snap(3, None), Verdict.SAME),
        ((3, None, False), snap(4, 0), Verdict.REPLACE),  # a first version replaces a version-less limit
        ((1, BIG, False), snap(2, BIG - 1), Verdict.IGNORE),  # equal as floats, not as integers
        ((1, MAX_VERSION - 1, False), snap(2, MAX_VERSION), Verdict.REPLACE),
    ],
)
def test_judge(stored: tuple[int | None, int | None, bool], snapshot: Snapshot, expected: Verdict) -> None:
    assert judge(*stored, snapshot) is expected


def test_a_snapshot_outside_the_64_bit_range_or_the_limit_range_is_not_a_snapshot() -> None:
    for bad in ({"version": -1}, {"version": MAX_VERSION + 1}, {"limit": 0}, {"limit": 9}):
        with pytest.raises(ValueError):
            Snapshot(**{"limit": 2, "version": 1, "source": "status", **bad})


def fold(snapshots: list[Snapshot]) -> tuple[int | None, int | None, bool]:
    """Apply snapshots in order with the rule, in memory."""
    limit: int | None = None
    version: int | None = None
    conflict = False
    for snapshot in snapshots:
        verdict = judge(limit, version, conflict, snapshot)
        if verdict in (Verdict.REPLACE, Verdict.RESOLVE):
            limit, conflict = snapshot.limit, False
            version = snapshot.version if snapshot.version is not None else version
        elif verdict is Verdict.CONFLICT:
            conflict = True
    return limit, version, conflict


# One provider history: each version saved once with one limit (versions may start anywhere, 0 included).
histories = st.tuples(
    st.sampled_from([0, 7, BIG - 3, MAX_VERSION - 6]),
    st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=6),
).map(lambda pair: [snap(limit, pair[0] + offset) for offset, limit in enumerate(pair[1])])


@given(
    history=histories,
    data=st.data(),
)
def test_any_order_and_duplication_of_a_history_ends_at_its_newest_snapshot(history: list[Snapshot], data: Any) -> None:
    deliveries = data.draw(st.lists(st.sampled_from(history), min_size=0, max_size=12)) + history
    shuffled = data.draw(st.permutations(deliveries))

    assert fold(shuffled) == (history[-1].limit, history[-1].version, False)


# --- the same rule through DynamoDB's conditional writes ------------------------------------


@pytest.fixture
def lines(aws: Any) -> LineRepository:
    return bootstrap.line_repository()


def new_line() -> str:
    return f"line-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize("version", [0, BIG, MAX_VERSION])
def test_versions_are_stored_as_exact_integers(lines: LineRepository, version: int) -> None:
    name = new_line()

    result = lines.apply_snapshot("acme", name, snap(3, version, "status", at="2026-11-30T10:00:00Z"))

    raw = bootstrap.table().get_item(Key=line_key("acme", name), ConsistentRead=True)["Item"]
    assert result.verdict is Verdict.REPLACE and result.changed
    assert raw["version"] == version and str(raw["version"]) == str(version)
    stored = lines.get("acme", name)
    assert stored is not None
    assert (stored.limit, stored.version, stored.updated_at, stored.tenant) == (
        3,
        version,
        "2026-11-30T10:00:00Z",
        "acme",
    )
    assert stored.occupants == {}


def test_an_older_version_one_below_a_float_boundary_is_ignored(lines: LineRepository) -> None:
    name = new_line()
    lines.apply_snapshot("acme", name, snap(2, BIG))

    result = lines.apply_snapshot("acme", name, snap(7, BIG - 1))

    assert (result.verdict, result.changed) == (Verdict.IGNORE, False)
    assert (result.line.limit, result.line.version) == (2, BIG)


def test_equal_version_other_value_is_flagged_then_settled_by_a_status_read(lines: LineRepository) -> None:
    name = new_line()
    lines.apply_snapshot("acme", name, snap(2, 5))

    flagged = lines.apply_snapshot("acme", name, snap(4, 5, "connection"))
    repeated = lines.apply_snapshot("acme", name, snap(4, 5, "connection"))
    settled = lines.apply_snapshot("acme", name, snap(4, 5, "status"))

    assert (flagged.verdict, flagged.line.limit, flagged.line.conflict, flagged.changed) == (
        Verdict.CONFLICT,
        2,
        True,
        False,
    )
    assert repeated.verdict is Verdict.CONFLICT and repeated.line.conflict
    assert (settled.verdict, settled.line.limit, settled.line.conflict, settled.changed) == (
        Verdict.RESOLVE,
        4,
        False,
        True,
    )


def test_a_status_read_confirming_the_stored_value_clears_the_flag_without_a_change(lines: LineRepository) -> None:
    name = new_line()
    lines.apply_snapshot("acme", name, snap(2, 5))
    lines.apply_snapshot("acme", name, snap(4, 5))

    confirmed = lines.apply_snapshot("acme", name, snap(2, 5, "status"))

    assert (confirmed.verdict, confirmed.line.conflict, confirmed.changed) == (Verdict.RESOLVE, False, False)


def test_a_newer_version_clears_a_conflict(lines: LineRepository) -> None:
    name = new_line()
    lines.apply_snapshot("acme", name, snap(2, 5))
    lines.apply_snapshot("acme", name, snap(4, 5))

    newer = lines.apply_snapshot("acme", name, snap(6, 6))

    assert (newer.line.limit, newer.line.version, newer.line.conflict) == (6, 6, False)


def test_a_version_less_snapshot_sets_the_limit_only_while_no_version_is_known(lines: LineRepository) -> None:
    name = new_line()

    first = lines.apply_snapshot("acme", name, snap(3, None, "status"))
    same = lines.apply_snapshot("acme", name, snap(3, None, "status"))
    versioned = lines.apply_snapshot("acme", name, snap(2, 0, "status"))
    ignored = lines.apply_snapshot("acme", name, snap(5, None, "connection"))

    assert (first.verdict, first.line.limit, first.line.version) == (Verdict.REPLACE, 3, None)
    assert same.verdict is Verdict.SAME
    assert (versioned.verdict, versioned.line.version) == (Verdict.REPLACE, 0)
    assert (ignored.verdict, ignored.line.limit) == (Verdict.IGNORE, 2)


def test_snapshot_writes_keep_the_occupants_calls_ii_wrote(lines: LineRepository) -> None:
    name = new_line()
    occupant = {
        "kind": "call",
        "id": "call#p#i#c1",
        "callId": "c1",
        "direction": "incoming",
        "video": False,
        "state": "ringing",
        "owner": None,
        "since": "2026-11-30T10:00:00Z",
    }
    bootstrap.table().put_item(
        Item={**line_key("acme", name), "tenant": "acme", "occupants": {"call#p#i#c1": occupant}}
    )

    lines.apply_snapshot("acme", name, snap(1, 3))
    lines.apply_snapshot("acme", name, snap(4, 3, "post"))
    lines.apply_snapshot("acme", name, snap(4, 3, "status"))

    stored = lines.get("acme", name)
    assert stored is not None
    assert list(stored.occupants) == ["call#p#i#c1"] and stored.occupants["call#p#i#c1"].call_id == "c1"
    assert (stored.limit, stored.occupancy, stored.available, stored.excess) == (4, 1, 3, 0)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, data=st.data())
def test_dynamodb_reaches_the_same_state_as_the_rule_for_any_delivery_order(
    lines: LineRepository, history: list[Snapshot], data: Any
) -> None:
    name = new_line()
    deliveries = data.draw(st.permutations(data.draw(st.lists(st.sampled_from(history), max_size=6)) + history))

    notified = [lines.apply_snapshot("acme", name, snapshot).changed for snapshot in deliveries]

    stored = lines.get("acme", name)
    assert stored is not None
    assert (stored.limit, stored.version, stored.conflict) == fold(deliveries)
    assert notified.count(True) <= len(history)  # never a notice for a duplicate or an older snapshot


def test_each_decision_costs_one_conditional_write_and_a_conflict_two(lines: LineRepository) -> None:
    name = new_line()
    requests: list[str] = []
    bootstrap.table()  # binds the item models to the client they send through
    client = bootstrap.current().client("dynamodb")
    client.meta.events.register("before-call.dynamodb.*", lambda model, **_: requests.append(model.name))

    costs = {}
    for label, snapshot in [
        ("first", snap(2, 0)),
        ("newer", snap(3, 1)),
        ("duplicate", snap(3, 1)),
        ("older", snap(1, 0)),
        ("conflict", snap(5, 1)),
        ("resolve", snap(5, 1, "status")),
    ]:
        requests.clear()
        lines.apply_snapshot("acme", name, snapshot)
        costs[label] = list(requests)

    print("DynamoDB requests per snapshot:", {label: len(calls) for label, calls in costs.items()})
    one = ["UpdateItem"]
    assert costs == {
        "first": one,
        "newer": one,
        "duplicate": one,
        "older": one,
        "conflict": one * 2,
        "resolve": one * 2,
    }

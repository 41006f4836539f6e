"""The item models' base against moto: binding to the composition root's client, exact numbers, attribute
families, single conditional writes, and the unit of work's refusals mapped to the operations
that joined it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from pynamodb.attributes import UnicodeAttribute, VersionAttribute
from pynamodb.exceptions import CancellationReason, TransactWriteError, VerboseClientError

from switchboard import bootstrap
from switchboard.core import store
from switchboard.core.errors import InvalidInput
from switchboard.core.store import IntegerAttribute, TableItem
from tests.core.test_coldstart import handler_sources
from tools.coldstart import TEMPLATE_ENVIRONMENT
from tools.support.aws import AwsResources


class Counter(TableItem):
    PREFIX = "STORETEST"

    total = IntegerAttribute(null=True)
    note = UnicodeAttribute(null=True)
    version = VersionAttribute()


class Marker(TableItem):
    PREFIX = "STORETEST"
    SORT_PREFIX = "MARK"


MARKS = store.AttributeFamily("mark_", IntegerAttribute)


class Refused(Exception):
    pass


@pytest.fixture
def table(aws: AwsResources) -> Any:
    return bootstrap.table()


def counter(name: str) -> Counter:
    return Counter(Counter.pk_for(name), Counter.sk_for())


def test_models_send_through_the_containers_client_and_never_build_their_own(table: Any) -> None:
    one = bootstrap.current().client("dynamodb")
    store.bind(table.name, one)  # binding again to the same table and client changes nothing
    counter("a").save()
    assert Counter._get_connection().connection.client is one
    assert Marker._get_connection().connection.client is one
    assert store.unit_of_work()._transaction._connection.client is one
    # PynamoDB builds its botocore session lazily, when it would create a client: never here.
    assert getattr(Counter._get_connection().connection._local, "session", None) is None
    assert table.get_item(Key={"pk": "STORETEST#a", "sk": "#META"})["Item"]["version"] == 1


def test_a_model_follows_a_new_binding(table: Any) -> None:
    counter("a").save()
    bootstrap.reset()  # a new container: a new session, client and table
    bootstrap.table()
    assert Counter._get_connection().connection.client is bootstrap.current().client("dynamodb")
    assert Counter.get("STORETEST#a", "#META").version == 1


def test_a_key_layout_belongs_to_one_model() -> None:
    with pytest.raises(TypeError, match="belong to"):

        class Twin(TableItem):
            PREFIX = "STORETEST"
            SORT_PREFIX = "MARK"


def test_integers_and_versions_stay_exact_beyond_a_float(table: Any) -> None:
    huge = 2**63 - 1
    item = counter("big")
    item.total = huge
    item.version = 2**62 + 1
    item.save(add_version_condition=False)
    read = Counter.get("STORETEST#big", "#META")
    assert read.total == huge
    assert read.version == 2**62 + 2  # the save itself counts one version
    assert table.get_item(Key={"pk": "STORETEST#big", "sk": "#META"})["Item"]["total"] == huge


def test_attribute_families_are_written_in_expressions_and_read_back(table: Any) -> None:
    item = counter("f")
    store.update(item, [MARKS["n1"].set(5), MARKS["n2"].add(2)])
    after = store.update(item, [MARKS["n2"].add(1)], MARKS["n1"] == 5)
    assert MARKS.read(after) == {"n1": 5, "n2": 3}
    assert MARKS.read(Counter.get("STORETEST#f", "#META")) == {"n1": 5, "n2": 3}


def test_single_writes_raise_condition_failed(table: Any) -> None:
    item = counter("c")
    store.put(item, Counter.pk.does_not_exist())
    with pytest.raises(store.ConditionFailed):
        store.put(counter("c"), Counter.pk.does_not_exist())
    with pytest.raises(store.ConditionFailed):
        store.update(item, [Counter.note.set("x")], Counter.note.exists())
    with pytest.raises(store.ConditionFailed):  # a stale version
        store.update(counter("c"), [Counter.note.set("x")])
    with pytest.raises(store.ConditionFailed) as refused:
        store.update(counter("c"), [Counter.note.set("x")], return_old=True)
    old = refused.value.old(Counter)
    assert old is not None and old.version == 1
    assert store.delete(Marker(Marker.pk_for("c"), Marker.sk_for("missing"))) is None
    gone = store.delete(item, Counter.pk.exists())
    assert gone is not None and gone.version == 1


def test_a_committed_unit_of_work_writes_everything(table: Any) -> None:
    uow = store.unit_of_work()
    uow.update(counter("u"), [Counter.total.add(1)])
    uow.put(Marker(Marker.pk_for("u"), Marker.sk_for("1")), Marker.pk.does_not_exist())
    uow.check(Counter, Counter.pk_for("absent"), Counter.sk_for(), Counter.pk.does_not_exist())
    uow.commit()
    assert Counter.get("STORETEST#u", "#META").total == 1
    assert Marker.count("STORETEST#u", Marker.sk.startswith("MARK#")) == 1


def test_the_refused_operation_raises_its_error_whatever_order_pynamodb_sends_in(table: Any) -> None:
    """PynamoDB sends checks, deletes, puts, updates in that order; moto reports the reasons
    only in its message: the refusal is still the operation that joined with it."""
    counter("taken").save()
    counter("present").save()
    uow = store.unit_of_work()
    uow.put(counter("taken"), Counter.pk.does_not_exist(), refused=Refused("taken"))
    uow.update(counter("x"), [Counter.total.add(1)], refused=AssertionError("the update holds"))
    uow.check(Counter, Counter.pk_for("present"), Counter.sk_for(), Counter.pk.exists())
    with pytest.raises(Refused, match="taken") as raised:
        uow.commit()
    assert isinstance(raised.value.__cause__, TransactWriteError)
    assert Counter.count("STORETEST#x") == 0  # nothing of the transaction was written


def test_a_refusal_no_operation_translates_reports_every_code_in_join_order(table: Any) -> None:
    counter("taken").save()
    uow = store.unit_of_work()
    uow.update(counter("x"), [Counter.total.add(1)])
    uow.check(Counter, Counter.pk_for("taken"), Counter.sk_for(), Counter.pk.does_not_exist())
    with pytest.raises(store.TransactionCancelled) as raised:
        uow.commit()
    assert raised.value.codes == ["None", "ConditionalCheckFailed"]


def test_a_refusal_can_be_a_function_of_the_refusal(table: Any) -> None:
    counter("taken").save()
    uow = store.unit_of_work()
    uow.put(counter("taken"), Counter.pk.does_not_exist(), refused=lambda refusal: Refused(refusal.code))
    with pytest.raises(Refused, match="ConditionalCheckFailed"):
        uow.commit()


@pytest.mark.parametrize(("emptied", "value"), [("pk", ""), ("sk", ""), ("logsk", ""), ("logsk", "9" * 1100)])
def test_a_cursor_with_an_empty_or_oversized_key_value_is_refused_before_dynamodb_sees_it(
    emptied: str, value: str
) -> None:
    # DynamoDB refuses an empty string in a key attribute of ExclusiveStartKey, and a sort key
    # over 1 KB (a 500 if it got there); moto lets both through, so the check is ours.
    given = {"pk": "MESSAGE#m1", "sk": "#META", "logpk": "MSGLOG#acme", "logsk": "2026-12-06T23:36:05+00:00#m1"}
    cursor = store.encode_cursor({name: {"S": value} for name, value in given.items()})
    assert cursor is not None
    assert store.decode_cursor(cursor, "logpk", "MSGLOG#acme", "logsk")["pk"] == {"S": "MESSAGE#m1"}
    crafted = store.encode_cursor({name: {"S": value if name == emptied else kept} for name, kept in given.items()})
    assert crafted is not None

    with pytest.raises(InvalidInput) as refused:
        store.decode_cursor(crafted, "logpk", "MSGLOG#acme", "logsk")
    assert refused.value.code == "invalid_cursor"


def test_an_optional_update_refused_alone_gives_way_to_the_others(table: Any) -> None:
    store.update(counter("mark"), [MARKS["n"].set(5)])
    uow = store.unit_of_work()
    uow.put(Marker(Marker.pk_for("o"), Marker.sk_for("1")), Marker.pk.does_not_exist(), refused=Refused("taken"))
    uow.update(counter("mark"), [MARKS["n"].set(3)], MARKS["n"] <= 3, optional=True)  # an older mark
    uow.update(counter("o"), [Counter.total.add(1)])

    uow.commit()

    assert MARKS.read(Counter.get("STORETEST#mark", "#META")) == {"n": 5}
    assert Counter.get("STORETEST#o", "#META").total == 1
    assert Marker.count("STORETEST#o", Marker.sk.startswith("MARK#")) == 1


def test_an_optional_update_never_hides_another_refusal(table: Any) -> None:
    store.update(counter("mark"), [MARKS["n"].set(5)])
    Marker(Marker.pk_for("o"), Marker.sk_for("1")).save()
    uow = store.unit_of_work()
    uow.put(Marker(Marker.pk_for("o"), Marker.sk_for("1")), Marker.pk.does_not_exist(), refused=Refused("taken"))
    uow.update(counter("mark"), [MARKS["n"].set(3)], MARKS["n"] <= 3, optional=True)
    uow.update(counter("o"), [Counter.total.add(1)])

    with pytest.raises(Refused, match="taken"):
        uow.commit()
    assert store.get(Counter, "STORETEST#o", "#META") is None
    with pytest.raises(ValueError, match="request token"):
        store.unit_of_work(request_token="t-1").update(counter("x"), [], Counter.pk.exists(), optional=True)


def test_cancellation_reasons_come_from_the_response_or_its_message() -> None:

    message = (
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]"
    )
    moto_like = ClientError(
        {"Error": {"Code": "TransactionCanceledException", "Message": message}}, "TransactWriteItems"
    )
    assert store.cancellation_reasons(TransactWriteError("failed", moto_like)) == [
        None,
        CancellationReason(code="ConditionalCheckFailed"),
    ]
    reported = VerboseClientError(
        {"Error": {"Code": "TransactionCanceledException", "Message": "cancelled"}},
        "TransactWriteItems",
        cancellation_reasons=[CancellationReason(code="TransactionConflict"), None],
    )
    assert store.cancellation_reasons(TransactWriteError("failed", reported)) == [
        CancellationReason(code="TransactionConflict"),
        None,
    ]


# Imports every handler in one fresh interpreter: once a handler's import brings PynamoDB in, it
# is named (a later one cannot hide it, the module stays loaded).
LAZY_PROBE = """
import importlib.util, json, sys
loaded = []
for name, path in json.loads(sys.argv[1]).items():
    spec = importlib.util.spec_from_file_location(f"handler_{name}", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    if "pynamodb" in sys.modules:
        loaded.append(name)
print(json.dumps(loaded))
"""


def test_no_handler_imports_pynamodb_before_its_first_event() -> None:
    """PynamoDB costs ~8 % of `import boto3` in instructions; functions near the cold-start
    budget (make coldstart) pay it at their first table use, not at import."""
    environment = {
        **os.environ,
        "PYTHONPATH": str(Path(store.__file__).resolve().parents[2]),
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        **TEMPLATE_ENVIRONMENT,
    }
    done = subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", LAZY_PROBE, json.dumps(handler_sources())],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []

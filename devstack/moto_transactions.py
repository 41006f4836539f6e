"""TransactWriteItems on the embedded endpoint, backed up item by item.

moto (5.2.5) backs a transaction up by deep-copying every table it names, whole, before applying
it (`DynamoDBBackend.transact_write_items`): the cost of each transaction grows with everything
the table holds (measured: 634 ms per transaction at 1,000 items, 13.5 s at 20,000), and moto
expires nothing (no TTL sweep locally), so a local stack under traffic slows down and its memory
grows without bound, where DynamoDB does neither. `install()` replaces that method with the same
algorithm (same checks, same order, same errors and cancellation reasons), except that the
backup is a copy of the items the transaction names, restored on cancellation: what DynamoDB
does, all or nothing, at the cost of the items touched.

Installed by `devstack.aws_endpoint.AwsEndpoint` (the local stack, the tests' served endpoint
and the soak). `tests/stack/test_moto_transactions.py` runs the same transactions on both and
compares the tables and answers; `python -m devstack.moto_transactions` prints what one
transaction costs with each backup, by table size.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from typing import Any

from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

MOTO_METHOD = DynamoDBBackend.transact_write_items

Snapshot = tuple[Table, DynamoType, DynamoType | None, Item | None]


def install() -> None:
    """Every moto DynamoDB backend of this process backs its transactions up item by item."""
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]  # moto's backend method swapped process-wide, on purpose


def uninstall() -> None:
    DynamoDBBackend.transact_write_items = MOTO_METHOD  # type: ignore[method-assign]  # moto's own method put back


@contextlib.contextmanager
def backed_up_by(method: Callable[..., None]) -> Iterator[None]:
    """Transactions run `method` (`MOTO_METHOD` or `transact_write_items`) inside the block, and
    whatever ran before it after."""
    before = DynamoDBBackend.transact_write_items
    DynamoDBBackend.transact_write_items = method  # type: ignore[method-assign]  # the block's method swapped in for its duration
    try:
        yield
    finally:
        DynamoDBBackend.transact_write_items = before  # type: ignore[method-assign]  # whatever ran before put back


def _key(backend: DynamoDBBackend, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    if op_type != "Put":
        key: dict[str, Any] = op["Key"]
        return key
    attrs = op["Item"]
    table = backend.get_table(op["TableName"])
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _snapshot(backend: DynamoDBBackend, table_name: str, key: dict[str, Any]) -> Snapshot:
    table = backend.get_table(table_name)
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = (
        DynamoType(key[table.range_key_attr]) if table.range_key_attr and table.range_key_attr in key else None
    )
    stored: Any = table.items.get(hash_value)
    if range_value is not None:
        stored = stored.get(range_value) if isinstance(stored, dict) else None
    return table, hash_value, range_value, copy.deepcopy(stored) if stored is not None else None


def _restore(snapshot: Snapshot) -> None:
    table, hash_value, range_value, item = snapshot
    if range_value is None:
        if item is None:
            table.items.pop(hash_value, None)
        else:
            table.items[hash_value] = item  # type: ignore[assignment]  # moto types a hash-only table's items as range buckets; here each is one Item
        return
    bucket = table.items[hash_value]
    if item is None:
        bucket.pop(range_value, None)
    else:
        bucket[range_value] = item


OPERATIONS = frozenset({"ConditionCheck", "Put", "Delete", "Update"})
Reason = tuple[str, str, dict[str, Any] | None] | tuple[None, None, None]


def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """moto's `transact_write_items`, its whole-table backup replaced by the touched items'."""
    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    snapshots = _backup(self, transact_items)
    targets: set[tuple[str, str]] = set()
    reasons: list[Reason] = []
    for item in transact_items:
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException
        try:
            reasons.append(_apply(self, item, targets))
        except (MultipleTransactionsException, MockValidationException):
            _rollback(snapshots)
            raise
    if any(code is not None for code, _, _ in reasons):
        _rollback(snapshots)
        raise TransactionCanceledException(reasons)


def _backup(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[Snapshot]:
    """Every item the transaction names, as it is now (None: absent), before any operation runs
    (when moto copies the tables)."""
    snapshots: list[Snapshot] = []
    for item in transact_items:
        if len(list(item.keys())) != 1:
            continue  # refused before anything is written
        op_type, op = next(iter(item.items()))
        table_name = op.get("TableName")
        if table_name in self.tables and op_type in OPERATIONS:
            try:
                snapshots.append(_snapshot(self, table_name, _key(self, op_type, op)))
            except KeyError:
                continue  # no key attributes: the operation itself fails, writing nothing
    return snapshots


def _rollback(snapshots: list[Snapshot]) -> None:
    for snapshot in reversed(snapshots):
        _restore(snapshot)


def _claim(targets: set[tuple[str, str]], table_name: str, key: dict[str, Any]) -> None:
    """One operation per item in a transaction."""
    unique = (str(table_name), str(dict(sorted(key.items()))))
    if unique in targets:
        raise MultipleTransactionsException()
    targets.add(unique)


def _apply(self: DynamoDBBackend, item: dict[str, Any], targets: set[tuple[str, str]]) -> Reason:
    """One operation, as moto applies it: its cancellation reason, or (None, None, None)."""
    try:
        op_type, op = next(iter(item.items()))
        if op_type not in OPERATIONS:
            return ("ValueError", "Unsupported transaction operation", None)
        table_name = op["TableName"]
        condition = op.get("ConditionExpression")
        names, values = op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
        key = _key(self, op_type, op)
        _claim(targets, table_name, key)
        current = self.get_item(table_name, key)
        if condition is not None and not get_filter_expression(condition, names, values).expr(current):
            old = None
            if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                old = current.to_json()["Attributes"]
            return ("ConditionalCheckFailed", str(ConditionalCheckFailed(item=old).message), old)
        written = {
            "condition_expression": condition,
            "expression_attribute_names": names,
            "expression_attribute_values": values,
        }
        if op_type == "Put":
            self.put_item(table_name, op["Item"], **written)
        elif op_type == "Delete":
            self.delete_item(table_name, key, **written)
        elif op_type == "Update":
            self.update_item(table_name, key, update_expression=op["UpdateExpression"], **written)
    except (MultipleTransactionsException, MockValidationException):
        raise
    except ConditionalCheckFailed as failure:
        return ("ConditionalCheckFailed", str(failure.message), None)
    except Exception as failure:  # as moto: any other failure is this operation's cancellation reason
        return (type(failure).__name__, str(failure), None)
    return (None, None, None)


def _benchmark() -> None:
    """Milliseconds per two-item transaction on a table of N items, moto's backup against this one."""
    import os  # noqa: PLC0415 - only the benchmark needs these
    import time  # noqa: PLC0415

    import boto3  # noqa: PLC0415
    from moto import mock_aws  # noqa: PLC0415

    os.environ.update({"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"})
    for size in (1_000, 5_000, 20_000):
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            schema = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
            attributes = [{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk")]
            client.create_table(
                TableName="t", KeySchema=schema, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST"
            )
            filler = {"trace": {"L": [{"M": {"stage": {"S": "send.queued"}, "at": {"S": "2026-12-01"}}}] * 6}}
            for index in range(size):
                client.put_item(TableName="t", Item={"pk": {"S": f"MSG#{index}"}, "sk": {"S": "META"}, **filler})
            timings = {}
            for label, method in (("moto", MOTO_METHOD), ("item-level", transact_write_items)):
                with backed_up_by(method):
                    started = time.perf_counter()
                    for index in range(20):
                        item = {"pk": {"S": f"NEW#{label}#{index}"}, "sk": {"S": "META"}}
                        update = {"TableName": "t", "Key": {"pk": {"S": "MSG#0"}, "sk": {"S": "META"}}}
                        update |= {
                            "UpdateExpression": "SET n = :n",
                            "ExpressionAttributeValues": {":n": {"N": str(index)}},
                        }
                        client.transact_write_items(
                            TransactItems=[{"Put": {"TableName": "t", "Item": item}}, {"Update": update}]
                        )
                    timings[label] = (time.perf_counter() - started) / 20 * 1000
            moto, ours = timings["moto"], timings["item-level"]
            print(f"{size:>6} items: moto {moto:8.1f} ms per transaction, item-level {ours:6.1f} ms")


if __name__ == "__main__":
    _benchmark()

"""The one table as PynamoDB models: the base of every item model, its binding, and the unit of work.

Every item of the table is an instance of a `TableItem` subclass declared beside the repository
that owns it. A model declares its key prefixes (`PREFIX`, and `SORT_PREFIX` unless its sort key
is `#META`); one pair belongs to one model, checked when the class is created, so the key layout
of the whole table is the set of models.

`bind(table_name, client)` points every model at the table (its name from the settings) and at the
session's botocore client; the composition root binds when it builds the table (`bootstrap.table()`).
PynamoDB never builds a session or a client of its own: every model and every unit of work of a
container sends through that one client.

A decision that spans items is one `UnitOfWork`: repositories join it with their operations
(`repo.record_x(uow, ...)`), the caller commits, and a refused condition raises the error the
joining repository named for it. A single conditional write goes through `put`, `update` or
`delete` here, which raise `ConditionFailed` for the repository to translate.

Numbers: `IntegerAttribute` reads and writes integers exactly (64-bit versions and counters never
go through a float); `NumberAttribute` is for fractional values; `VersionAttribute` is PynamoDB's
optimistic lock, exact for integers too (its JSON parse yields an `int`).
"""

from __future__ import annotations

import base64
import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar, Generic, Literal, TypeVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError
from pynamodb.attributes import Attribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.connection.table import TableConnection
from pynamodb.constants import ALL_NEW, ALL_OLD, DELETE_ITEM, MAP, NUMBER, PUT_ITEM, STRING, UPDATE_ITEM
from pynamodb.exceptions import CancellationReason, TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model
from pynamodb.transactions import TransactGet, TransactWrite

from switchboard.core.errors import InvalidInput

META = "#META"
SEPARATOR = "#"

ItemT = TypeVar("ItemT", bound="TableItem")
ValueT = TypeVar("ValueT")


# --- attributes ------------------------------------------------------------------------------


class IntegerAttribute(Attribute[int]):
    """A DynamoDB number read and written as an exact `int` (never through a float)."""

    attr_type = NUMBER

    def serialize(self, value: int) -> str:
        return str(int(value))

    def deserialize(self, value: str) -> int:
        number = Decimal(value)
        if number != number.to_integral_value():
            raise ValueError(f"{self.attr_name} holds {value}, not an integer")
        return int(number)


class IsoDateTimeAttribute(Attribute[datetime]):
    """A datetime stored as `datetime.isoformat()` (what every stored record holds), read back as one."""

    attr_type = STRING

    def serialize(self, value: datetime) -> str:
        return value.isoformat()

    def deserialize(self, value: str) -> datetime:
        return datetime.fromisoformat(value)


class EpochAttribute(Attribute[datetime]):
    """A moment stored as whole epoch seconds: the table's TTL attribute `expiresAt` and leases."""

    attr_type = NUMBER

    def serialize(self, value: datetime) -> str:
        return str(int(value.timestamp()))

    def deserialize(self, value: str) -> datetime:
        return datetime.fromtimestamp(int(Decimal(value)), UTC)


class DocumentAttribute(Attribute[dict[str, Any]]):
    """A free-form JSON-like map, stored as a DynamoDB map: `None` entries left out (absent is not
    null), floats as exact decimals, integral numbers read back as `int`, others as `Decimal`."""

    attr_type = MAP

    def serialize(self, value: Mapping[str, Any]) -> dict[str, Any]:
        serialized: dict[str, Any] = _serializer.serialize(_storable(dict(value)))["M"]
        return serialized

    def deserialize(self, value: dict[str, Any]) -> dict[str, Any]:
        document: dict[str, Any] = _plain(_deserializer.deserialize({"M": value}))
        return document


_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _storable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, (list, tuple)):
        return [_storable(element) for element in value]
    if isinstance(value, dict):
        return {name: _storable(element) for name, element in value.items() if element is not None}
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value
    if isinstance(value, list):
        return [_plain(element) for element in value]
    if isinstance(value, dict):
        return {name: _plain(element) for name, element in value.items()}
    return value


class AttributeFamily(Generic[ValueT]):
    """Top-level attributes named `<prefix><suffix>` whose suffix is data: a heard mark per number
    (`heard_<number id>`), a failure counter per provider code (`fail_<code>`), a diversity slot
    (`dr_<slot>`). Top-level rather than a map: `SET map.#name` fails on an item, or a map, that
    does not exist yet.

    `family[suffix]` is that attribute, for expressions (`.set(v)`, `.add(1)`, `< v`,
    `.does_not_exist()`); `family.read(item)` is every member the stored item holds.
    """

    def __init__(self, prefix: str, kind: Callable[..., Attribute[ValueT]]) -> None:
        self.prefix = prefix
        self._kind = kind

    def __getitem__(self, suffix: str | int) -> Attribute[ValueT]:
        return self._kind(attr_name=f"{self.prefix}{suffix}")

    def read(self, item: TableItem) -> dict[str, ValueT]:
        """suffix -> value of every member of the family in the item as it was read."""
        members: dict[str, ValueT] = {}
        for name, stored in item.stored_attributes().items():
            if name.startswith(self.prefix) and name != self.prefix:
                attribute = self[name.removeprefix(self.prefix)]
                if attribute.attr_type in stored:
                    members[name.removeprefix(self.prefix)] = attribute.deserialize(attribute.get_value(stored))
        return members


# --- the base model and its binding ----------------------------------------------------------


@dataclass(frozen=True)
class _Binding:
    table_name: str
    client: Any  # the botocore DynamoDB client of the composition root's session
    connection: Connection  # PynamoDB's, sending through `client` (the unit of work's)


class _Bound:
    """The container's one binding (module state: PynamoDB binds models at class level)."""

    current: _Binding | None = None


_PREFIXES: dict[tuple[str, str | None], str] = {}


def bind(table_name: str, client: Any) -> None:
    """Bind every item model to the table `table_name`, sending through `client`: the session's
    low-level botocore DynamoDB client (the composition root's `Components.client("dynamodb")`, one
    per container).
    Not the boto3 `Table` resource's client: that one rewrites every request's attribute values
    from Python types, which PynamoDB has already serialised. Binding again to the same table and
    client is free; another table or client rebuilds every model's connection on its next use."""
    current = _Bound.current
    if current is not None and current.client is client and current.table_name == table_name:
        return
    _Bound.current = _Binding(table_name, client, _shared_connection(client))
    TableItem.Meta.table_name = table_name


def _bound() -> _Binding:
    if _Bound.current is None:
        raise RuntimeError("the item models are not bound to a table: bootstrap.table() binds them")
    return _Bound.current


def _shared_connection(client: Any) -> Connection:
    """A PynamoDB connection that sends through `client` (and never builds a client of its own)."""
    connection = Connection()
    connection._client = client
    return connection


class TableItem(Model):
    """The base of every item model: the table's keys, the binding, and what was read as stored.

    A concrete model declares `PREFIX` (its partition key is `PREFIX#<parts>`) and, unless its sort
    key is `#META`, `SORT_PREFIX` (`SORT_PREFIX#<parts>`; `""`: the sort key is the parts alone).
    """

    class Meta:
        table_name = "switchboard"  # replaced by bind(): the settings' TABLE_NAME

    PREFIX: ClassVar[str]
    SORT_PREFIX: ClassVar[str | None] = None

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)

    _bound_to: ClassVar[_Binding | None] = None
    _rebinding: ClassVar[threading.Lock] = threading.Lock()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "PREFIX" not in cls.__dict__:
            return  # a shared base of several models, not an item kind of its own
        layout = (cls.PREFIX, cls.SORT_PREFIX)
        owner = _PREFIXES.setdefault(layout, f"{cls.__module__}.{cls.__qualname__}")
        if owner != f"{cls.__module__}.{cls.__qualname__}":
            raise TypeError(f"key prefixes {layout} belong to {owner} already")

    @classmethod
    def pk_for(cls, *parts: str) -> str:
        return SEPARATOR.join((cls.PREFIX, *parts))

    @classmethod
    def sk_for(cls, *parts: str) -> str:
        if cls.SORT_PREFIX is None:
            if parts:
                raise TypeError(f"{cls.__name__}'s sort key is {META}")
            return META
        return SEPARATOR.join((cls.SORT_PREFIX, *parts) if cls.SORT_PREFIX else parts)

    @classmethod
    def _get_connection(cls) -> TableConnection:
        """PynamoDB's connection of this model, rebuilt when the binding changes, sending through
        the bound client: PynamoDB's own client (and its botocore session) is never created."""
        binding = _bound()
        connection: TableConnection | None = cls.__dict__.get("_connection")
        if cls.__dict__.get("_bound_to") is binding and connection is not None:
            return connection
        with cls._rebinding:  # threads of one container may meet a model's first use
            if cls.__dict__.get("_bound_to") is not binding or cls.__dict__.get("_connection") is None:
                cls._connection = None
                table_connection = super()._get_connection()
                table_connection.connection._client = binding.client
                cls._bound_to = binding
            built: TableConnection = cls.__dict__["_connection"]
            return built

    @classmethod
    def from_raw_data(cls: type[ItemT], data: dict[str, Any]) -> ItemT:
        item = super().from_raw_data(data)
        item._stored = data
        return item

    def deserialize(self, attribute_values: dict[str, dict[str, Any]]) -> None:
        super().deserialize(attribute_values)
        self._stored = attribute_values

    def stored_attributes(self) -> dict[str, dict[str, Any]]:
        """Every attribute of the item as read (typed values), declared or not (attribute families)."""
        stored: dict[str, dict[str, Any]] = getattr(self, "_stored", {})
        return stored


class TenantIndex(GlobalSecondaryIndex[ItemT]):  # type: ignore[no-untyped-call]  # PynamoDB's Index hook
    """GSI1 (`gsi1pk`, `gsi1sk`): tenant listings and other one-to-many lookups."""

    class Meta:
        index_name = "GSI1"
        projection = AllProjection()

    gsi1pk = UnicodeAttribute(hash_key=True)
    gsi1sk = UnicodeAttribute(range_key=True)


class RelationIndex(GlobalSecondaryIndex[ItemT]):  # type: ignore[no-untyped-call]  # PynamoDB's Index hook
    """GSI2 (`gsi2pk`, `gsi2sk`): the relations GSI1 does not carry."""

    class Meta:
        index_name = "GSI2"
        projection = AllProjection()

    gsi2pk = UnicodeAttribute(hash_key=True)
    gsi2sk = UnicodeAttribute(range_key=True)


# --- single conditional writes ---------------------------------------------------------------


class ConditionFailed(Exception):
    """A write's condition did not hold; `stored` is the item as stored when it was asked for
    (`return_old=True`) and the endpoint returns it (DynamoDB does, moto may not)."""

    def __init__(self, stored: dict[str, Any] | None = None) -> None:
        super().__init__("the write's condition did not hold")
        self.stored = stored

    def old(self, model: type[ItemT]) -> ItemT | None:
        return model.from_raw_data(self.stored) if self.stored else None


def put(item: TableItem, condition: Condition | None = None, *, return_old: bool = False) -> None:
    """Write the whole item (if `condition` holds; a versioned item also if its version still does);
    with `return_old`, a refusal carries the item as stored where the endpoint returns it."""
    kwargs = item.get_save_kwargs_from_instance(
        condition=condition, return_values_on_condition_failure=ALL_OLD if return_old else None
    )
    _send(item, PUT_ITEM, kwargs)
    item.update_local_version_attribute()  # type: ignore[no-untyped-call]  # PynamoDB leaves it unannotated


def update(
    item: ItemT, actions: Sequence[Action], condition: Condition | None = None, *, return_old: bool = False
) -> ItemT:
    """Apply `actions` to the stored item (if `condition` holds; a versioned item also if its
    version still does); `item` becomes the item after them (as PynamoDB's `Model.update`)."""
    kwargs = item.get_update_kwargs_from_instance(
        actions=list(actions), condition=condition, return_values_on_condition_failure=ALL_OLD if return_old else None
    )
    kwargs["ReturnValues"] = ALL_NEW
    answer = _send(item, UPDATE_ITEM, kwargs)
    item.deserialize(answer["Attributes"])
    return item


def update_returning_old(item: ItemT, actions: Sequence[Action], condition: Condition | None = None) -> ItemT:
    """Apply `actions` to the stored item (if `condition` holds) and return the item as it was
    before them (its attributes then; none when there was no item); `item` is left as built."""
    kwargs = item.get_update_kwargs_from_instance(actions=list(actions), condition=condition)
    kwargs["ReturnValues"] = ALL_OLD
    answer = _send(item, UPDATE_ITEM, kwargs)
    return type(item).from_raw_data(answer.get("Attributes") or {})


def delete(item: ItemT, condition: Condition | None = None) -> ItemT | None:
    """Delete the item (if `condition` holds); the item as it was, or None when there was none."""
    kwargs = item.get_delete_kwargs_from_instance(condition=condition)
    kwargs["ReturnValues"] = ALL_OLD
    answer = _send(item, DELETE_ITEM, kwargs)
    old = answer.get("Attributes")
    return type(item).from_raw_data(old) if old else None


def _send(item: TableItem, operation: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        answer: dict[str, Any] = type(item)._get_connection().connection.dispatch(operation, kwargs)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            # PynamoDB's error keeps only the code: the stored item is in botocore's, its cause.
            cause = error.__cause__
            stored = error.response.get("Item")
            if stored is None and isinstance(cause, ClientError):
                stored = cause.response.get("Item")
            raise ConditionFailed(stored) from error
        raise
    return answer


def get(model: type[ItemT], pk: str, sk: str, *, consistent: bool = False) -> ItemT | None:
    """The item at (`pk`, `sk`), or None."""
    try:
        return model.get(pk, sk, consistent_read=consistent)
    except model.DoesNotExist:
        return None


def delete_all(items: Iterable[TableItem]) -> None:
    """Delete every item, of any models, in batches (deleting an item that is gone is a no-op)."""
    with TableItem.batch_write() as batch:
        for item in items:
            batch.delete(item)


def query(
    model: type[ItemT],
    partition: str,
    sort: Condition | None = None,
    *,
    index: GlobalSecondaryIndex[ItemT] | None = None,
    newest_first: bool = False,
    limit: int | None = None,
    consistent: bool = False,
) -> Iterator[ItemT]:
    """The items of one partition (of the table or of `index`), page after page."""
    if index is not None:
        return index.query(partition, sort, scan_index_forward=not newest_first, limit=limit)
    return model.query(partition, sort, scan_index_forward=not newest_first, limit=limit, consistent_read=consistent)


@dataclass(frozen=True)
class Page(Generic[ItemT]):
    """One page of a listing and the cursor of the next (None: this was the last)."""

    items: list[ItemT]
    cursor: str | None


def page(
    model: type[ItemT],
    index: GlobalSecondaryIndex[ItemT],
    partition: str,
    sort: Condition | None = None,
    *,
    limit: int,
    cursor: str | None = None,
    filter_condition: Condition | None = None,
    newest_first: bool = True,
    max_requests: int = 5,
) -> Page[ItemT]:
    """One page of `index`'s partition: up to `limit` items passing `filter_condition`, read in at
    most `max_requests` Queries (a selective filter reads past items that do not pass, and a page
    stops there with a cursor rather than reading the whole partition).

    `cursor` is one an earlier page of this partition gave: anything else (edited, another
    tenant's, another listing's) raises InvalidInput `invalid_cursor`, never a request DynamoDB
    would refuse with a 500."""
    hash_name, range_name = _index_keys(index)
    start = decode_cursor(cursor, hash_name, partition, range_name) if cursor else None
    pages = index.query(
        partition,
        sort,
        filter_condition=filter_condition,
        scan_index_forward=not newest_first,
        page_size=limit,
        last_evaluated_key=start,
    ).page_iter
    found: list[ItemT] = []
    key: dict[str, Any] | None = start
    for _ in range(max_requests):
        try:
            answer = next(pages)
        except StopIteration:
            key = None
            break
        items, key = answer.get("Items", []), answer.get("LastEvaluatedKey")
        for n, raw in enumerate(items):
            found.append(model.from_raw_data(raw))
            if len(found) == limit:
                if n < len(items) - 1:  # the rest of this answer comes on the next page
                    key = {name: raw[name] for name in ("pk", "sk", hash_name, range_name)}
                break
        if not key or len(found) == limit:
            break
    return Page(found, encode_cursor(key))


def time_range(attribute: Attribute[str], since: datetime | None, until: datetime | None) -> Condition | None:
    """The sort key condition of a listing ordered by `<ISO time>#<id>` from `since` to `until`
    (both included: "~" sorts after every id character, so `until` takes its own second's items)."""
    low = since.astimezone(UTC).isoformat() if since else None
    high = f"{until.astimezone(UTC).isoformat()}~" if until else None
    if low and high:
        between: Condition = attribute.between(low, high)
        return between
    if low:
        return attribute >= low
    if high:
        return attribute <= high
    return None


def all_of(conditions: Iterable[Condition]) -> Condition | None:
    """The conditions joined by AND (a listing's filters); None when there are none."""
    combined: Condition | None = None
    for condition in conditions:
        combined = condition if combined is None else combined & condition
    return combined


def _index_keys(index: GlobalSecondaryIndex[Any]) -> tuple[str, str]:
    hash_name = range_name = ""
    for attribute in index.Meta.attributes.values():
        if attribute.is_hash_key:
            hash_name = attribute.attr_name
        elif attribute.is_range_key:
            range_name = attribute.attr_name
    return hash_name, range_name


def encode_cursor(key: dict[str, Any] | None) -> str | None:
    """A listing's LastEvaluatedKey (string attributes only) as an opaque URL-safe cursor."""
    if not key:
        return None
    plain = {name: value["S"] for name, value in key.items()}
    return base64.urlsafe_b64encode(json.dumps(plain, separators=(",", ":")).encode()).decode().rstrip("=")


MAX_CURSOR_KEY_BYTES = 1024  # DynamoDB's bound on a sort key value


def decode_cursor(cursor: str, partition_name: str, partition: str, sort_name: str) -> dict[str, Any]:
    """The ExclusiveStartKey of `cursor`, if it is one a listing of this partition gave."""
    try:
        plain = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):
        raise InvalidInput("cursor is not one this listing gave", code="invalid_cursor") from None
    if (
        not isinstance(plain, dict)
        or plain.get(partition_name) != partition
        # DynamoDB refuses an empty key value, or a sort key over 1 KB, in a starting key with an
        # error of its own (a 500 here); no key it gave is either.
        or not all(
            isinstance(value, str) and 0 < len(value.encode()) <= MAX_CURSOR_KEY_BYTES for value in plain.values()
        )
        or set(plain) != {"pk", "sk", partition_name, sort_name}
    ):
        raise InvalidInput("cursor is not one this listing gave", code="invalid_cursor")
    return {name: {"S": value} for name, value in plain.items()}


def read_together() -> TransactGet:
    """A transactional read on the bound table: `with store.read_together() as read:` then
    `future = read.get(Model, pk, sk)` for each item, and `future.get()` after the block (raising
    `Model.DoesNotExist` for an item there is none of). Every item is as of one moment: a
    transaction writing several of them lands wholly before or wholly after the read."""
    return TransactGet(connection=_bound().connection)


# --- the unit of work ------------------------------------------------------------------------


CONDITION_FAILED = "ConditionalCheckFailed"
CONFLICT = "TransactionConflict"


@dataclass(frozen=True)
class Refusal:
    """Why a joined operation was refused: its cancellation code and, for an operation joined with
    `return_old=True` on an endpoint that returns it, the item as stored."""

    code: str
    stored: dict[str, Any] | None = None

    def old(self, model: type[ItemT]) -> ItemT | None:
        return model.from_raw_data(self.stored) if self.stored else None


Refused = BaseException | Callable[[Refusal], BaseException]


class TransactionCancelled(Exception):
    """A transaction nothing of which was written, for a reason no joined operation translated:
    `codes` are the cancellation codes of the operations in the order they joined."""

    def __init__(self, codes: Sequence[str]) -> None:
        super().__init__(f"transaction cancelled: {list(codes)}")
        self.codes = list(codes)


_Kind = Literal["check", "delete", "put", "update"]
# The order PynamoDB's Connection.transact_write_items sends the operations in (pinned by a test):
# a cancellation's reasons come in that order and are mapped back to the order operations joined.
_SENT_ORDER: tuple[_Kind, ...] = ("check", "delete", "put", "update")


@dataclass(frozen=True)
class _Joined:
    kind: _Kind
    index: int
    refused: Refused | None
    optional: bool = False
    item: TableItem | None = None


class UnitOfWork:
    """One DynamoDB transaction that repositories join with their operations; the caller commits.

    Each operation may name the error its refused condition means (`refused`: an exception, or a
    function of the `Refusal` giving one); on cancellation, the first refused operation in the
    order they joined raises its error (`from` PynamoDB's). A refusal no operation translates, or
    any other cancellation, raises `TransactionCancelled` with every operation's code.

    An `optional` update gives way: when its condition alone is refused (a mark that only moves
    forward meeting a newer one), the others are committed without it, in one more request.
    """

    def __init__(self, transaction: TransactWrite) -> None:
        self._transaction = transaction
        self._joined: list[_Joined] = []
        self._counts: dict[_Kind, int] = dict.fromkeys(_SENT_ORDER, 0)

    def __len__(self) -> int:
        return len(self._joined)

    def put(
        self,
        item: TableItem,
        condition: Condition | None = None,
        *,
        refused: Refused | None = None,
        return_old: bool = False,
    ) -> None:
        self._transaction.save(item, condition=condition, return_values=ALL_OLD if return_old else None)
        self._join("put", refused)

    def update(
        self,
        item: TableItem,
        actions: Sequence[Action],
        condition: Condition | None = None,
        *,
        refused: Refused | None = None,
        return_old: bool = False,
        optional: bool = False,
    ) -> None:
        """`optional`: left out, rather than cancelling the others, when its condition alone is
        refused. A unit with a request token takes none: the commit without it would be another
        request under the same token."""
        if optional and (condition is None or self._transaction._client_request_token is not None):
            raise ValueError("an optional update needs a condition, in a unit of work without a request token")
        self._transaction.update(
            item, list(actions), condition=condition, return_values=ALL_OLD if return_old else None
        )
        self._join("update", refused, optional=optional, item=item)

    def delete(
        self,
        item: TableItem,
        condition: Condition | None = None,
        *,
        refused: Refused | None = None,
        any_version: bool = False,
    ) -> None:
        """Delete `item` (if `condition` holds); a versioned item only at its version as loaded,
        unless `any_version` (an item going with another, whatever was written to it meanwhile)."""
        self._transaction.delete(item, condition=condition, add_version_condition=not any_version)
        self._join("delete", refused)

    def check(
        self, model: type[TableItem], pk: str, sk: str, condition: Condition, *, refused: Refused | None = None
    ) -> None:
        """A condition on an item the transaction does not write."""
        self._transaction.condition_check(model, pk, sk, condition=condition)
        self._join("check", refused)

    def _join(
        self, kind: _Kind, refused: Refused | None, *, optional: bool = False, item: TableItem | None = None
    ) -> None:
        self._joined.append(_Joined(kind, self._counts[kind], refused, optional, item))
        self._counts[kind] += 1

    def _leave_out(self, dropped: list[_Joined]) -> None:
        """Take the `dropped` operations out of the transaction before it is sent again."""
        for joined in sorted(dropped, key=lambda one: one.index, reverse=True):
            self._transaction._update_items.pop(joined.index)
            models = self._transaction._models_for_version_attribute_update
            models[:] = [model for model in models if model is not joined.item]
        kept = [joined for joined in self._joined if joined not in dropped]
        self._joined, self._counts = [], dict.fromkeys(_SENT_ORDER, 0)
        for joined in kept:
            self._join(joined.kind, joined.refused, optional=joined.optional, item=joined.item)

    def commit(self, *, conflict_attempts: int = 1, conflict_pause_seconds: float = 0.02) -> None:
        """Write every joined operation or none. A cancellation by concurrent transactions on the
        same items (nothing was written) is tried again, up to `conflict_attempts` times in all,
        after a pause growing with each attempt and jittered (writers that collided on a hot item
        must not collide again in step); every attempt carries the unit's request token, if any."""
        if not self._joined:
            return
        attempt = 1
        while True:
            try:
                self._transaction._commit()
            except TransactWriteError as error:
                reasons = self._reasons(error)
                if reasons is None:
                    raise
                codes = {reason.code for reason in reasons if reason is not None}
                if CONFLICT in codes and CONDITION_FAILED not in codes and attempt < conflict_attempts:
                    time.sleep(conflict_pause_seconds * attempt * random.uniform(0.5, 1.5))
                    attempt += 1
                    continue
                given_way = self._given_way(reasons)
                if given_way:
                    self._leave_out(given_way)
                    if not self._joined:
                        return
                    continue
                self._raise_refusal(reasons, error)
            return

    def _reasons(self, error: TransactWriteError) -> list[CancellationReason | None] | None:
        """The cancellation reason of each joined operation, in join order (None for an operation
        that was no reason); None when the error is not a cancellation."""
        if error.cause_response_code != "TransactionCanceledException":
            return None
        sent = cancellation_reasons(error)
        if len(sent) != len(self._joined):
            return [None] * len(self._joined)  # reasons not reported: none can be attributed
        offsets: dict[_Kind, int] = {}
        position = 0
        for kind in _SENT_ORDER:
            offsets[kind] = position
            position += self._counts[kind]
        return [sent[offsets[joined.kind] + joined.index] for joined in self._joined]

    def _given_way(self, reasons: list[CancellationReason | None]) -> list[_Joined]:
        """The optional operations to leave out when theirs are the only conditions refused
        (nothing else cancelled the transaction); else none."""
        refused = [(joined, reason) for joined, reason in zip(self._joined, reasons, strict=True) if reason is not None]
        others = [reason for _, reason in refused if reason.code != "None"]
        optional = [joined for joined, reason in refused if joined.optional and reason.code == CONDITION_FAILED]
        return optional if optional and len(optional) == len(others) else []

    def _raise_refusal(self, reasons: list[CancellationReason | None], error: TransactWriteError) -> None:
        for joined, reason in zip(self._joined, reasons, strict=True):
            if reason is not None and reason.code == CONDITION_FAILED and joined.refused is not None:
                refused = joined.refused
                refusal = Refusal(reason.code, reason.raw_item)
                raise (refused if isinstance(refused, BaseException) else refused(refusal)) from error
        raise TransactionCancelled([reason.code if reason else "None" for reason in reasons]) from error


def cancellation_reasons(error: TransactWriteError) -> list[CancellationReason | None]:
    """The reasons of a cancelled transaction, one per operation as sent (None: not a reason).
    Some endpoints (moto) put them only in the message: "... [None, ConditionalCheckFailed]"."""
    if error.cancellation_reasons:
        return list(error.cancellation_reasons)
    message = error.cause_response_message or ""
    inside = message[message.find("[") + 1 : message.rfind("]")] if "[" in message else ""
    codes = [part.strip() for part in inside.split(",") if part.strip()]
    return [None if code == "None" else CancellationReason(code=code) for code in codes]


def unit_of_work(*, request_token: str | None = None) -> UnitOfWork:
    """A new unit of work on the bound table, sending through the bound client. With
    `request_token` (DynamoDB's ClientRequestToken, at most 36 characters) a commit that is sent
    again within 10 minutes after it landed lands nothing more and answers as the first did."""
    return UnitOfWork(TransactWrite(connection=_bound().connection, client_request_token=request_token))

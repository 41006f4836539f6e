"""The single DynamoDB table: key layout, (de)serialisation of records and error translation.

Key layout (pk / sk), one item per entity, looked up by id; tenant listings go through GSI1
(`gsi1pk = TENANT#<tag>#<TYPE>`) and other relations through GSI2. Every item carries
`tenant`; a read of another tenant's item answers NotFound.

Numbers are stored as DynamoDB numbers and read back as `Decimal`, converted to `int` by the
record models, so 64-bit versions stay exact (never through a float).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from botocore.exceptions import ClientError
from pydantic import BaseModel

from switchboard.core.errors import NotFound

META = "#META"
ModelT = TypeVar("ModelT", bound=BaseModel)


def entity_key(kind: str, identifier: str) -> dict[str, str]:
    return {"pk": f"{kind}#{identifier}", "sk": META}


def tenant_index(tenant: str, kind: str) -> str:
    return f"TENANT#{tenant}#{kind}"


def to_item(record: BaseModel, key: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    """Record -> item: datetimes as ISO strings, None left out (absent is not null)."""
    item = {name: _storable(value) for name, value in record.model_dump(exclude_none=True).items()}
    item.update(key)
    item.update({name: value for name, value in extra.items() if value is not None})
    return item


def from_item(model: type[ModelT], item: Mapping[str, Any]) -> ModelT:
    return model.model_validate({name: _plain(value) for name, value in item.items()})


def _storable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, (set, frozenset)):
        return sorted(_storable(element) for element in value)
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


def is_condition_failure(error: ClientError) -> bool:
    code: str | None = error.response.get("Error", {}).get("Code")
    return code == "ConditionalCheckFailedException"


def cancellation_codes(error: ClientError) -> list[str]:
    """Per-item reasons of a cancelled transaction ('None', 'ConditionalCheckFailed', ...)."""
    if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return []
    reasons = error.response.get("CancellationReasons") or []
    if reasons:
        return [reason.get("Code", "None") for reason in reasons]
    # Some endpoints (moto) only put the reasons in the message: "[None, ConditionalCheckFailed]".
    message = error.response.get("Error", {}).get("Message", "")
    inside = message[message.find("[") + 1 : message.rfind("]")] if "[" in message else ""
    return [part.strip() for part in inside.split(",") if part.strip()]


def owned_or_missing(item: Mapping[str, Any] | None, tenant: str, what: str) -> Mapping[str, Any]:
    """The item if it belongs to `tenant`; another tenant's item is indistinguishable from none."""
    if not item or item.get("tenant") != tenant:
        raise NotFound(f"{what} not found")
    return item


def query_all(table: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
    while True:
        page = table.query(**kwargs)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

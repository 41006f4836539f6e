"""The operations of our OpenAPI document as schemathesis reads them."""

from __future__ import annotations

from typing import Any

from schemathesis.core.result import Err
from schemathesis.schemas import APIOperation, BaseSchema


def operations_of(schema: BaseSchema) -> list[APIOperation[Any, Any, Any, Any]]:
    """Every operation; one the document declares wrongly fails here with schemathesis's own
    account of it (an unchecked `result.ok()` would raise an AttributeError naming nothing)."""
    operations = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        operations.append(result.ok())
    return operations

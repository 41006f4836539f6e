"""Reads template.yaml so the local stack and the tests build exactly what AWS would.

Intrinsic functions are kept as small tagged values; only what the local stack needs is
resolved (logical ids of tables and queues become local names).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


@dataclass(frozen=True)
class Intrinsic:
    name: str
    value: Any


class _Loader(yaml.SafeLoader):
    pass


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Intrinsic:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return Intrinsic(suffix, value)


_Loader.add_multi_constructor("!", _intrinsic)


@cache
def load(path: Path = TEMPLATE) -> dict[str, Any]:
    with path.open() as handle:
        document: dict[str, Any] = yaml.load(handle, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    return document


def resources(kind: str, path: Path = TEMPLATE) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource.get("Properties") or {}
        for logical_id, resource in load(path)["Resources"].items()
        if resource["Type"] == kind
    }


def table_create_kwargs(properties: dict[str, Any], table_name: str) -> dict[str, Any]:
    """`CreateTable` arguments from an AWS::DynamoDB::Table's own properties."""
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "KeySchema": properties["KeySchema"],
        "BillingMode": properties.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if properties.get("GlobalSecondaryIndexes"):
        kwargs["GlobalSecondaryIndexes"] = properties["GlobalSecondaryIndexes"]
    return kwargs


@dataclass
class LocalNames:
    """Local names for the template's tables, queues and bus (the stack name is a prefix)."""

    prefix: str = "switchboard"
    tables: dict[str, str] = field(default_factory=dict)

    def table(self, logical_id: str) -> str:
        return f"{self.prefix}-{logical_id}"

    def queue(self, logical_id: str) -> str:
        return f"{self.prefix}-{logical_id}"


def create_tables(dynamodb_client: Any, names: LocalNames, path: Path = TEMPLATE) -> dict[str, str]:
    """Create every table of the template; returns logical id -> table name. TTL enabled too."""
    created = {}
    for logical_id, properties in resources("AWS::DynamoDB::Table", path).items():
        name = names.table(logical_id)
        dynamodb_client.create_table(**table_create_kwargs(properties, name))
        ttl = properties.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb_client.update_time_to_live(
                TableName=name, TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True}
            )
        created[logical_id] = name
    return created

"""What every capability shares: the AWS session and clients, the table, secrets and the bus."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3

from switchboard.core.components import component
from switchboard.core.settings import get_settings

if TYPE_CHECKING:
    from switchboard.core.bus import EventPublisher
    from switchboard.core.secrets import SecretStore


@component
def session() -> boto3.session.Session:
    """AWS_REGION, else what boto3 finds (AWS_DEFAULT_REGION, the profile's region)."""
    return boto3.session.Session(region_name=get_settings().aws_region)


@component
def table() -> Any:
    """The main table (a boto3 resource); building it binds the item models (core/store.py) to it
    through the session's low-level client."""
    from switchboard.core.store import bind

    name = get_settings().table_name
    bind(name, client("dynamodb"))
    return session().resource("dynamodb").Table(name)


@component
def client(service: str) -> Any:
    return session().client(service)


@component
def secrets() -> SecretStore:
    from switchboard.core.secrets import SecretStore

    settings = get_settings()
    return SecretStore(client("ssm"), settings.secrets_prefix, settings.secret_cache_seconds)


@component
def event_publisher() -> EventPublisher:
    from switchboard.core.bus import EventPublisher

    return EventPublisher(client("events"), get_settings().event_bus_name)

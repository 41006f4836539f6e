"""What every capability shares: the table, secrets and the bus (the session and clients are the
components' own: `Components.session`, `Components.client`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from switchboard.bootstrap.components import Components, component

if TYPE_CHECKING:
    from switchboard.core.bus import EventPublisher
    from switchboard.core.secrets import SecretStore


@component
def table(c: Components) -> Any:
    """The main table (a boto3 resource); building it binds the item models (core/store.py) to it
    through the session's low-level client."""
    from switchboard.core.store import bind

    name = c.settings.table_name
    bind(name, c.client("dynamodb"))
    return c.session.resource("dynamodb").Table(name)


@component
def secrets(c: Components) -> SecretStore:
    from switchboard.core.secrets import SecretStore

    settings = c.settings
    return SecretStore(c.client("ssm"), settings.secrets_prefix, settings.secret_cache_seconds)


@component
def event_publisher(c: Components) -> EventPublisher:
    from switchboard.core.bus import EventPublisher

    return EventPublisher(c.client("events"), c.settings.event_bus_name)

"""Builds the usage recorder and the count of incoming messages once per container."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import table

if TYPE_CHECKING:
    from switchboard.usage.service import IncomingUsage, OutgoingUsage, UsageRecorder


@component
def usage_recorder(c: Components) -> UsageRecorder:
    """Replies call `usage_recorder(c).record_outgoing(instance, when, message_id)`; the API reads months."""
    from switchboard.usage.dynamo import UsageRepository
    from switchboard.usage.service import UsageRecorder

    return UsageRecorder(UsageRepository(table(c)))


@component
def incoming_usage(c: Components) -> IncomingUsage:
    """The webhook ingest counts each `message` event in the transaction that accepts it."""
    from switchboard.usage.dynamo import UsageRepository
    from switchboard.usage.service import IncomingUsage

    return IncomingUsage(UsageRepository(table(c)))


@component
def outgoing_usage(c: Components) -> OutgoingUsage:
    """The send worker counts each message in the transaction that records it SENT."""
    from switchboard.usage.dynamo import UsageRepository
    from switchboard.usage.service import OutgoingUsage

    return OutgoingUsage(UsageRepository(table(c)))

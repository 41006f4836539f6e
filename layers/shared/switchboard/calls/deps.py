"""What the calls routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.calls.dialing import DialService
    from switchboard.calls.media import MediaService
    from switchboard.calls.on_demand import ReconcileOnDemand
    from switchboard.calls.service import CallService


def call_service() -> CallService:
    """Call records and their lifecycle."""
    raise NotProvided(call_service)


def dialing_service() -> DialService:
    """Outgoing calls: slots and dialing."""
    raise NotProvided(dialing_service)


def media_service() -> MediaService:
    """Media attachment of a call."""
    raise NotProvided(media_service)


def reconcile_on_demand() -> ReconcileOnDemand:
    """The reconcile route's reconciliation, one per connection per window."""
    raise NotProvided(reconcile_on_demand)

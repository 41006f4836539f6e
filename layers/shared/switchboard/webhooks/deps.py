"""What the webhooks routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.webhooks.ignored import IgnoredEvents
    from switchboard.webhooks.service import IngestService


def ingest_service() -> IngestService:
    """Provider webhook ingest."""
    raise NotProvided(ingest_service)


def ignored_events() -> IgnoredEvents:
    """The provider events each instance's provider sent that were not applied."""
    raise NotProvided(ignored_events)

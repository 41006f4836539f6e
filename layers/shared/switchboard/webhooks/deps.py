"""What the webhooks routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.webhooks.service import IngestService


def ingest_service() -> IngestService:
    """Provider webhook ingest."""
    raise NotProvided(ingest_service)

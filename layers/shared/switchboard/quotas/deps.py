"""What the quotas routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.quotas.service import QuotaService


def quota_service() -> QuotaService:
    """Each tenant's quotas."""
    raise NotProvided(quota_service)

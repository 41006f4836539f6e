"""What the pool routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.pool.service import PoolService


def pool_service() -> PoolService:
    """The number pool of an API key."""
    raise NotProvided(pool_service)

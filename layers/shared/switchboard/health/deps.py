"""What the health routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.health.pacing import PacingLimits
    from switchboard.health.service import HealthWatch


def health_watch() -> HealthWatch:
    """The ban watch of each instance."""
    raise NotProvided(health_watch)


def pacing_defaults() -> PacingLimits:
    """The deployment's pacing, which a number follows where its own is silent."""
    raise NotProvided(pacing_defaults)

"""What the usage routes take through `Depends`; the composition root provides each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.api.provided import NotProvided

if TYPE_CHECKING:
    from switchboard.usage.service import UsageRecorder


def usage_recorder() -> UsageRecorder:
    """Messages in and out per instance and owner tag."""
    raise NotProvided(usage_recorder)

"""Query parameters the listing routes share."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from switchboard.core.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Sequence

StatusT = TypeVar("StatusT", bound=str)


def statuses(value: str | None, known: Sequence[StatusT]) -> tuple[StatusT, ...] | None:
    """A `status` parameter: one status or several, comma separated, in any letter case (None when
    absent), spelled and ordered as `known`.

    Raises InvalidInput (`invalid_status`) for a status `known` lacks, or for none at all."""
    if value is None:
        return None
    wanted = {part.strip().lower(): part.strip() for part in value.split(",") if part.strip()}
    spelled = {status.lower(): status for status in known}
    unknown = [part for lowered, part in wanted.items() if lowered not in spelled]
    if unknown or not wanted:
        raise InvalidInput(f"unknown status: {', '.join(unknown) or value!r}", code="invalid_status")
    return tuple(status for lowered, status in spelled.items() if lowered in wanted)

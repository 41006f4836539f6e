"""How long a revoked or demoted key may still pass a warm authorizer of the local stack."""

from __future__ import annotations

import time
from collections.abc import Callable

from switchboard.core.settings import Settings

# The authorizer keeps a found key this long per container (catalog/authentication.py), plus a
# margin for the request itself.
KEY_CACHE_BOUND_SECONDS = float(Settings.model_fields["key_cache_seconds"].default) + 1.0


def status_within(request: Callable[[], int], expected: int, seconds: float = KEY_CACHE_BOUND_SECONDS) -> int:
    """The status `request` answers once it answers `expected`, or its last status after `seconds`."""
    deadline = time.monotonic() + seconds
    while (status := request()) != expected and time.monotonic() < deadline:
        time.sleep(0.25)
    return status

"""The services routes take through `Depends`, declared by each capability and provided by the
composition root.

A capability's `deps.py` declares one function per service its routes take, which only raises
`NotProvided`: the function's profile in `switchboard.bootstrap` puts the real factory in the
resolver's `dependency_overrides`, and a test may put its own there. So a route never names the
module that builds its services, and a resolver nobody provided fails loudly on the first request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class NotProvided(RuntimeError):
    """A route's dependency the resolver's `dependency_overrides` has no provider for."""

    def __init__(self, dependency: Callable[..., Any]) -> None:
        name = f"{dependency.__module__}.{dependency.__qualname__}"
        super().__init__(f"{name} is not provided by the composition root (switchboard.bootstrap)")

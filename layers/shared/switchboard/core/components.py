"""Adapters and services are built once per container, on first use, by each capability's wiring.

`reset()` forgets every one of them and the settings: tests call it after changing the
environment. `AWS_ENDPOINT_URL` (read by boto3 itself) points every client at the local stack
or moto.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from switchboard.core.settings import get_settings

T = TypeVar("T")
_built: list[Any] = []


def component(factory: Callable[..., T]) -> Callable[..., T]:
    """Build once per container; `reset()` forgets it."""
    cached = cache(factory)
    _built.append(cached)
    return cached


def reset() -> None:
    """Forget every built adapter and the settings (tests, after changing the environment)."""
    get_settings.cache_clear()
    for built in _built:
        built.cache_clear()

"""Provider adapters: one `ProviderClient` per provider kind (see `switchboard.providers.base`).

Build them once per container (in `bootstrap`) with `provider_client_for(kind, local_mode=...)`;
each client pools its connections and serves every target of its kind.
"""

from __future__ import annotations

from typing import Literal

import httpx

from switchboard.providers.base import ProviderClient
from switchboard.providers.evolution import EvolutionClient
from switchboard.providers.http import DEFAULT_READ_TIMEOUT_SECONDS
from switchboard.providers.meta import MetaCloudClient
from switchboard.providers.wuzapi import WuzapiClient

ProviderKind = Literal["wuzapi", "evolution", "meta"]


def provider_client_for(
    kind: ProviderKind,
    *,
    local_mode: bool = False,
    read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
    transport: httpx.BaseTransport | None = None,
) -> ProviderClient:
    """The client for `kind` (a `ProviderTarget.kind`). `local_mode` allows http to loopback only."""
    if kind == "wuzapi":
        return WuzapiClient(local_mode=local_mode, read_timeout=read_timeout, transport=transport)
    if kind == "evolution":
        return EvolutionClient(local_mode=local_mode, read_timeout=read_timeout, transport=transport)
    if kind == "meta":
        return MetaCloudClient(local_mode=local_mode, read_timeout=read_timeout, transport=transport)
    raise ValueError(f"unknown provider kind: {kind!r}")


__all__ = ["EvolutionClient", "MetaCloudClient", "ProviderKind", "WuzapiClient", "provider_client_for"]

"""Provider clients: one `ProviderClient` per provider kind (see `switchboard.providers.base`).

The composition root builds them once per container with `provider_client_for(kind, ...)`;
each client pools its connections and serves every target of its kind.
"""

from __future__ import annotations

import httpx

from switchboard.providers.base import ProviderClient
from switchboard.providers.http import DEFAULT_READ_TIMEOUT_SECONDS
from switchboard.providers.kinds import spec_for


def provider_client_for(
    kind: str,
    *,
    local_mode: bool = False,
    read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
    transport: httpx.BaseTransport | None = None,
    api_version: str | None = None,
) -> ProviderClient:
    """The client for `kind` (a `ProviderTarget.kind`). `local_mode` allows http to loopback only;
    `api_version` is the provider API's version where the kind's API is versioned (Meta's)."""
    return spec_for(kind).client(
        local_mode=local_mode, read_timeout=read_timeout, transport=transport, api_version=api_version
    )

"""The HTTP client for client webhooks: explicit timeouts, no redirects, no proxy from the environment."""

from __future__ import annotations

import httpx

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0


class HttpxPoster:
    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self._client = httpx.Client(
            timeout=httpx.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
            follow_redirects=False,
            trust_env=False,
            transport=transport,
        )

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """The answer's status code (a redirect is not followed: it counts as a failure)."""
        return self._client.post(url, content=body, headers=headers).status_code

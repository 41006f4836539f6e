"""The HTTP client for client webhooks: explicit timeouts, no redirects, no proxy from the environment.

The host is resolved once per delivery and the connection dials an address the outbound policy
checked (`core/outbound.py`), so a webhook URL cannot be re-pointed at an internal address
between the check and the call.
"""

from __future__ import annotations

import httpx

from switchboard.core.outbound import PinnedTransport
from switchboard.core.urls import OutboundPolicy

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0
MAX_ANSWER_BYTES = 64 * 1024


class HttpxPoster:
    def __init__(self, *, local_mode: bool = False, transport: httpx.BaseTransport | None = None) -> None:
        self._client = httpx.Client(
            timeout=httpx.Timeout(READ_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
            follow_redirects=False,
            trust_env=False,
            transport=transport or PinnedTransport(OutboundPolicy.configured(local_mode=local_mode)),
        )

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """The answer's status code (a redirect is not followed: it counts as a failure).

        Raises InvalidInput when the URL's host resolves to an address the policy refuses.
        """
        # Only the status counts. A short body is read to its end, so the connection goes back to
        # the pool; past `MAX_ANSWER_BYTES` the rest is never read (the connection is closed): a
        # receiver answering an endless body holds the deliverer no longer than that.
        with self._client.stream("POST", url, content=body, headers=headers) as response:
            read = 0
            for chunk in response.iter_raw():
                read += len(chunk)
                if read > MAX_ANSWER_BYTES:
                    break
            return response.status_code

"""The HTTP plumbing every provider adapter shares: outbound URL policy, timeouts, error mapping.

Each request's host is resolved once and the connection dials an address the outbound policy
checked (`core/outbound.py`); a refused URL or address raises InvalidInput before anything is sent.

Errors name the provider, the method and the route template (`wuzapi POST /call/dial`), never
the host, the query or a token. The mapping:

- connection refused, connect timeout, no pooled connection: `ProviderUnavailable` (not sent);
- read/write timeout, connection dropped after sending: `ProviderTimeout` (outcome unknown);
- 2xx whose body cannot be read, or is over its bound: `ProviderTimeout` (it may have been applied);
- 5xx and 429: `ProviderUnavailable`; any other non-2xx: `ProviderRejected`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from switchboard.core.api.body import read_answer
from switchboard.core.errors import ProviderError, ProviderRejected, ProviderTimeout, ProviderUnavailable
from switchboard.core.outbound import MAX_ANSWER_BYTES, UNCOMPRESSED, PinnedTransport, read_bounded, request_bounded
from switchboard.core.urls import OutboundPolicy, check_outbound_url

CONNECT_TIMEOUT_SECONDS = 3.0
DEFAULT_READ_TIMEOUT_SECONDS = 10.0
# The whole of a file's download (`get_bounded`), within the forwarder's 29 s.
DOWNLOAD_SECONDS = 20.0

Answer = TypeVar("Answer", bound=BaseModel)
_ERROR_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)


def base64_answer_bytes(file_bytes: int) -> int:
    """The bound of an answer that carries a file of `file_bytes` in base64: the file's base64
    beside an ordinary answer's room."""
    return file_bytes * 4 // 3 + 4 + MAX_ANSWER_BYTES


def path_segment(value: str) -> str:
    """Quote a value placed in a URL path so it cannot add segments or a query."""
    return quote(value, safe="")


class ProviderHttp:
    """One pooled httpx client for one provider kind; no redirects, no proxy from the environment.

    `transport` replaces the pinned one (tests); the URL is still checked before each request.
    `clock`: the monotonic time a download's deadline is kept by.
    """

    def __init__(
        self,
        provider: str,
        *,
        local_mode: bool,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._provider = provider
        self._clock = clock
        self._policy = OutboundPolicy.configured(local_mode=local_mode)
        self._client = httpx.Client(
            timeout=httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT_SECONDS),
            follow_redirects=False,
            trust_env=False,
            transport=transport or PinnedTransport(self._policy),
        )

    def close(self) -> None:
        self._client.close()

    def request(
        self,
        method: str,
        base_url: str,
        path: str,
        *,
        route: str,
        headers: dict[str, str],
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        files: dict[str, Any] | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> httpx.Response:
        """Send one request to `base_url + path` (with the query `params`); `route` is the path
        template used in errors, which never show the query. The answer is read no further than
        `max_answer_bytes` (a longer one, or one sent compressed, is a `ProviderTimeout`).

        Raises InvalidInput when the URL breaks the outbound policy, and the transport errors
        above; the caller decides what a non-2xx answer means. `files`: a multipart body
        (httpx's `files`) instead of JSON.
        """
        # What the URL itself shows; the transport resolves the host and checks its addresses.
        url = check_outbound_url(base_url.rstrip("/") + path, resolve=False, policy=self._policy)
        label = self.label(method, route)
        content: dict[str, Any] = {"files": files} if files is not None else {"json": body}
        try:
            return request_bounded(
                self._client, method, url, max_bytes=max_answer_bytes, headers=headers, params=params, **content
            )
        except _NOT_SENT as exc:
            raise ProviderUnavailable(f"{label}: could not connect") from exc
        except httpx.TransportError as exc:
            raise ProviderTimeout(f"{label}: no answer ({type(exc).__name__})") from exc
        except httpx.DecodingError as exc:  # over its bound, or compressed: sent, and its answer unread
            raise ProviderTimeout(f"{label}: unreadable answer, the outcome is unknown") from exc

    def get_bounded(
        self, base_url: str, path: str, *, route: str, headers: dict[str, str], max_bytes: int
    ) -> tuple[httpx.Response, bool]:
        """`GET base_url + path` read no further than `max_bytes` of its body and for no longer than
        `DOWNLOAD_SECONDS`, as `request` checks and maps errors (a body still arriving then is a
        `ProviderTimeout`): the answer holding what was read, and whether the body went on past
        `max_bytes` (the rest is never read, so an endless body costs no more than the bound)."""
        url = check_outbound_url(base_url.rstrip("/") + path, resolve=False, policy=self._policy)
        label = self.label("GET", route)
        deadline = self._clock() + DOWNLOAD_SECONDS
        try:
            with self._client.stream("GET", url, headers=headers | UNCOMPRESSED) as streamed:
                data, over = read_bounded(streamed, max_bytes, deadline, self._clock)
                # The bytes as read (already decoded): the answer keeps no encoding or length of the wire's.
                kept = {"content-type": streamed.headers.get("content-type", "application/octet-stream")}
                answer = httpx.Response(streamed.status_code, headers=kept, content=data)
        except _NOT_SENT as exc:
            raise ProviderUnavailable(f"{label}: could not connect") from exc
        except httpx.TransportError as exc:
            raise ProviderTimeout(f"{label}: no answer ({type(exc).__name__})") from exc
        except httpx.DecodingError as exc:
            raise ProviderRejected(f"{label}: the file came compressed though asked as stored") from exc
        return answer, over

    def label(self, method: str, route: str) -> str:
        return f"{self._provider} {method} {route}"

    def answer(self, response: httpx.Response, model: type[Answer], label: str) -> Answer:
        """Validate a 2xx body; any other status becomes the mapped error."""
        if not response.is_success:
            raise self.error_for(response, label)
        try:
            return model.model_validate(read_answer(response.content))
        except (ValueError, ValidationError) as exc:
            raise ProviderTimeout(f"{label}: unreadable answer, the outcome is unknown") from exc

    def expect_success(self, response: httpx.Response, label: str) -> None:
        if not response.is_success:
            raise self.error_for(response, label)

    @staticmethod
    def error_for(response: httpx.Response, label: str) -> ProviderError:
        status = response.status_code
        code = error_code(response)
        suffix = f" ({status} {code})" if code else f" ({status})"
        if status >= 500 or status == 429:
            return ProviderUnavailable(f"{label}: provider unavailable{suffix}", status=status, provider_code=code)
        if status in (401, 403):
            return ProviderRejected(f"{label}: credentials refused{suffix}", status=status, provider_code=code)
        return ProviderRejected(f"{label}: request refused{suffix}", status=status, provider_code=code)


def error_code(response: httpx.Response) -> str | None:
    """The provider's short machine code (`{"error": "line_busy"}` or Meta's `{"error": {"code": 131}}`).

    Only a short identifier is kept, so no free text from the provider reaches our messages.
    """
    try:
        payload = read_answer(response.content)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        error = error.get("code")
    code = str(error) if isinstance(error, str | int) and not isinstance(error, bool) else None
    return code if code is not None and _ERROR_CODE.match(code) else None

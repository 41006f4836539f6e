"""The HTTP plumbing every provider adapter shares: outbound URL policy, timeouts, error mapping.

Each request's host is resolved once and the connection dials an address the outbound policy
checked (`core/outbound.py`); a refused URL or address raises InvalidInput before anything is sent.

Errors name the provider, the method and the route template (`wuzapi POST /call/dial`), never
the host, the query or a token. The mapping:

- connection refused, connect timeout, no pooled connection: `ProviderUnavailable` (not sent);
- read/write timeout, connection dropped after sending: `ProviderTimeout` (outcome unknown);
- 2xx whose body cannot be read, or is over its bound: `ProviderTimeout` (it may have been applied);
- 5xx and 429: `ProviderUnavailable`; any other non-2xx: `ProviderRejected`.

A request may carry its caller's deadline (`core.clock.Deadline`: the forwarder's, what is left of
its invocation): it is not sent once the deadline passed, each of its waits (connecting, each read)
is cut to the time left, and its answer's body stops between two chunks once the deadline passes,
however steadily a slow server sends it. It then raises `DeadlinePassed`.

An answer is asked for uncompressed and read no further than its bound (`MAX_ANSWER_BYTES`, or a
file's base64 where the route carries one): provider servers are configured by tenants, and an
endless or inflating answer read whole would exhaust a function that serves every tenant.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from switchboard.core.api.body import read_answer
from switchboard.core.clock import Deadline
from switchboard.core.errors import (
    DeadlinePassed,
    ProviderError,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
)
from switchboard.core.outbound import MAX_ANSWER_BYTES, PinnedTransport, request_bounded
from switchboard.core.urls import OutboundPolicy, check_outbound_url

CONNECT_TIMEOUT_SECONDS = 3.0
DEFAULT_READ_TIMEOUT_SECONDS = 10.0

Answer = TypeVar("Answer", bound=BaseModel)
_ERROR_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
_DEADLINE = "switchboard.deadline"  # the request extension a deadline travels in to the transport


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
    """

    def __init__(
        self,
        provider: str,
        *,
        local_mode: bool,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._provider = provider
        self._policy = OutboundPolicy.configured(local_mode=local_mode)
        self._client = httpx.Client(
            timeout=httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT_SECONDS),
            follow_redirects=False,
            trust_env=False,
            transport=_DeadlineTransport(transport or PinnedTransport(self._policy)),
        )
        self._read_timeout = read_timeout

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
        deadline: Deadline | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> httpx.Response:
        """Send one request to `base_url + path` (with the query `params`); `route` is the path
        template used in errors, which never show the query.

        Raises InvalidInput when the URL breaks the outbound policy, and the transport errors
        above; the caller decides what a non-2xx answer means. `files`: a multipart body
        (httpx's `files`) instead of JSON. `deadline`: the request stops there (`DeadlinePassed`).
        An answer over `max_answer_bytes`, or sent compressed, is a `ProviderTimeout`.
        """
        response, over = self._exchange(
            method,
            base_url.rstrip("/") + path,
            route=route,
            headers=headers,
            max_bytes=max_answer_bytes,
            deadline=deadline,
            json=body,
            params=params,
            files=files,
        )
        if over:
            raise ProviderTimeout(f"{self.label(method, route)}: unreadable answer, the outcome is unknown")
        return response

    def get_bounded(
        self,
        base_url: str,
        path: str,
        *,
        route: str,
        headers: dict[str, str],
        max_bytes: int,
        deadline: Deadline | None = None,
    ) -> tuple[httpx.Response, bool]:
        """`GET base_url + path` as `request` sends it, its body read no further than `max_bytes`:
        the answer holding what was read, and whether the body went on past `max_bytes` (the rest
        is never read, so an endless body costs no more than the bound)."""
        return self._exchange(
            "GET", base_url.rstrip("/") + path, route=route, headers=headers, max_bytes=max_bytes, deadline=deadline
        )

    def _exchange(
        self,
        method: str,
        target: str,
        *,
        route: str,
        headers: dict[str, str],
        max_bytes: int,
        deadline: Deadline | None,
        **content: Any,
    ) -> tuple[httpx.Response, bool]:
        # What the URL itself shows; the transport resolves the host and checks its addresses.
        url = check_outbound_url(target, resolve=False, policy=self._policy)
        label = self.label(method, route)
        if deadline is not None:
            left = deadline.left()
            if left <= 0:
                raise DeadlinePassed(f"{label}: not sent, its deadline passed")
            waits = min(self._read_timeout, left)
            content["timeout"] = httpx.Timeout(waits, connect=min(CONNECT_TIMEOUT_SECONDS, left))
            content["extensions"] = {_DEADLINE: deadline}
        if content.get("files") is not None:
            content.pop("json", None)
        else:
            content.pop("files", None)
        try:
            return request_bounded(self._client, method, url, max_bytes=max_bytes, headers=headers, **content)
        except httpx.TransportError as exc:
            if deadline is not None and deadline.passed():
                raise DeadlinePassed(f"{label}: stopped at its deadline ({type(exc).__name__})") from exc
            if isinstance(exc, _NOT_SENT):
                raise ProviderUnavailable(f"{label}: could not connect") from exc
            raise ProviderTimeout(f"{label}: no answer ({type(exc).__name__})") from exc
        except httpx.DecodingError as exc:  # sent compressed though asked as it is: unread
            raise ProviderTimeout(f"{label}: unreadable answer, the outcome is unknown") from exc

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


class _DeadlineTransport(httpx.BaseTransport):
    """`inner`, whose answers to a request with a deadline stop between two chunks of their body
    once it passes (a read timeout, as a server too slow to answer in time)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = request.extensions.pop(_DEADLINE, None)
        response = self._inner.handle_request(request)
        if not isinstance(deadline, Deadline) or not isinstance(response.stream, httpx.SyncByteStream):
            return response
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_DeadlineStream(response.stream, deadline, request),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._inner.close()


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, deadline: Deadline, request: httpx.Request) -> None:
        self._inner = inner
        self._deadline = deadline
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if self._deadline.passed():
                raise httpx.ReadTimeout("the caller's deadline passed while the body was read", request=self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()

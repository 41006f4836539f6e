"""Outbound HTTP that connects only to the addresses the policy checked.

Checking a URL and then letting httpx resolve its host again leaves a window: a name can
answer a public address to the check and `127.0.0.1` to the connection (DNS rebinding). Here
each request resolves its host once, checks every address (`core/urls.py`), and the
connection dials one of those very addresses. The URL is not rewritten, so the Host header,
TLS SNI and certificate verification still use the host name.

httpx has no resolver hook; httpcore's connection pool takes a network backend whose
`connect_tcp(host, port)` opens each new connection. `PinnedTransport` is httpx's own
transport with that pool built on `_PinnedBackend`, which dials the checked addresses the
request in progress left in a context variable (httpcore's sync pool connects in the
requesting thread) and refuses to connect anywhere without them.
"""

from __future__ import annotations

import ssl
import typing
from contextvars import ContextVar
from dataclasses import dataclass

import httpcore
import httpx

from switchboard.core.clock import Deadline
from switchboard.core.urls import (
    DEFAULT_PORTS,
    IPAddress,
    OutboundPolicy,
    Resolver,
    host_addresses,
    parse_outbound_url,
    resolve_host,
)

DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)


@dataclass(frozen=True)
class _Checked:
    host: str
    port: int
    addresses: tuple[IPAddress, ...]


_CHECKED: ContextVar[_Checked | None] = ContextVar("switchboard_outbound_checked", default=None)


# A body is asked for as it is: httpx would otherwise ask for it compressed and inflate each chunk
# whole before any bound is checked (one gzip chunk of 64 KB inflates to 64 MB, and layered
# encodings multiply that).
UNCOMPRESSED = {"accept-encoding": "identity"}
# The most an answer of a server's API may hold (a provider's): their answers are short JSON, a
# file in base64 aside (whose routes give their own bound).
MAX_ANSWER_BYTES = 4 * 1024 * 1024


def read_bounded(response: httpx.Response, max_bytes: int, deadline: Deadline | None = None) -> tuple[bytes, bool]:
    """A streamed answer's body as it came (asked for with `UNCOMPRESSED`), read no further than
    `max_bytes` (True beside it when the body goes on past them; the rest is never read) and, with
    a `deadline`, no later than it.

    httpx's timeouts bound each read, not the whole: a body trickled a few bytes at a time would
    otherwise hold the caller as long as the sender likes. Raises httpx.ReadTimeout past the
    deadline, and httpx.DecodingError for a body sent compressed all the same (never inflated).
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise httpx.DecodingError(f"the body came {encoding}-encoded, not as asked", request=response.request)
    # A body already in memory (an answer built whole, as test transports give) is read as it is.
    chunks = iter([response.content]) if response.is_stream_consumed else response.iter_raw()
    data = bytearray()
    for chunk in chunks:
        data.extend(chunk)
        if len(data) > max_bytes:
            return bytes(data[:max_bytes]), True
        if deadline is not None and deadline.passed():
            raise httpx.ReadTimeout("the body took longer than allowed to arrive", request=response.request)
    return bytes(data), False


def request_bounded(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    max_bytes: int = MAX_ANSWER_BYTES,
    headers: dict[str, str] | None = None,
    **content: typing.Any,
) -> tuple[httpx.Response, bool]:
    """`client.request(...)` whose answer is asked for as it is (`UNCOMPRESSED`) and read no
    further than `max_bytes`: the server is one a tenant configured, and an answer read whole
    (or inflated whole) would hold or exhaust a function that serves every tenant. `content`: the
    request's `json`, `params`, `data`, `files`, `timeout`, `extensions`.

    The answer holding what was read, and whether its body went on past `max_bytes`. Raises
    httpx.DecodingError for an answer sent compressed all the same, and httpx's transport errors.
    """
    request = client.build_request(method, url, headers={**(headers or {}), **UNCOMPRESSED}, **content)
    response = client.send(request, stream=True)
    try:
        data, over = read_bounded(response, max_bytes)
    finally:
        response.close()
    # The bytes as read: no encoding or length of the wire's is kept beside them.
    kept = {name: value for name, value in response.headers.items() if name.lower() not in _WIRE_HEADERS}
    return httpx.Response(response.status_code, headers=kept, content=data, request=request), over


_WIRE_HEADERS = {"content-encoding", "content-length", "transfer-encoding"}


class PinnedTransport(httpx.HTTPTransport):
    """httpx's transport, resolving and checking once per request and dialling what it checked.

    Raises InvalidInput (from `handle_request`) when the URL or any address it resolves to
    breaks `policy`; connection failures are httpx's usual errors. No proxy from the
    environment: a proxy would connect in our place to whatever it resolves.
    """

    def __init__(
        self,
        policy: OutboundPolicy,
        *,
        resolver: Resolver = resolve_host,
        backend: httpcore.NetworkBackend | None = None,
        verify: ssl.SSLContext | bool = True,
        limits: httpx.Limits = DEFAULT_LIMITS,
    ) -> None:
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        super().__init__(verify=ssl_context, trust_env=False, limits=limits)
        self._policy = policy
        self._resolver = resolver
        # The pool httpx builds, the same way, plus the backend that dials checked addresses.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PinnedBackend(backend or httpcore.SyncBackend()),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        target = parse_outbound_url(str(url))
        # httpcore names the connection's origin by the URL's encoded (IDNA) host: the name
        # resolved here is the one the connection asks for.
        host = url.raw_host.decode("ascii")
        port = url.port or DEFAULT_PORTS[url.scheme]
        addresses = host_addresses(host, port, self._resolver)
        self._policy.check(target.scheme, addresses)
        token = _CHECKED.set(_Checked(host, port, tuple(addresses)))
        try:
            return super().handle_request(request)
        finally:
            _CHECKED.reset(token)


class _PinnedBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        checked = _CHECKED.get()
        if checked is None or (checked.host, checked.port) != (host, port):
            raise httpcore.ConnectError("no checked address for this connection")
        refused: httpcore.ConnectError | None = None
        for address in checked.addresses:
            try:
                return self._inner.connect_tcp(
                    str(address), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except httpcore.ConnectError as exc:  # refused or unreachable: the next checked address
                refused = exc
        raise refused or httpcore.ConnectError("no address to connect to")

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("outbound calls use TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)

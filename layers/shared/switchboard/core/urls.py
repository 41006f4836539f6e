"""Outbound URL policy (SSRF): checked when a URL is saved and again right before each call.

https only, to public addresses. Plain http and loopback addresses are allowed only when the
deployment runs in local mode (the local stack), and private, link-local, multicast and cloud
metadata addresses never are.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from switchboard.core.errors import InvalidInput

_METADATA_HOSTS = {"metadata.google.internal", "metadata", "instance-data"}


def check_outbound_url(url: str, *, local_mode: bool, resolve: bool = True) -> str:
    """Return `url` if it may be called, else raise InvalidInput (the message names no secret).

    With `resolve`, every address the host resolves to is checked, so a public name that
    points at a private address is refused too.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:  # a malformed IPv6 literal or an out-of-range port
        raise InvalidInput("URL is malformed") from error
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise InvalidInput("URL must be an absolute http(s) URL")
    if parts.username or parts.password:
        raise InvalidInput("URL must not carry credentials")
    host = parts.hostname.lower()
    if host in _METADATA_HOSTS:
        raise InvalidInput("URL points at a metadata service")
    addresses = _addresses(host, port or (443 if parts.scheme == "https" else 80), resolve)
    loopback = bool(addresses) and all(address.is_loopback for address in addresses)
    if parts.scheme == "http" and not (local_mode and loopback):
        raise InvalidInput("URL must use https")
    for address in addresses:
        if address.is_loopback and local_mode:
            continue
        if not address.is_global or address.is_multicast:
            raise InvalidInput("URL points at a private, loopback or link-local address")
    return url


def _addresses(host: str, port: int, resolve: bool) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    if host == "localhost":
        return [ipaddress.ip_address("127.0.0.1")]
    if not resolve:
        return []
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise InvalidInput("URL host does not resolve") from exc
    return [ipaddress.ip_address(info[4][0]) for info in infos]

"""Outbound URL policy (SSRF): what a configured URL may point at.

Checked when a URL is saved and again for every connection (`core/outbound.py` dials only the
addresses checked here). https only, to public addresses. The operator's allowlist
(`OUTBOUND_ALLOWED_CIDRS`) lets chosen networks through, such as a self-hosted provider on a
private network; plain http is allowed only to allowlisted addresses. Link-local, multicast,
unspecified and cloud metadata addresses are refused even when allowlisted.

IPv6 addresses that carry an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo) are judged by the
IPv4 address they reach, since a gateway on the way delivers the packets there.

`OutboundPolicy` decides on addresses and touches nothing; `check_outbound_url` parses the URL
and, unless told not to, resolves its host once.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from switchboard.core.errors import InvalidInput
from switchboard.core.settings import get_settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# (host, port) -> every address the host resolves to; raises InvalidInput when it does not.
Resolver = Callable[[str, int], Sequence[IPAddress]]

LOOPBACK: tuple[Network, ...] = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
DEFAULT_PORTS = {"https": 443, "http": 80}

_METADATA_HOSTS = {"metadata.google.internal", "metadata", "instance-data"}
_METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("169.254.170.2"),  # ECS task credentials
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
}
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
# Refused whatever they embed: the local-use NAT64 prefix puts the IPv4 address at a position
# only its operator knows, and IPv4-compatible and IPv4-translated addresses are deprecated
# forms that no reachable host uses, while stacks that still honour them tunnel to the IPv4.
_UNTRUSTED_EMBEDDING = {
    ipaddress.IPv6Network("64:ff9b:1::/48"): "a local-use NAT64 address",
    ipaddress.IPv6Network("::/96"): "an IPv4-compatible address",
    ipaddress.IPv6Network("::ffff:0:0:0/96"): "an IPv4-translated address",
}


@dataclass(frozen=True)
class OutboundPolicy:
    """Which addresses may be called: public ones, and those inside `allowed`."""

    allowed: tuple[Network, ...] = ()

    @classmethod
    def configured(cls, *, local_mode: bool = False) -> OutboundPolicy:
        """The operator's allowlist; `local_mode` (the local stack and tests) adds loopback."""
        allowed = tuple(get_settings().outbound_allowed_cidrs)
        return cls(allowed + LOOPBACK if local_mode else allowed)

    def is_allowlisted(self, address: IPAddress) -> bool:
        address = _unmapped(address)
        return any(address in network for network in self.allowed)

    def refusal(self, address: IPAddress) -> str | None:
        """Why `address` may not be called (naming it), or None when it may."""
        original, address = address, _unmapped(address)
        shown = str(original) if original == address else f"{original} (IPv4 {address})"
        if address in _METADATA_ADDRESSES:
            return f"URL points at {shown}, a metadata service"
        if address.is_link_local or address.is_multicast or address.is_unspecified:
            return f"URL points at {shown}, a link-local, multicast or unspecified address"
        if self.is_allowlisted(address):
            return None
        if isinstance(address, ipaddress.IPv6Address) and address != ipaddress.IPv6Address("::1"):
            for prefix, form in _UNTRUSTED_EMBEDDING.items():
                if address in prefix:
                    return f"URL points at {shown}, {form}"
            embedded = _embedded_ipv4(address)
            if embedded:
                for inner in embedded:
                    if not _is_public(inner):
                        return f"URL points at {shown}, which carries {inner}, not a public address"
                return None
        if not _is_public(address):
            return f"URL points at {shown}, a private, loopback or reserved address"
        return None

    def check(self, scheme: str, addresses: Sequence[IPAddress]) -> None:
        """Raise InvalidInput unless every address may be called over `scheme`.

        Plain http needs every address allowlisted; with no addresses (a name not resolved
        yet) that part waits for the resolution before the connection.
        """
        for address in addresses:
            reason = self.refusal(address)
            if reason:
                raise InvalidInput(reason)
        if scheme == "http" and addresses and not all(self.is_allowlisted(address) for address in addresses):
            raise InvalidInput("URL must use https")


@dataclass(frozen=True)
class OutboundTarget:
    scheme: str
    host: str
    port: int


def parse_outbound_url(url: str) -> OutboundTarget:
    """The scheme, host and port of an absolute http(s) URL without credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:  # a malformed IPv6 literal or an out-of-range port
        raise InvalidInput("URL is malformed") from error
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise InvalidInput("URL must be an absolute http(s) URL")
    if parts.username or parts.password:
        raise InvalidInput("URL must not carry credentials")
    host = parts.hostname.lower()
    if host in _METADATA_HOSTS:
        raise InvalidInput("URL points at a metadata service")
    return OutboundTarget(parts.scheme, host, port or DEFAULT_PORTS[parts.scheme])


def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address the system resolver gives for `host` (one lookup)."""
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise InvalidInput("URL host does not resolve") from exc
    # An IPv6 answer may carry a zone (`fe80::1%eth0`); the address is what the policy judges.
    return _distinct(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos)


def host_addresses(host: str, port: int, resolver: Resolver | None) -> list[IPAddress]:
    """The addresses `host` stands for: itself when it is one, else the resolver's answer
    (none when `resolver` is None)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    if host == "localhost":
        return [ipaddress.ip_address("127.0.0.1")]
    if resolver is None:
        return []
    addresses = _distinct(resolver(host, port))
    if not addresses:
        raise InvalidInput("URL host does not resolve")
    return addresses


def check_outbound_url(
    url: str,
    *,
    local_mode: bool = False,
    resolve: bool = True,
    policy: OutboundPolicy | None = None,
    resolver: Resolver = resolve_host,
) -> str:
    """Return `url` if it may be called, else raise InvalidInput (naming no secret).

    With `resolve`, every address the host resolves to is checked, so a public name that
    points at a private address is refused too. Without it only what the URL itself shows is
    checked; the connection (`core/outbound.py`) resolves and checks before it dials.
    `policy` defaults to the configured one (`local_mode` adds loopback to it).
    """
    target = parse_outbound_url(url)
    if policy is None:
        policy = OutboundPolicy.configured(local_mode=local_mode)
    addresses = host_addresses(target.host, target.port, resolver if resolve else None)
    policy.check(target.scheme, addresses)
    return url


def _unmapped(address: IPAddress) -> IPAddress:
    """`::ffff:10.0.0.1` is 10.0.0.1 on the wire (a dual-stack socket sends it over IPv4)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses a translation or tunnel prefix delivers `address` to."""
    if address in _NAT64:
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    if address in _SIX_TO_FOUR and address.sixtofour:
        return [address.sixtofour]
    if address in _TEREDO and address.teredo:
        # (server, client); the client's address is stored XOR 0xffffffff, `teredo` undoes it.
        server, client = address.teredo
        return [server, client]
    return []


def _is_public(address: IPAddress) -> bool:
    return address.is_global and not address.is_multicast


def _distinct(addresses: Iterable[IPAddress]) -> list[IPAddress]:
    return list(dict.fromkeys(addresses))

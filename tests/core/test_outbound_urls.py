"""The outbound URL (SSRF) policy: what a configured URL may point at."""

from __future__ import annotations

import ipaddress

import pytest
from pydantic import ValidationError

from switchboard.core.errors import InvalidInput
from switchboard.core.settings import get_settings
from switchboard.core.urls import IPAddress, OutboundPolicy, check_outbound_url


@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/latest/meta-data",
        "https://10.1.2.3/x",
        "https://192.168.0.1",
        "https://[::1]/",
        "https://127.0.0.1/",
        "http://8.8.8.8/",
        "https://metadata.google.internal/",
        "https://user:pass@8.8.8.8/",
        "ftp://8.8.8.8/",
        "https://0.0.0.0/",
    ],
)
def test_private_metadata_plain_http_and_credentials_are_refused(url: str) -> None:
    with pytest.raises(InvalidInput):
        check_outbound_url(url, local_mode=False)


def test_public_https_is_allowed() -> None:
    assert check_outbound_url("https://8.8.8.8/hooks", local_mode=False) == "https://8.8.8.8/hooks"


def test_local_mode_allows_loopback_http_only() -> None:
    assert check_outbound_url("http://127.0.0.1:3100", local_mode=True)
    assert check_outbound_url("http://localhost:3100", local_mode=True)
    with pytest.raises(InvalidInput):
        check_outbound_url("http://10.0.0.1:3100", local_mode=True)


@pytest.mark.parametrize(
    "url", ["https://[::1/", "https://example.com:99999/", "https://\x8b.example/", "https://a..b/"]
)
def test_malformed_urls_are_a_clear_refusal(url: str) -> None:
    with pytest.raises(InvalidInput):
        check_outbound_url(url, local_mode=False)


# --- IPv6 forms that carry an IPv4 address ------------------------------------------------
# Teredo: 2001:0:<server IPv4>:<flags>:<port ^ 0xffff>:<client IPv4 ^ 0xffffffff>.
EMBEDDED = [
    ("64:ff9b::a9fe:a9fe", "169.254.169.254"),  # NAT64 to the metadata service
    ("64:ff9b::a00:1", "10.0.0.1"),  # NAT64 to a private address
    ("2002:a9fe:a9fe::1", "169.254.169.254"),  # 6to4
    ("2002:7f00:1::1", "127.0.0.1"),  # 6to4 to loopback
    ("2001:0:808:808::f5ff:fffe", "10.0.0.1"),  # Teredo, private client behind a public server
    ("2001:0:a00:1::f7f7:fbfb", "10.0.0.1"),  # Teredo, private server
    ("::ffff:127.0.0.1", "127.0.0.1"),  # IPv4-mapped
    ("::ffff:169.254.169.254", "169.254.169.254"),
]
REFUSED_OUTRIGHT = [
    "64:ff9b:1::808:808",  # local-use NAT64: where the IPv4 sits is the operator's choice
    "::127.0.0.1",  # IPv4-compatible (deprecated)
    "::8.8.8.8",
    "::ffff:0:a00:1",  # IPv4-translated
]


@pytest.mark.parametrize(("literal", "carried"), EMBEDDED)
def test_an_ipv6_address_carrying_an_internal_ipv4_is_refused_and_named(literal: str, carried: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_outbound_url(f"https://[{literal}]:8443/hook?token=s3cr3t-value", local_mode=False)

    assert str(ipaddress.ip_address(literal)) in refused.value.message
    assert carried in refused.value.message
    assert "s3cr3t-value" not in refused.value.message and "/hook" not in refused.value.message


@pytest.mark.parametrize("literal", REFUSED_OUTRIGHT)
def test_prefixes_whose_embedded_address_cannot_be_trusted_are_refused_outright(literal: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_outbound_url(f"https://[{literal}]/", local_mode=False)

    assert str(ipaddress.ip_address(literal)) in refused.value.message


@pytest.mark.parametrize(
    "url",
    [
        "https://[2606:4700:4700::1111]/",
        "https://[64:ff9b::808:808]/",  # NAT64 to 8.8.8.8
        "https://[::ffff:8.8.8.8]/",
        "https://[2001:0:808:808::f7f7:fbfb]/",  # Teredo, public server and client (8.8.4.4)
    ],
)
def test_public_addresses_in_any_form_are_allowed(url: str) -> None:
    assert check_outbound_url(url, local_mode=False) == url


# --- the operator allowlist -----------------------------------------------------------------
TEN = OutboundPolicy((ipaddress.ip_network("10.0.0.0/8"),))


@pytest.mark.parametrize("url", ["https://10.1.2.3/", "http://10.1.2.3:8080/", "https://[::ffff:10.0.0.9]/"])
def test_the_allowlist_lets_its_networks_through_over_https_or_http(url: str) -> None:
    assert check_outbound_url(url, policy=TEN) == url


@pytest.mark.parametrize(
    "url",
    [
        "https://192.168.0.1/",
        "https://172.16.0.1/",
        "https://127.0.0.1/",
        "http://11.0.0.1/",  # a public address still needs https
        "https://[64:ff9b::a00:1]/",  # NAT64 into the allowlisted network is not the network
    ],
)
def test_the_allowlist_lets_through_only_its_networks(url: str) -> None:
    with pytest.raises(InvalidInput):
        check_outbound_url(url, policy=TEN)


def test_metadata_and_link_local_stay_refused_even_when_allowlisted() -> None:
    everything = OutboundPolicy((ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")))

    assert check_outbound_url("http://10.0.0.1/", policy=everything)
    for url in ("http://169.254.169.254/", "http://169.254.10.10/", "http://[fd00:ec2::254]/", "http://[fe80::1]/"):
        with pytest.raises(InvalidInput):
            check_outbound_url(url, policy=everything)


def test_the_allowlist_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTBOUND_ALLOWED_CIDRS", " 10.0.0.0/8 ,fd00::/8")
    monkeypatch.delenv("LOCAL_MODE", raising=False)
    get_settings.cache_clear()
    try:
        assert check_outbound_url("http://10.9.8.7/", local_mode=False)
        assert check_outbound_url("https://[fd12::1]/", local_mode=False)
        with pytest.raises(InvalidInput):
            check_outbound_url("https://192.168.1.1/", local_mode=False)
    finally:
        get_settings.cache_clear()


def test_an_allowlist_entry_that_is_not_a_network_fails_at_cold_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTBOUND_ALLOWED_CIDRS", "10.0.0.1/8")
    get_settings.cache_clear()
    try:
        with pytest.raises(ValidationError):
            get_settings()
    finally:
        get_settings.cache_clear()


# --- names: every resolved address is checked ---------------------------------------------
def test_a_name_is_refused_when_any_of_its_addresses_is_internal() -> None:
    def resolver(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("10.0.0.1")]

    with pytest.raises(InvalidInput) as refused:
        check_outbound_url("https://provider.example/", resolver=resolver)
    assert "10.0.0.1" in refused.value.message

    def public(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address("8.8.8.8")]

    assert check_outbound_url("https://provider.example/", resolver=public)
    with pytest.raises(InvalidInput):  # plain http to a public name
        check_outbound_url("http://provider.example/", resolver=public)

"""The outbound URL (SSRF) policy: what a configured URL may point at."""

from __future__ import annotations

import pytest

from switchboard.core.errors import InvalidInput
from switchboard.core.urls import check_outbound_url


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

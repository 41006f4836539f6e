"""Fetching a message's file from a URL its provider gave: only from hosts the kind names.

A URL is fetched only when its host is the provider's own base URL host or one its kind
documents (Meta's media host, Amazon S3's endpoints for a server storing media in S3), under
the outbound URL policy (the pinned transport checks every address it resolves: no SSRF
through a media URL), without redirects, its body read no further than the kind's limit.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from switchboard.core.clock import Deadline
from switchboard.core.errors import InvalidInput
from switchboard.providers.base import MediaNotFetched, ProviderTarget
from switchboard.providers.http import ProviderHttp

DOWNLOAD_ROUTE = "media url"
# Amazon S3's own endpoints, path or virtual-hosted style, any region.
_S3_HOST = re.compile(r"^(?:[a-z0-9.-]+\.)?s3(?:[.-][a-z0-9-]+)?\.amazonaws\.com$")


def base_host(target: ProviderTarget) -> str:
    return (urlsplit(target.base_url).hostname or "").lower()


def is_s3_host(host: str) -> bool:
    return bool(_S3_HOST.match(host))


def fetch_url(
    http: ProviderHttp,
    url: str,
    *,
    hosts: frozenset[str],
    headers: dict[str, str],
    max_bytes: int,
    s3: bool = False,
    deadline: Deadline | None = None,
) -> bytes:
    """The bytes at `url`, only if its host is one of `hosts` (or Amazon S3's, with `s3`), over
    https (or plain http where the outbound policy allows it), by `deadline` when one is given.
    Raises `MediaNotFetched` (`forbidden_url`, `too_large`, `expired` on 404/410) and the
    `ProviderError`s of the request."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("https", "http") or not (host in hosts or (s3 and is_s3_host(host))):
        raise MediaNotFetched("forbidden_url", "the media URL's host is not the provider's")
    origin = f"{parts.scheme}://{parts.netloc}"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        response, over = http.get_bounded(
            origin, path, route=DOWNLOAD_ROUTE, headers=headers, max_bytes=max_bytes, deadline=deadline
        )
    except InvalidInput as refused:
        raise MediaNotFetched("forbidden_url", str(refused)) from refused
    if response.status_code in (404, 410):
        raise MediaNotFetched("expired", f"the media URL answered {response.status_code}")
    http.expect_success(response, http.label("GET", DOWNLOAD_ROUTE))
    if over:
        raise MediaNotFetched("too_large", f"over {max_bytes} bytes")
    return response.content


def fetch_storage_url(
    http: ProviderHttp, target: ProviderTarget, url: str, max_bytes: int, deadline: Deadline | None = None
) -> bytes:
    """A file a server stored in S3 (wuzapi's S3 delivery, Evolution's S3/MinIO storage): by its
    URL, on the server's own host or Amazon S3's, without credentials (a public or presigned URL)."""
    hosts = frozenset({base_host(target)})
    return fetch_url(http, url, hosts=hosts, headers={}, max_bytes=max_bytes, s3=True, deadline=deadline)

"""The gateway serves the web console's files at `/console/` on the API's origin, with the
security headers production's CloudFront adds, and nothing outside the console's folder.

Requests go over a real socket with `http.client`, which sends the path exactly as written
(other clients resolve `..` before sending, which would hide a traversal)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devstack import template
from devstack.__main__ import _banner
from devstack.apigw import HttpResponse
from devstack.console import CONTENT_SECURITY_POLICY, SECURITY_HEADERS, ConsoleFiles, content_security_policy
from devstack.gateway import Gateway

INDEX = b"<!doctype html><title>console</title><script type=module src=./app.js></script>"
APP = b"import './screens/keys.js';"
STYLE = b"body { margin: 0 }"
SECRET = b"outside the console"
MEDIA_ORIGIN = "http://127.0.0.1:4566"  # where the local media bucket's presigned URLs point


class RecordingApi:
    """Stands in for the `HttpApi` emulator: answers every request it gets and remembers it."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def handle(self, method: str, raw_path: str, **_: Any) -> HttpResponse:
        self.paths.append(raw_path)
        return HttpResponse(200, {"content-type": "application/json"}, json.dumps({"path": raw_path}).encode())


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "console"
    (root / "screens").mkdir(parents=True)
    (root / "index.html").write_bytes(INDEX)
    (root / "app.js").write_bytes(APP)
    (root / "style.css").write_bytes(STYLE)
    (root / "screens" / "keys.js").write_bytes(b"export {};")
    (root / ".env").write_bytes(SECRET)
    (tmp_path / "secret.txt").write_bytes(SECRET)
    return root


@pytest.fixture
def api() -> RecordingApi:
    return RecordingApi()


@pytest.fixture
def gateway(site: Path, api: RecordingApi) -> Iterator[Gateway]:
    served = Gateway(api, port=0, console=ConsoleFiles(site, media_origin=MEDIA_ORIGIN)).start()  # type: ignore[arg-type]  # a recording stand-in for the HttpApi emulator, same handle()
    yield served
    served.stop()


def fetch(gateway: Gateway, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def assert_secured(headers: dict[str, str]) -> None:
    assert headers["content-security-policy"] == content_security_policy(MEDIA_ORIGIN)
    assert f"img-src 'self' data: {MEDIA_ORIGIN};" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src 'self';" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-cache"


def test_the_console_root_serves_the_page_with_the_security_headers(gateway: Gateway, api: RecordingApi) -> None:
    status, headers, body = fetch(gateway, "/console/")
    assert (status, body) == (200, INDEX)
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert_secured(headers)
    assert api.paths == []


def test_without_the_slash_the_browser_is_sent_to_the_folder(gateway: Gateway) -> None:
    status, headers, _ = fetch(gateway, "/console")
    assert status == 301
    assert headers["location"] == "/console/"
    status, headers, _ = fetch(gateway, "/console?lang=en")
    assert (status, headers["location"]) == (301, "/console/?lang=en")


@pytest.mark.parametrize(
    ("path", "content_type", "body"),
    [
        ("/console/index.html", "text/html; charset=utf-8", INDEX),
        ("/console/app.js", "text/javascript; charset=utf-8", APP),
        ("/console/style.css", "text/css; charset=utf-8", STYLE),
        ("/console/screens/keys.js?v=1", "text/javascript; charset=utf-8", b"export {};"),
    ],
)
def test_files_have_the_types_browsers_require_under_nosniff(
    gateway: Gateway, path: str, content_type: str, body: bytes
) -> None:
    status, headers, served = fetch(gateway, path)
    assert (status, headers["content-type"], served) == (200, content_type, body)
    assert_secured(headers)


def test_head_answers_the_length_without_the_body(gateway: Gateway) -> None:
    status, headers, body = fetch(gateway, "/console/app.js", method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["content-length"] == str(len(APP))


@pytest.mark.parametrize(
    "path",
    [
        "/console/missing.js",
        "/console/screens/",
        "/console/screens",
        "/console/../secret.txt",
        "/console/%2e%2e/secret.txt",
        "/console/%2E%2E%2Fsecret.txt",
        "/console/screens/..%2f..%2fsecret.txt",
        "/console/..%5csecret.txt",
        "/console//etc/passwd",
        "/console/%2fetc%2fpasswd",
        "/console/.env",
        "/console/app.js%00.html",
    ],
)
def test_nothing_but_the_console_files_is_served(gateway: Gateway, api: RecordingApi, path: str) -> None:
    status, headers, body = fetch(gateway, path)
    assert status == 404
    assert SECRET not in body
    assert b"root:" not in body
    assert_secured(headers)
    assert api.paths == []


def test_only_reads_are_served(gateway: Gateway) -> None:
    status, headers, _ = fetch(gateway, "/console/index.html", method="POST")
    assert status == 405
    assert headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", ["/api/me", "/consoles", "/console-api/x", "/"])
def test_every_other_path_goes_to_the_api(gateway: Gateway, api: RecordingApi, path: str) -> None:
    status, headers, body = fetch(gateway, path)
    assert (status, json.loads(body)) == (200, {"path": path})
    assert "content-security-policy" not in headers
    assert api.paths == [path]


def test_the_banner_gives_the_console_url() -> None:
    class Started:
        api_url = "http://127.0.0.1:3000"
        aws_url = "http://127.0.0.1:4566"
        sim_url = "http://127.0.0.1:3100"
        live_url = ""
        live_management_url = ""
        platform_key = "sb_live_x"
        notes: list[str] = []
        demo = None

    assert "  console        http://127.0.0.1:3000/console/" in _banner(Started(), 1.0).splitlines()  # type: ignore[arg-type]  # a stand-in with only the URLs the banner prints


def test_production_sends_the_same_security_headers_as_the_local_gateway() -> None:
    """CloudFront's response headers policy (template.yaml) and devstack/console.py agree, so a
    page that works locally under the policy works deployed."""
    [policy] = template.resources("AWS::CloudFront::ResponseHeadersPolicy").values()
    security = policy["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]

    # The template's `!Sub` of the same policy, its images from the media bucket's regional domain.
    csp = security["ContentSecurityPolicy"]["ContentSecurityPolicy"]
    assert (csp.name, csp.value) == ("Sub", CONTENT_SECURITY_POLICY)
    assert "img-src 'self' data: https://${MediaBucket.RegionalDomainName};" in csp.value
    assert security["ReferrerPolicy"]["ReferrerPolicy"] == SECURITY_HEADERS["referrer-policy"]
    assert security["ContentTypeOptions"]["Override"] is True  # X-Content-Type-Options: nosniff
    assert all(header["Override"] is True for header in security.values())

"""The security headers the gateway sends with the console (the ones CloudFront sends in
production) do what they are for in a real browser: a script or style the page did not load
from its own origin does not run, and no other site can frame the console.

A page of its own is served from a temporary folder (no local stack needed), so the test shows
the headers at work and not only the console's good behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from devstack.apigw import HttpResponse
from devstack.console import ConsoleFiles
from devstack.gateway import Gateway

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>probe</title>
<link rel="stylesheet" href="site.css">
<script src="site.js"></script>
<script>document.documentElement.dataset.inline = "ran";</script>
<style>body { color: rgb(255, 0, 0); }</style>
</head><body><p id="probe">probe</p><img alt="" src="https://example.invalid/pixel.png"></body></html>
"""


class NoApi:
    def handle(self, method: str, raw_path: str, **_: Any) -> HttpResponse:
        return HttpResponse(404, {"content-type": "text/html"}, b"<iframe src='/console/'></iframe>")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "site.js").write_text('document.documentElement.dataset.file = "ran";')
    (tmp_path / "site.css").write_text("#probe { color: rgb(0, 128, 0); }")
    served = Gateway(NoApi(), port=0, console=ConsoleFiles(tmp_path)).start()  # type: ignore[arg-type]  # a stand-in for the HttpApi emulator, same handle()
    yield served
    served.stop()


def test_only_the_origins_own_files_run_and_nobody_frames_the_console(browser: Browser, gateway: Gateway) -> None:
    context = browser.new_context()
    page = context.new_page()
    refused: list[str] = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )

    page.goto(f"{gateway.url}/console/")

    root = page.locator("html")
    expect(root).to_have_attribute("data-file", "ran")
    expect(page.locator("#probe")).to_have_css("color", "rgb(0, 128, 0)")
    assert root.get_attribute("data-inline") is None, "an inline script ran"
    assert any("inline script" in text or "script-src" in text for text in refused), refused
    assert any("style-src" in text for text in refused), refused
    assert any("img-src" in text for text in refused), refused

    # A page of another path on the same server frames /console/: frame-ancestors refuses it.
    page.goto(f"{gateway.url}/elsewhere")
    frame = page.frame_locator("iframe")
    expect(frame.locator("#probe")).to_have_count(0)
    assert any("frame-ancestors" in text for text in refused), refused
    context.close()

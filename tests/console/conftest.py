"""Browser tests of the web console: Debian's Chromium driven by Playwright against the whole
local stack (the one `make local` runs), the console served by its gateway at `/console/`.

- `browser` (one for the whole of tests/console, closed after its last test so that Playwright's
  event loop is gone before other packages' tests run): headless Chromium from /usr/bin/chromium (`make chromium`
  installs it; Playwright's own browser download is never used). Missing, every test here fails
  and says how to install it.
- `stack` (one per test module): a `tests.e2e.conftest.Stack` on free ports, with the seeded
  `demo` tenant; `tenant` is one more tenant for the module (three connected numbers, the third
  of kind `calls`; admin, send and agent keys). Seeding a tenant takes seconds, so tests share
  it: a test that changes it works on an API key of its own, or puts back what it changed.
- `page`: a new browser context per test (its own sessionStorage, localStorage and cookies) at
  1280x800 in a pt-BR browser, base URL the stack's gateway; `console.open()` loads `/console/`.
- `screenshot(page, name)`: writes `docs/screenshots/<name>.png` (docs/console.md shows them).

Elements are found by role and accessible name, in the console's default language (pt-BR),
as a screen reader user would find them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack, _watched
from tests.support.stacks import stack_on_free_ports

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "docs" / "screenshots"
# No sandbox (containers without user namespaces); nothing in the background that reaches out to
# the network or changes the browser during a run.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # The calls panel's media: Chromium's fake microphone and camera, permission granted without
    # a prompt (harmless for the screens that never ask for them).
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
]
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
# The browser's language: the console picks pt-BR from it the first time (its default for any
# Portuguese), which every test reads its words in.
LOCALE = "pt-BR"
TIMEOUT_MS = 10_000  # for one condition to hold; the local stack answers in milliseconds
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"the console's browser tests drive Debian's Chromium at {CHROMIUM}, which is not installed: "
            "run `make chromium` (apt-get install chromium)",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    local = stack_on_free_ports(
        "console",
        environment={"PROVIDER_TIMEOUT_SECONDS": "1"},
    ).start()
    shared = Stack(local)
    yield shared
    shared.close()
    local.stop()


@pytest.fixture(scope="module")
def tenant(stack: Stack) -> SeededTenant:
    return _watched(stack.new_tenant())


class Console:
    """The console in one browser page, and the few steps every test takes the same way."""

    def __init__(self, page: Page, stack: Stack) -> None:
        self.page = page
        self.stack = stack

    def open(self, hash_route: str = "") -> Page:
        self.page.goto(f"/console/{hash_route}")
        return self.page

    def sign_in(self, key: str) -> Page:
        page = self.open()
        page.get_by_label("Chave de API").fill(key)
        page.get_by_role("button", name="Entrar").click()
        return page

    def sign_in_as_admin(self, tenant: SeededTenant) -> Page:
        page = self.sign_in(tenant.admin_key)
        expect(page.get_by_role("navigation")).to_be_visible()
        return page

    def api(self, method: str, path: str, key: str, json: Any = None) -> Any:
        answer = self.stack.api(method, path, key=key, json=json)
        assert answer.status_code < 300, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer.json() if answer.content else None


@pytest.fixture
def page(browser: Browser, stack: Stack) -> Iterator[Page]:
    """Fails the test if the page threw, or the Content-Security-Policy production sends too
    blocked anything (an inline script or style, a third-party asset)."""
    context = browser.new_context(base_url=stack.api_url, viewport=VIEWPORT, locale=LOCALE)
    context.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []
    context.on("weberror", lambda error: problems.append(f"uncaught: {error.error}"))
    opened = context.new_page()
    opened.on(
        "console",
        lambda message: problems.append(message.text) if "Content Security Policy" in message.text else None,
    )
    yield opened
    context.close()
    assert not problems, problems


@pytest.fixture
def console(page: Page, stack: Stack) -> Console:
    return Console(page, stack)


@pytest.fixture
def screenshot() -> Callable[[Page, str], Path]:
    def take(page: Page, name: str) -> Path:
        assert re.fullmatch(r"[a-z0-9-]+", name), name
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=False, animations="disabled", caret="hide")
        return path

    return take

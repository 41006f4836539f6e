"""axe-core in the browser tests: `assert_accessible(page, "numbers")` fails the test with every
violation axe finds on the page as it is now (the rule, its impact, and the elements it names).

The axe-core that `axe-playwright-python` bundles is injected into the page through the
DevTools protocol, which the console's Content-Security-Policy does not govern, so the page is
checked as production serves it. The rules are WCAG 2.0, 2.1 and 2.2 at levels A and AA and axe's
best practices; a screen is checked once its content has loaded (`aria-busy` false), since a
half-rendered page tells nothing about the one a user reads.
"""

from __future__ import annotations

from typing import Any

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
_axe = Axe()


def violations(page: Page) -> list[dict[str, Any]]:
    """axe's violations on the page as it is now: each `{id, impact, help, nodes: [{target, ...}]}`."""
    results = _axe.run(page, options={"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]})
    found: list[dict[str, Any]] = results.response["violations"]
    return found


def describe(found: list[dict[str, Any]]) -> str:
    lines = []
    for violation in found:
        targets = ", ".join(" ".join(map(str, node["target"])) for node in violation["nodes"][:5])
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']} — {targets}")
    return "\n".join(lines)


def assert_accessible(page: Page, screen: str) -> None:
    """No axe violation on `screen` once everything on it has loaded."""
    expect(page.locator("[aria-busy=true]")).to_have_count(0)
    found = violations(page)
    assert not found, f"axe on {screen}:\n{describe(found)}"

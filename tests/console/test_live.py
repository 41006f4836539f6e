"""Live updates in the browser: a change made at the provider reaches an open console without a
reload, through the whole path AWS runs (provider webhook → bus → notifier rule → @connections →
the page's WebSocket), and only the tenant it belongs to ever sees it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, WebSocket, expect

from devstack.seed import SeededInstance, SeededTenant
from tests.console.conftest import LOCALE, TIMEOUT_MS, VIEWPORT, Console
from tests.console.test_pool_editor import label, open_editor, row, with_pool
from tests.e2e.conftest import Stack, _watched


@pytest.fixture(scope="module")
def tenant(stack: Stack) -> SeededTenant:
    return stack.demo


@pytest.fixture(scope="module")
def other_tenant(stack: Stack) -> SeededTenant:
    return _watched(stack.new_tenant())


class Frames:
    """Every frame the page's live WebSocket received, parsed."""

    def __init__(self, page: Page) -> None:
        self.received: list[dict[str, Any]] = []
        page.on("websocket", self._watch)

    def _watch(self, socket: WebSocket) -> None:
        socket.on("framereceived", lambda payload: self.received.append(json.loads(payload)))

    def tenants(self) -> set[str]:
        return {frame["detail"].get("tenant") for frame in self.received}

    def about(self, instance: SeededInstance) -> list[dict[str, Any]]:
        return [frame for frame in self.received if frame["detail"].get("instance") == instance.name]


@pytest.fixture
def second_page(browser: Browser, stack: Stack) -> Iterator[Page]:
    """Another browser context: another person's console, open at the same time."""
    context = browser.new_context(base_url=stack.api_url, viewport=VIEWPORT, locale=LOCALE)
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


def numbers_screen(page: Page, tenant: SeededTenant) -> Page:
    page.goto("/console/")
    page.get_by_label("Chave de API").fill(tenant.admin_key)
    page.get_by_role("button", name="Entrar").click()
    page.get_by_role("link", name="Números").click()
    expect(page.get_by_role("heading", level=1, name="Números e instâncias")).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    return page


def number_card(page: Page, tenant: SeededTenant, instance: SeededInstance) -> Locator:
    """The instance's number's row on the numbers screen: its connection is the row's."""
    return page.get_by_role("row").filter(has=page.get_by_role("link", name=instance.name, exact=True))


def messaging_instance(tenant: SeededTenant) -> SeededInstance:
    return next(instance for instance in tenant.instances if instance.kind == "messages")


def test_a_number_that_disconnects_while_the_editor_is_open_flips_its_badge_live(
    console: Console, stack: Stack, tenant: SeededTenant
) -> None:
    listed = {number["displayName"]: number for number in console.api("GET", "/api/numbers", tenant.admin_key)}
    first, second = (listed[f"{tenant.owner_tag} {index}"] for index in (1, 2))
    key = console.api(
        "POST", "/api/api-keys", tenant.admin_key, {"name": f"live {uuid.uuid4().hex[:8]}", "scopes": ["send"]}
    )
    with_pool(console, tenant, key, [first, second])
    page = open_editor(console, tenant, key)
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    expect(row(page, first)).not_to_contain_text("desconectado")
    instance = next(i for i in tenant.instances if i.number_id == first["id"])

    started = time.monotonic()
    stack.sim.set_connection(instance.sim_id, False)
    try:
        # No reload: the frame makes the screen read the pool again.
        expect(row(page, first)).to_contain_text("desconectado")
        print(f"provider disconnect -> badge in the open pool editor: {time.monotonic() - started:.2f} s")
        expect(row(page, second)).not_to_contain_text("desconectado")
    finally:
        stack.sim.set_connection(instance.sim_id, True)
    expect(row(page, first)).not_to_contain_text("desconectado")


def test_two_tenants_consoles_open_at_once_each_sees_only_its_own_changes(
    page: Page, second_page: Page, stack: Stack, tenant: SeededTenant, other_tenant: SeededTenant
) -> None:
    ours, theirs = messaging_instance(tenant), messaging_instance(other_tenant)
    our_frames, their_frames = Frames(page), Frames(second_page)
    numbers_screen(page, tenant)
    numbers_screen(second_page, other_tenant)

    started = time.monotonic()
    stack.sim.set_connection(ours.sim_id, False)
    try:
        expect(number_card(page, tenant, ours)).to_contain_text("desconectado")
        print(f"provider disconnect -> badge on the numbers screen: {time.monotonic() - started:.2f} s")
        # The other tenant's change comes after ours on the same bus: once its console shows it,
        # our event has been delivered (or not) to every connection already.
        stack.sim.set_connection(theirs.sim_id, False)
        expect(number_card(second_page, other_tenant, theirs)).to_contain_text("desconectado")
    finally:
        stack.sim.set_connection(ours.sim_id, True)
        stack.sim.set_connection(theirs.sim_id, True)
    expect(number_card(page, tenant, ours)).not_to_contain_text("desconectado")
    expect(number_card(second_page, other_tenant, theirs)).not_to_contain_text("desconectado")

    assert our_frames.about(ours), "our console got the frame of our number's disconnection"
    assert their_frames.about(theirs), "their console got the frame of their number's disconnection"
    assert our_frames.tenants() == {tenant.owner_tag}, our_frames.received
    assert their_frames.tenants() == {other_tenant.owner_tag}, their_frames.received
    # Instance names are per tenant: the check above is by tenant, this one by what the page shows.
    expect(number_card(second_page, other_tenant, theirs)).to_be_visible()
    expect(second_page.get_by_text(label(_number_of(tenant, ours)))).to_have_count(0)


def _number_of(tenant: SeededTenant, instance: SeededInstance) -> dict[str, Any]:
    return next(number for number in tenant.numbers if number["id"] == instance.number_id)

"""The attendants' calls panel, in the browser, against the whole local stack and its simulator.

What attendants rely on: two of them share a connection's slots and the provider admits no more
than the limit (the refused one sees the limit and the calls that hold it); a limit changed in the
provider's own panel reaches every open panel without a reload and admits the next dial; lowering
the limit below the live calls hangs up nobody and shows the excess; a call's media is attached
only by its owner, fed by the browser's devices, and survives a reload of the owner's tab.

Each test seeds a tenant of its own (one calls connection, the server's default limit of 1) and a
second attendant key, so that no test sees another's calls.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from devstack.seed import SeededTenant
from tests.console.conftest import LOCALE, TIMEOUT_MS, VIEWPORT
from tests.e2e.conftest import Stack, calls_instance


@dataclass
class Line:
    tenant: SeededTenant
    name: str  # the calls connection (its id on the simulator too)
    second_agent_key: str
    second_attendant: str


@pytest.fixture
def line(stack: Stack) -> Line:
    tenant = stack.new_tenant()
    assert tenant.connected, tenant.notes
    attendant = f"att-{uuid.uuid4().hex[:8]}"
    answer = stack.api(
        "POST",
        "/api/api-keys",
        key=tenant.admin_key,
        json={"name": f"second agent {attendant}", "scopes": ["agent"], "attendantId": attendant},
    )
    assert answer.status_code == 201, answer.text
    return Line(tenant, calls_instance(tenant), answer.json()["key"], attendant)


@pytest.fixture
def open_tab(browser: Browser, stack: Stack) -> Iterator[Callable[[str], Page]]:
    """A signed-in console in a browser context of its own (one attendant each), on the calls panel.
    Fails the test if a page threw or the Content-Security-Policy blocked anything."""
    contexts: list[BrowserContext] = []
    problems: list[str] = []

    def open_one(key: str) -> Page:
        context = browser.new_context(base_url=stack.api_url, viewport=VIEWPORT, locale=LOCALE)
        context.set_default_timeout(TIMEOUT_MS)
        context.on("weberror", lambda error: problems.append(f"uncaught: {error.error}"))
        contexts.append(context)
        page = context.new_page()
        page.on(
            "console",
            lambda message: problems.append(message.text) if "Content Security Policy" in message.text else None,
        )
        page.goto("/console/#/calls")
        page.get_by_label("Chave de API").fill(key)
        page.get_by_role("button", name="Entrar").click()
        expect(page.get_by_role("heading", level=1, name="Painel de ligações")).to_be_visible()
        expect(page.locator("body")).to_have_attribute("data-live", "open")
        return page

    yield open_one
    for context in contexts:
        context.close()
    assert not problems, problems


def panel(page: Page, line: Line) -> Locator:
    return page.get_by_role("region", name=f"Conexão {line.name}")


def fact(page: Page, line: Line, name: str) -> Locator:
    return panel(page, line).locator(f"dd[data-field={name}]")


def live_calls(page: Page, line: Line) -> Locator:
    return panel(page, line).get_by_role("table", name=f"Ligações vivas em {line.name}").locator("tbody tr")


def dial(page: Page, line: Line, to: str, *, double: bool = False) -> None:
    form = panel(page, line).get_by_role("form", name=f"Discar de {line.name}")
    form.get_by_label("Número a discar").fill(to)
    button = form.get_by_role("button", name="Discar", exact=True)
    if double:
        button.dblclick()
    else:
        button.click()


def set_limit(stack: Stack, line: Line, limit: int) -> None:
    answer = stack.api(
        "PUT",
        f"/api/connections/{line.name}/calls-limit",
        key=line.tenant.admin_key,
        json={"callsMaxConcurrent": limit},
    )
    assert answer.status_code == 200, answer.text


def provider_calls(stack: Stack, line: Line) -> list[dict[str, Any]]:
    return [call for call in stack.sim.instance(line.name)["calls"] if call["state"] != "ended"]


def test_two_attendants_share_two_slots_and_the_third_dial_is_refused_with_the_calls_that_hold_them(
    stack: Stack, line: Line, open_tab: Callable[[str], Page], screenshot: Callable[[Page, str], Path]
) -> None:
    set_limit(stack, line, 2)
    first = open_tab(line.tenant.agent_key)
    second = open_tab(line.second_agent_key)
    for page in (first, second):
        expect(fact(page, line, "limit")).to_contain_text("2 (versão")
        expect(fact(page, line, "available")).to_have_text("2")

    # Both dial at once; the first attendant even double-clicks: one dial per intention.
    dial(first, line, "5511911110001", double=True)
    dial(second, line, "5511911110002")

    for page in (first, second):
        expect(live_calls(page, line)).to_have_count(2)
        expect(fact(page, line, "occupancy")).to_have_text("2")
        expect(fact(page, line, "available")).to_have_text("0")
    calls = provider_calls(stack, line)
    assert sorted(call["to"] for call in calls) == ["5511911110001", "5511911110002"]
    owners = {call["callId"]: call["owner"] for call in stack.calls_view(line.tenant, line.name)["calls"]}
    assert sorted(owners.values()) == sorted([line.tenant.attendant_id, line.second_attendant])
    expect(live_calls(first, line).filter(has_text="(você)")).to_have_count(1)
    screenshot(first, "calls-panel")

    dial(first, line, "5511911110003")

    busy = panel(first, line).locator("[data-field=line-busy]")
    expect(busy).to_contain_text("Linha ocupada")
    expect(busy).to_contain_text("o limite é 2")
    occupants = busy.get_by_role("list", name="Ligações que ocupam a linha").get_by_role("listitem")
    expect(occupants).to_have_count(2)
    for call_id in owners:
        expect(occupants.filter(has_text=call_id)).to_have_count(1)
    expect(first.get_by_role("alert")).to_have_text("")  # an operational condition, not an error
    assert len(provider_calls(stack, line)) == 2
    busy.scroll_into_view_if_needed()
    screenshot(first, "calls-panel-line-busy")


def test_a_limit_raised_in_the_providers_panel_appears_live_and_admits_a_second_dial(
    stack: Stack, line: Line, open_tab: Callable[[str], Page]
) -> None:
    page = open_tab(line.tenant.agent_key)
    expect(fact(page, line, "limit")).to_contain_text("1 (versão")
    dial(page, line, "5511922220001")
    expect(live_calls(page, line)).to_have_count(1)
    dial(page, line, "5511922220002")
    expect(panel(page, line).locator("[data-field=line-busy]")).to_contain_text("o limite é 1")

    stack.sim.panel_call_settings(line.name, 2)

    expect(fact(page, line, "limit")).to_contain_text("2 (versão")
    expect(fact(page, line, "limit")).to_contain_text("alterado no painel do provedor")
    expect(fact(page, line, "available")).to_have_text("1")
    dial(page, line, "5511922220002")
    expect(live_calls(page, line)).to_have_count(2)
    assert len(provider_calls(stack, line)) == 2


def test_lowering_the_limit_below_two_live_calls_shows_the_excess_and_hangs_up_nobody(
    stack: Stack, line: Line, open_tab: Callable[[str], Page], screenshot: Callable[[Page, str], Path]
) -> None:
    set_limit(stack, line, 2)
    incoming = [stack.sim.incoming_call(line.name, peer) for peer in ("5511933330001", "5511933330002")]
    admin = open_tab(line.tenant.admin_key)
    expect(live_calls(admin, line)).to_have_count(2)

    form = panel(admin, line).get_by_role("form", name=f"Limite de ligações de {line.name}")
    form.get_by_label("Ligações simultâneas (1 a 8)").fill("1")
    form.get_by_role("button", name="Salvar limite").click()

    expect(admin.get_by_role("status").first).to_contain_text("Limite salvo no provedor: 1")
    expect(fact(admin, line, "limit")).to_contain_text("1 (versão")
    expect(panel(admin, line).locator("[data-field=excess]")).to_contain_text(
        "1 ligação(ões) acima do limite de 1 após uma redução: ninguém foi desligado"
    )
    expect(fact(admin, line, "available")).to_have_text("0")
    expect(live_calls(admin, line)).to_have_count(2)
    assert sorted(call["callId"] for call in provider_calls(stack, line)) == sorted(incoming)
    panel(admin, line).evaluate("region => region.scrollIntoView()")
    screenshot(admin, "calls-panel-excess")


def test_only_the_owner_attaches_media_fed_by_the_devices_and_a_reload_reattaches_with_the_same_session(
    stack: Stack, line: Line, open_tab: Callable[[str], Page]
) -> None:
    owner = open_tab(line.tenant.agent_key)
    dial(owner, line, "5511944440001")
    expect(live_calls(owner, line)).to_have_count(1)
    call_id = provider_calls(stack, line)[0]["callId"]
    row = live_calls(owner, line).filter(has_text=call_id)

    row.get_by_role("button", name=f"Anexar mídia à ligação {call_id}").click()

    expect(row).to_contain_text("mídia anexada")
    # The fake microphone's frames go out on this call's socket and come back tagged with its id.
    expect(row).to_contain_text(re.compile(r"[1-9]\d* quadros recebidos"))
    session = stack.sim.media_session(line.name, call_id)
    assert session is not None and session["connected"], session

    other = open_tab(line.second_agent_key)
    other_row = live_calls(other, line).filter(has_text=call_id)
    other_row.get_by_role("button", name=f"Anexar mídia à ligação {call_id}").click()
    # Said in the call's row, next to the button, and kept there as the panel re-reads.
    expect(other_row.get_by_role("alert")).to_contain_text(
        f"Só o atendente dono da ligação {call_id} pode anexar a mídia dela: "
    )
    expect(other_row.get_by_role("alert")).to_contain_text("(not_call_owner)")
    assert stack.sim.media_session(line.name, call_id) == session  # the owner's session is untouched

    before = frames(row)
    owner.reload()

    row = live_calls(owner, line).filter(has_text=call_id)
    expect(row).to_contain_text("mídia anexada")
    expect(row).to_contain_text("(sessão retomada)")
    expect(row).to_contain_text(f"{line.tenant.attendant_id} (você)")
    expect(fact(owner, line, "occupancy")).to_have_text("1")
    stack.wait_for(lambda: frames(row) > before)
    resumed = stack.sim.media_session(line.name, call_id)
    assert resumed is not None and resumed["connected"] and resumed["sessionId"] == session["sessionId"]


def frames(row: Locator) -> int:
    found = re.search(r"(\d+) quadros recebidos", row.text_content() or "")
    return int(found.group(1)) if found else -1


def test_a_disconnected_connection_blocks_dialing_and_keeps_the_limit_editable(
    stack: Stack, line: Line, open_tab: Callable[[str], Page]
) -> None:
    admin = open_tab(line.tenant.admin_key)
    dial_button = (
        panel(admin, line)
        .get_by_role("form", name=f"Discar de {line.name}")
        .get_by_role("button", name="Discar", exact=True)
    )
    expect(dial_button).to_be_enabled()

    stack.sim.set_connection(line.name, False)

    expect(panel(admin, line).get_by_role("heading", level=2)).to_contain_text("desconectado")
    expect(dial_button).to_be_disabled()
    expect(panel(admin, line)).to_contain_text(
        "Desconectada: a discagem está bloqueada; o limite ainda pode ser alterado."
    )
    form = panel(admin, line).get_by_role("form", name=f"Limite de ligações de {line.name}")
    form.get_by_label("Ligações simultâneas (1 a 8)").fill("3")
    form.get_by_role("button", name="Salvar limite").click()
    expect(admin.get_by_role("status").first).to_contain_text("Limite salvo no provedor: 3")
    expect(fact(admin, line, "limit")).to_contain_text("3 (versão")
    assert stack.calls_view(line.tenant, line.name)["limit"] == 3

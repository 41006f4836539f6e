"""The pool editor ("Balanceamento de envios") of an API key, in the browser, against the API.

What an admin relies on: the numbers they pick are the pool, in the order they put them (by
drag and drop or by keyboard), that order is what the API holds after a reload, a number that
cannot send says so, and when the API refuses a change the screen says why and shows the pool
the API holds rather than the one the admin wished for.

Each test works on a send key of its own, so tests never see each other's pools. The tenant is
the seeded `demo` one (as `make local` shows it, for the screenshots).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from devstack.seed import SeededTenant
from tests.console.conftest import Console
from tests.e2e.conftest import Stack

POOL = "Números no pool"


def phone(digits: str) -> str:
    """A number as the console writes it: +55 11 99999-0001."""
    area, rest = digits[2:4], digits[4:]
    return f"+55 {area} {rest[:-4]}-{rest[-4:]}"


def label(number: dict[str, Any]) -> str:
    return f"{phone(number['number'])} ({number['displayName']})"


@pytest.fixture(scope="module")
def tenant(stack: Stack) -> SeededTenant:
    return stack.demo


@pytest.fixture
def numbers(console: Console, tenant: SeededTenant) -> list[dict[str, Any]]:
    """The tenant's three numbers on the calls-capable simulator, in the seed's order (it seeds one
    more number on each other provider kind)."""
    listed = {number["displayName"]: number for number in console.api("GET", "/api/numbers", tenant.admin_key)}
    return [listed[f"{tenant.owner_tag} {index}"] for index in (1, 2, 3)]


@pytest.fixture
def key(console: Console, tenant: SeededTenant) -> dict[str, Any]:
    """A new send key of the tenant, with an empty pool and the default selection mode."""
    return console.api(  # type: ignore[no-any-return]  # the API's JSON answer
        "POST", "/api/api-keys", tenant.admin_key, {"name": f"pool {uuid.uuid4().hex[:8]}", "scopes": ["send"]}
    )


def sending(console: Console, tenant: SeededTenant) -> list[dict[str, Any]]:
    """The tenant's numbers that can send messages now (what the pool editor offers): a Meta Cloud
    number, or one with a connected instance of kind `messages`; in the API's order."""
    instances = console.api("GET", "/api/instances", tenant.admin_key)
    senders = {i["numberId"] for i in instances if i["kind"] == "messages" and i["state"] == "CONNECTED"}
    listed = console.api("GET", "/api/numbers", tenant.admin_key)
    return [number for number in listed if number["metaPhoneId"] or number["id"] in senders]


def with_pool(console: Console, tenant: SeededTenant, key: dict[str, Any], members: list[dict[str, Any]]) -> None:
    console.api("PUT", f"/api/api-keys/{key['id']}/selection-mode", tenant.admin_key, {"numberSelectionMode": "pool"})
    for number in members:
        console.api("POST", f"/api/api-keys/{key['id']}/pool", tenant.admin_key, {"whatsappNumberId": number["id"]})


def pool_in_api(console: Console, tenant: SeededTenant, key: dict[str, Any]) -> list[str]:
    entries = console.api("GET", f"/api/api-keys/{key['id']}/pool", tenant.admin_key)
    return [entry["whatsappNumberId"] for entry in sorted(entries, key=lambda entry: entry["priority"])]


def open_editor(console: Console, tenant: SeededTenant, key: dict[str, Any]) -> Page:
    page = console.sign_in_as_admin(tenant)
    page.evaluate("route => { location.hash = route; }", f"#/keys/{key['id']}")
    expect(page.get_by_role("heading", level=1, name=f"Editar API Key: {key['name']}")).to_be_visible()
    return page


def status(page: Page) -> Locator:
    """The console's announcements (role status): what was just done."""
    return page.get_by_role("status")


def pool_list(page: Page) -> Locator:
    return page.get_by_role("list", name=POOL)


def row(page: Page, number: dict[str, Any]) -> Locator:
    return pool_list(page).get_by_role("listitem").filter(has_text=label(number))


def expect_order(page: Page, members: list[dict[str, Any]]) -> None:
    rows = pool_list(page).get_by_role("listitem")
    expect(rows).to_have_count(len(members))
    for position, number in enumerate(members):
        expect(rows.nth(position)).to_contain_text(f"{position + 1}.{label(number)}")


def test_an_admin_builds_a_pool_of_three_with_the_multi_select(
    console: Console,
    tenant: SeededTenant,
    key: dict[str, Any],
    numbers: list[dict[str, Any]],
    screenshot: Callable[[Page, str], Path],
) -> None:
    # The third seeded number has only a `calls` instance: connected, but it cannot send.
    calls_only = numbers[2]
    offered = sending(console, tenant)
    assert calls_only not in offered
    members = [numbers[0], numbers[1], next(number for number in offered if number not in numbers)]
    page = open_editor(console, tenant, key)
    expect(page.get_by_text("Nenhum número no pool.")).to_be_visible()
    expect(page.get_by_text("Mensagens são enviadas em sequência entre os números.", exact=False)).to_be_visible()

    page.get_by_role("switch", name="Ativar balanceamento de envios").check()
    expect(status(page)).to_have_text("Balanceamento de envios ativado.")

    page.get_by_role("button", name="+ Adicionar número ao pool").click()
    choices = page.get_by_role("group", name="Números conectados fora do pool")
    expect(choices.get_by_role("checkbox")).to_have_count(len(offered))
    expect(choices.get_by_role("checkbox", name=label(calls_only))).to_have_count(0)
    for number in members:
        choices.get_by_role("checkbox", name=label(number)).check()
    page.get_by_role("button", name="Adicionar ao pool", exact=True).click()

    expect(status(page)).to_have_text("3 número(s) adicionado(s) ao pool.")
    expect_order(page, members)
    expect(page.get_by_text("3 de 10 números no pool.")).to_be_visible()
    assert pool_in_api(console, tenant, key) == [number["id"] for number in members]
    assert console.api("GET", f"/api/api-keys/{key['id']}", tenant.admin_key)["numberSelectionMode"] == "pool"

    # The numbers in the pool are no longer offered.
    page.get_by_role("button", name="+ Adicionar número ao pool").click()
    expect(choices.get_by_role("checkbox")).to_have_count(len(offered) - 3)
    for number in members:
        expect(choices.get_by_role("checkbox", name=label(number))).to_have_count(0)
    page.get_by_role("button", name="Cancelar").click()
    page.get_by_role("region", name="Balanceamento de envios").evaluate("box => box.scrollIntoView()")
    screenshot(page, "pool-editor")
    page.set_viewport_size({"width": 360, "height": 800})
    page.get_by_role("heading", level=2, name="Balanceamento de envios").scroll_into_view_if_needed()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 360, "the page scrolls sideways at 360 px"
    screenshot(page, "pool-editor-360")


def test_reordered_by_drag_and_drop_and_by_keyboard_the_order_holds_after_a_reload(
    console: Console, tenant: SeededTenant, key: dict[str, Any], numbers: list[dict[str, Any]]
) -> None:
    first, second, third = numbers
    with_pool(console, tenant, key, numbers)
    page = open_editor(console, tenant, key)
    expect_order(page, [first, second, third])

    row(page, third).drag_to(row(page, first))

    expect(status(page)).to_have_text(f"{label(third)} agora está na posição 1.")
    expect_order(page, [third, first, second])
    assert pool_in_api(console, tenant, key) == [third["id"], first["id"], second["id"]]

    row(page, second).focus()
    page.keyboard.press("Alt+ArrowUp")

    expect(status(page)).to_have_text(f"{label(second)} agora está na posição 2.")
    expect_order(page, [third, second, first])
    expect(row(page, second)).to_be_focused()  # the keyboard user keeps their place

    page.keyboard.press("Alt+ArrowDown")
    expect_order(page, [third, first, second])
    page.keyboard.press("Alt+ArrowUp")
    expect_order(page, [third, second, first])

    page.get_by_role("button", name=f"Descer {label(third)}").click()
    expect_order(page, [second, third, first])

    page.reload()
    expect(page.get_by_role("heading", level=1, name=f"Editar API Key: {key['name']}")).to_be_visible()
    expect_order(page, [second, third, first])
    assert pool_in_api(console, tenant, key) == [second["id"], third["id"], first["id"]]


@pytest.fixture
def first_disconnected(stack: Stack, tenant: SeededTenant, numbers: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The tenant's first number, disconnected on the simulator (and reconnected afterwards)."""
    instance = next(i for i in tenant.instances if i.number_id == numbers[0]["id"])

    def state_is(state: str) -> bool:
        answer = stack.api("GET", f"/api/instances/{instance.name}", key=tenant.admin_key)
        return bool(answer.json()["state"] == state)

    stack.sim.set_connection(instance.sim_id, False)
    stack.wait_for(lambda: state_is("DISCONNECTED"))
    yield numbers[0]
    stack.sim.set_connection(instance.sim_id, True)
    stack.wait_for(lambda: state_is("CONNECTED"))


def test_a_disconnected_number_says_so_and_is_not_offered(
    console: Console, tenant: SeededTenant, key: dict[str, Any], numbers: list[dict[str, Any]], first_disconnected: Any
) -> None:
    down, up, calls_only = numbers
    other = next(number for number in sending(console, tenant) if number not in numbers)
    with_pool(console, tenant, key, [down, up])

    page = open_editor(console, tenant, key)

    expect(row(page, down)).to_contain_text("desconectado")
    expect(row(page, up)).to_contain_text("conectado")
    expect(row(page, up)).not_to_contain_text("desconectado")
    page.get_by_role("button", name="+ Adicionar número ao pool").click()
    choices = page.get_by_role("group", name="Números conectados fora do pool")
    expect(choices.get_by_role("checkbox", name=label(other))).to_be_visible()
    expect(choices.get_by_role("checkbox", name=label(down))).to_have_count(0)
    expect(choices.get_by_role("checkbox", name=label(up))).to_have_count(0)
    expect(choices.get_by_role("checkbox", name=label(calls_only))).to_have_count(0)  # connected, cannot send


def test_a_refused_change_is_shown_in_the_apis_words_and_the_pool_read_again(
    console: Console, tenant: SeededTenant, key: dict[str, Any], numbers: list[dict[str, Any]]
) -> None:
    first, second, _ = numbers
    with_pool(console, tenant, key, [first])
    page = open_editor(console, tenant, key)
    expect_order(page, [first])

    # Another admin adds the number this one is about to add: 409.
    page.get_by_role("button", name="+ Adicionar número ao pool").click()
    page.get_by_role("group", name="Números conectados fora do pool").get_by_role(
        "checkbox", name=label(second)
    ).check()
    console.api("POST", f"/api/api-keys/{key['id']}/pool", tenant.admin_key, {"whatsappNumberId": second["id"]})
    page.get_by_role("button", name="Adicionar ao pool", exact=True).click()

    # Said in the picker, next to the button that failed; the alert at the top of the page says nothing.
    picker = page.get_by_role("group", name="Números conectados fora do pool").locator("xpath=..")
    refusal = picker.get_by_role("alert")
    expect(refusal).to_contain_text("Não foi possível adicionar ao pool: O número já está no pool.")
    expect(refusal.get_by_text("the number is already in this pool (number_already_in_pool)")).to_be_hidden()
    refusal.get_by_text("detalhes").click()  # the API's own words, one click away
    expect(refusal.get_by_text("the number is already in this pool (number_already_in_pool)")).to_be_visible()
    expect(page.locator("#alert")).to_be_empty()
    expect_order(page, [first, second])  # what the API holds, read again

    # Another admin removes a number this one is about to move: the reorder is refused (4xx), said
    # in the pool's box.
    console.api("DELETE", f"/api/api-keys/{key['id']}/pool/{first['id']}", tenant.admin_key)
    page.get_by_role("button", name=f"Descer {label(first)}").click()

    refusal = page.get_by_role("region", name="Balanceamento de envios").get_by_role("alert")
    expect(refusal).to_contain_text("Não foi possível reordenar o pool: ")
    expect(refusal).to_contain_text("numberIds must list every number of the pool exactly once")
    expect_order(page, [second])
    assert pool_in_api(console, tenant, key) == [second["id"]]


def test_refusals_are_said_at_their_fields_or_where_the_screen_would_be_in_portuguese(
    console: Console, tenant: SeededTenant
) -> None:
    page = console.sign_in_as_admin(tenant)
    page.get_by_role("navigation").get_by_role("link", name="Chaves de API").click()
    form = page.get_by_role("form", name="Nova chave")
    form.get_by_label("Nome", exact=True).fill(f"refused {uuid.uuid4().hex[:8]}")
    form.get_by_role("checkbox", name="send").uncheck()

    # Checked before anything is sent: at the scopes.
    form.get_by_role("button", name="Criar chave").click()
    expect(form.get_by_role("checkbox", name="admin")).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_role("group", name="Escopos")).to_contain_text("Escolha pelo menos um escopo.")

    # Refused by the API (422, the field named): at the webhook URL, in the interface's words.
    form.get_by_role("checkbox", name="send").check()
    webhook = form.get_by_label("URL do webhook")
    webhook.fill("ftp://example.com/hook")
    form.get_by_role("button", name="Criar chave").click()
    expect(webhook).to_have_attribute("aria-invalid", "true")
    expect(webhook).to_be_focused()
    expect(form.get_by_text("Use um endereço http(s)://.")).to_be_visible()
    expect(form.get_by_role("checkbox", name="admin")).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator("#alert")).to_be_empty()

    # A screen that cannot be read says so where it would be, under its heading.
    page.evaluate("route => { location.hash = route; }", "#/keys/key_does_not_exist")
    expect(page.get_by_role("heading", level=1, name="Chave não encontrada")).to_be_visible()
    expect(page.get_by_role("main").get_by_role("alert")).to_contain_text(
        "Não foi possível carregar a chave: Não encontrado: foi apagado, ou pertence a outro cliente."
    )
    expect(page.locator("#alert")).to_be_empty()


def test_a_full_pool_says_so_and_offers_nothing_more(
    console: Console, tenant: SeededTenant, key: dict[str, Any]
) -> None:
    listed = console.api("GET", "/api/numbers", tenant.admin_key)
    for index in range(10 - len(listed)):
        digits = f"55119{uuid.uuid4().int % 10**7:07d}"
        listed.append(
            console.api("POST", "/api/numbers", tenant.admin_key, {"number": digits, "displayName": f"extra {index}"})
        )
    with_pool(console, tenant, key, listed[:10])

    page = open_editor(console, tenant, key)

    expect(pool_list(page).get_by_role("listitem")).to_have_count(10)
    expect(page.get_by_text("10 de 10 números no pool.")).to_be_visible()
    expect(page.get_by_text("O pool chegou ao limite de 10 números.", exact=False)).to_be_visible()
    expect(page.get_by_role("button", name="+ Adicionar número ao pool")).to_be_disabled()

"""Signing in to the console: who gets in, what each key sees, and where the key is kept; the
keys screen: a new key is shown once (and kept nowhere by the page), revoking asks first.

The key is the tenant's admin credential: it must live in the tab's sessionStorage only (gone
with the tab, and sent by nothing automatically), never in localStorage, a cookie or the URL,
and signing out must forget it.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from devstack.seed import SeededTenant
from tests.console.conftest import Console
from tests.e2e.conftest import Stack
from tests.support.revocation import status_within

NUMBERS_TITLE = "Números e instâncias"


def stored_everywhere(page: Page) -> dict[str, Any]:
    """What the page could keep a key in: both storages, its cookies, its URL and history."""
    return {
        "session": page.evaluate("() => Object.assign({}, sessionStorage)"),
        "local": page.evaluate("() => Object.assign({}, localStorage)"),
        "cookies": page.context.cookies(),
        "url": page.url,
        "title": page.title(),
    }


def caller(stack: Stack, key: str) -> httpx.Response:
    """`GET /api/me` with `key`, straight to the API (not through the page)."""
    return httpx.get(f"{stack.api_url}/api/me", headers={"authorization": f"Bearer {key}"}, trust_env=False)


def test_the_seeded_admin_signs_in_and_a_wrong_key_is_refused_in_words(
    console: Console, stack: Stack, screenshot: Callable[[Page, str], Path]
) -> None:
    page = console.sign_in("sb_live_" + secrets.token_urlsafe(24))

    expect(page.get_by_text("Chave recusada: ela não existe ou foi revogada.")).to_be_visible()
    expect(page.get_by_role("navigation")).to_have_count(0)

    page.get_by_label("Chave de API").fill(stack.demo.admin_key)
    page.get_by_role("button", name="Entrar").click()

    expect(page.get_by_role("heading", level=1, name=NUMBERS_TITLE)).to_be_visible()
    navigation = page.get_by_role("navigation", name="Principal")
    for screen in ("Números", "Chaves de API", "Mensagens", "Uso", "Auditoria"):
        expect(navigation.get_by_role("link", name=screen, exact=True)).to_be_visible()
    # Every seeded number is listed with its instances.
    for instance in stack.demo.instances:
        expect(page.get_by_role("link", name=instance.name, exact=True)).to_be_visible()
    screenshot(page, "numbers")

    navigation.get_by_role("link", name="Chaves de API").click()
    keys = page.get_by_role("table", name="Chaves de API deste tenant")
    for name in (f"{stack.demo.owner_tag} send", f"{stack.demo.owner_tag} agent"):
        expect(keys.get_by_role("rowheader", name=name)).to_be_visible()
    screenshot(page, "keys")


def test_a_send_key_is_refused_with_the_reason(console: Console, tenant: SeededTenant) -> None:
    page = console.sign_in(tenant.send_key)

    expect(page.get_by_text("Esta chave tem o escopo send e não abre o console.", exact=False)).to_be_visible()
    expect(page.get_by_role("navigation")).to_have_count(0)
    assert tenant.send_key not in str(stored_everywhere(page))


def test_an_agent_key_lands_on_the_calls_panel_and_sees_no_admin_screen(console: Console, tenant: SeededTenant) -> None:
    page = console.sign_in(tenant.agent_key)

    expect(page.get_by_role("heading", level=1, name="Painel de ligações")).to_be_visible()
    expect(page.get_by_text("as telas de administração precisam de uma chave admin", exact=False)).to_be_visible()
    expect(page.get_by_role("navigation").get_by_role("link")).to_have_text(["Ligações"])

    # Typing an admin screen's address leads back to the agent's landing: the calls panel.
    for route in ("#/numbers", "#/keys", f"#/keys/{tenant.send_key_id}", "#/audit"):
        page.evaluate("route => { location.hash = route; }", route)
        expect(page).to_have_url(page.url.split("#")[0] + "#/calls")
        expect(page.get_by_role("heading", level=1, name="Painel de ligações")).to_be_visible()
        expect(page.get_by_role("table", name="Chaves de API deste tenant")).to_have_count(0)
        expect(page.get_by_role("heading", level=1, name="Números e instâncias")).to_have_count(0)


def test_an_admin_sees_none_of_another_tenants_numbers_or_keys(
    console: Console, stack: Stack, tenant: SeededTenant
) -> None:
    other = stack.demo
    other_keys = console.api("GET", "/api/api-keys", other.admin_key)
    assert other_keys

    page = console.sign_in_as_admin(tenant)

    for instance in tenant.instances:
        expect(page.get_by_role("link", name=instance.name, exact=True)).to_be_visible()
    for instance in other.instances:
        expect(page.get_by_role("link", name=instance.name, exact=True)).to_have_count(0)
    for number in other.numbers:
        expect(page.get_by_text(number["displayName"], exact=False)).to_have_count(0)

    page.get_by_role("navigation").get_by_role("link", name="Chaves de API").click()
    keys = page.get_by_role("table", name="Chaves de API deste tenant")
    expect(keys.get_by_role("rowheader", name=f"{tenant.owner_tag} send")).to_be_visible()
    for key in other_keys:
        expect(keys.get_by_role("rowheader", name=key["name"])).to_have_count(0)
        expect(page.get_by_text(key["prefix"])).to_have_count(0)

    # Nor through a key editor's address: the other tenant's key is not found.
    page.evaluate("route => { location.hash = route; }", f"#/keys/{other.send_key_id}")
    expect(page.get_by_role("heading", level=1, name="Chave não encontrada")).to_be_visible()
    expect(page.get_by_text(f"{other.owner_tag} send")).to_have_count(0)


def test_the_key_lives_in_session_storage_only_and_signing_out_forgets_it(
    console: Console, tenant: SeededTenant
) -> None:
    requests: list[tuple[str, str | None]] = []
    console.page.on("request", lambda request: requests.append((request.url, request.headers.get("authorization"))))
    page = console.sign_in_as_admin(tenant)
    page.get_by_role("navigation").get_by_role("link", name="Chaves de API").click()
    expect(page.get_by_role("heading", level=1, name="Chaves de API")).to_be_visible()

    kept = stored_everywhere(page)
    assert tenant.admin_key in kept["session"].values()
    kept.pop("session")
    assert tenant.admin_key not in str(kept)
    assert tenant.admin_key[8:] not in str(kept)  # not even without its sb_live_ prefix
    # It goes to the API only as a Bearer token: never in a URL the page requests.
    api_calls = [(url, authorization) for url, authorization in requests if "/api/" in url]
    assert api_calls
    assert all(tenant.admin_key[8:] not in url for url, _ in requests)
    assert {authorization for _, authorization in api_calls} == {f"Bearer {tenant.admin_key}"}

    # A reload of the tab keeps the session (sessionStorage survives it)...
    page.reload()
    expect(page.get_by_role("heading", level=1, name="Chaves de API")).to_be_visible()

    # ...and signing out forgets the key: a reload then asks for a key again.
    page.get_by_role("button", name="Sair").click()
    expect(page.get_by_text("Você saiu. A chave foi apagada deste navegador.")).to_be_visible()
    expect(page.get_by_label("Chave de API")).to_be_visible()
    assert tenant.admin_key not in str(stored_everywhere(page))
    page.reload()
    expect(page.get_by_label("Chave de API")).to_be_visible()
    expect(page.get_by_role("navigation")).to_have_count(0)


def test_a_new_tab_does_not_inherit_the_key(console: Console, tenant: SeededTenant) -> None:
    page = console.sign_in_as_admin(tenant)

    other = page.context.new_page()
    other.goto("/console/")

    expect(other.get_by_label("Chave de API")).to_be_visible()
    assert tenant.admin_key not in str(stored_everywhere(other))


def test_a_created_key_is_shown_once_and_works_and_a_revoked_one_stops(console: Console, stack: Stack) -> None:
    tenant = stack.demo
    name = f"console {uuid.uuid4().hex[:8]}"
    page = console.sign_in_as_admin(tenant)
    page.get_by_role("navigation").get_by_role("link", name="Chaves de API").click()

    page.get_by_label("Nome", exact=True).fill(name)
    page.get_by_role("button", name="Criar chave").click()

    shown = page.get_by_role("textbox", name="Nova chave (mostrada uma vez)")
    expect(shown).to_be_visible()
    key = shown.input_value()
    assert key.startswith("sb_live_")
    me = caller(stack, key)
    assert (me.status_code, me.json()["name"], me.json()["scopes"]) == (200, name, ["send"])
    assert key not in str(stored_everywhere(page))
    keys = page.get_by_role("table", name="Chaves de API deste tenant")
    expect(keys.get_by_role("rowheader", name=name)).to_be_visible()

    page.get_by_role("button", name="Já guardei a chave").click()
    expect(page.get_by_role("textbox", name="Nova chave (mostrada uma vez)")).to_have_count(0)
    page.reload()
    expect(keys.get_by_role("rowheader", name=name)).to_be_visible()
    expect(page.get_by_text(key)).to_have_count(0)

    page.get_by_role("button", name=f"Revogar chave {name}").click()
    dialog = page.get_by_role("dialog", name=f"Revogar a chave {name}?")
    dialog.get_by_role("button", name="Cancelar").click()
    expect(keys.get_by_role("rowheader", name=name)).to_be_visible()
    assert caller(stack, key).status_code == 200

    page.get_by_role("button", name=f"Revogar chave {name}").click()
    dialog.get_by_role("button", name="Revogar").click()

    expect(page.get_by_role("status")).to_have_text(f"Chave {name} revogada.")
    expect(keys.get_by_role("rowheader", name=name)).to_have_count(0)
    assert status_within(lambda: caller(stack, key).status_code, 401) == 401


def test_english_from_the_header_is_remembered_and_the_key_is_not(console: Console, tenant: SeededTenant) -> None:
    page = console.sign_in_as_admin(tenant)

    page.get_by_role("button", name="English").click()

    expect(page.get_by_role("heading", level=1, name="Numbers and instances")).to_be_visible()
    navigation = page.get_by_role("navigation", name="Main")
    expect(navigation.get_by_role("link", name="API keys")).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.get_by_role("button", name="Sign out").click()
    page.reload()
    expect(page.get_by_role("button", name="Português")).to_be_visible()  # the language stayed
    assert tenant.admin_key not in str(stored_everywhere(page))

"""People sign in to the console with email and password: the seeded admin invites an attendant,
who signs in with the temporary password, chooses their own and lands on the calls panel; a
refusal is shown at its field, in the interface's language; a disabled person's tab is refused
at once."""

from __future__ import annotations

import secrets

import httpx
from playwright.sync_api import Page, expect

from tests.console.conftest import Console
from tests.e2e.conftest import Stack

CALLS_TITLE = "Painel de ligações"
NUMBERS_TITLE = "Números e instâncias"


def sign_in_person(page: Page, email: str, password: str) -> None:
    page.get_by_label("E-mail", exact=True).fill(email)
    page.get_by_label("Senha", exact=True).fill(password)
    page.get_by_role("button", name="Acessar com senha").click()


def test_the_seeded_admin_invites_an_attendant_who_sets_a_password_and_lands_on_the_calls_panel(
    console: Console, stack: Stack
) -> None:
    admin = next(person for person in stack.local.people if person.role == "admin")
    page = console.open()

    # A wrong password is refused at the password field, in Portuguese.
    sign_in_person(page, admin.email, "not-the-password")
    password = page.get_by_label("Senha", exact=True)
    expect(password).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_text("E-mail ou senha incorretos, ou este usuário está desativado.")).to_be_visible()

    sign_in_person(page, admin.email, admin.password)
    expect(page.get_by_role("heading", level=1, name=NUMBERS_TITLE)).to_be_visible()
    page.get_by_role("navigation", name="Principal").get_by_role("link", name="Usuários").click()
    expect(page.get_by_role("heading", level=1, name="Usuários")).to_be_visible()

    email = f"ana-{secrets.token_hex(4)}@demo.example.com"
    temporary = f"Temp{secrets.token_hex(5)}A1"
    invite = page.get_by_role("form", name="Convidar uma pessoa")
    # A short temporary password is refused at its field before anything is sent.
    invite.get_by_label("E-mail", exact=True).fill(email)
    invite.get_by_label("Senha temporária").fill("short")
    invite.get_by_role("button", name="Convidar").click()
    expect(invite.get_by_label("Senha temporária")).to_have_attribute("aria-invalid", "true")
    expect(invite.get_by_text("A senha precisa de pelo menos 12 caracteres.")).to_be_visible()
    invite.get_by_label("Senha temporária").fill(temporary)
    invite.get_by_role("button", name="Convidar").click()
    expect(page.get_by_role("row", name=email)).to_be_visible()

    page.get_by_role("button", name="Sair").click()
    sign_in_person(page, email, temporary)
    expect(page.get_by_role("heading", level=1, name="Escolha sua senha")).to_be_visible()
    chosen = f"Mine{secrets.token_hex(5)}B2"
    page.get_by_label("Nova senha", exact=True).fill(chosen)
    page.get_by_label("Repita a nova senha").fill(chosen + "x")
    page.get_by_role("button", name="Salvar senha e acessar").click()
    expect(page.get_by_label("Repita a nova senha")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Repita a nova senha").fill(chosen)
    page.get_by_role("button", name="Salvar senha e acessar").click()

    expect(page.get_by_role("heading", level=1, name=CALLS_TITLE)).to_be_visible()
    navigation = page.get_by_role("navigation", name="Principal")
    expect(navigation.get_by_role("link", name="Usuários")).to_have_count(0)
    # The token is the tab's: kept in sessionStorage, never in localStorage or a cookie.
    assert not page.context.cookies()
    assert "accessToken" not in str(page.evaluate("() => Object.assign({}, localStorage)"))


def test_a_disabled_attendant_is_refused_at_once_with_the_token_their_tab_holds(console: Console, stack: Stack) -> None:
    attendant = next(person for person in stack.local.people if person.role == "attendant")
    page = console.open()
    sign_in_person(page, attendant.email, attendant.password)
    expect(page.get_by_role("heading", level=1, name=CALLS_TITLE)).to_be_visible()
    token = page.evaluate("() => JSON.parse(sessionStorage.getItem('switchboard.person')).accessToken")
    me = httpx.get(f"{stack.api_url}/api/me", headers={"authorization": f"Bearer {token}"}, trust_env=False)
    assert me.status_code == 200

    disabled = stack.api("PATCH", f"/api/users/{attendant.user_id}", key=stack.demo.admin_key, json={"enabled": False})
    assert disabled.status_code == 200, disabled.text
    try:
        me = httpx.get(f"{stack.api_url}/api/me", headers={"authorization": f"Bearer {token}"}, trust_env=False)
        assert me.status_code == 401
        page.reload()
        expect(page.get_by_role("heading", level=1, name="Entrar no console")).to_be_visible()
    finally:
        stack.api("PATCH", f"/api/users/{attendant.user_id}", key=stack.demo.admin_key, json={"enabled": True})

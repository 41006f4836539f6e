"""People sign in to the console with email and password: the seeded admin invites an attendant,
who signs in with the temporary password, chooses their own and lands on the calls panel; a
refusal is shown at its field, in the interface's language; a disabled person's tab is refused
at once, on the API and on live updates, while an app's API key goes on working; signing out ends
the person's tokens; a person turns on an authenticator app from the console (after their
password), types its code at the next sign-in and turns it off with their password and its
code; another tenant's person sees nothing of this one; an English browser gets the English
console."""

from __future__ import annotations

import base64
import hmac
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from devstack.seed import SeededTenant
from tests.console.axe import assert_accessible
from tests.console.conftest import VIEWPORT, Console
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

    expect(page.locator("body")).to_have_attribute("data-live", "open")
    disabled = stack.api("PATCH", f"/api/users/{attendant.user_id}", key=stack.demo.admin_key, json={"enabled": False})
    assert disabled.status_code == 200, disabled.text
    try:
        me = httpx.get(f"{stack.api_url}/api/me", headers={"authorization": f"Bearer {token}"}, trust_env=False)
        assert me.status_code == 401
        # Their live connection was closed and no new ticket is given: the open tab signs them
        # out by itself, saying why.
        expect(page.get_by_role("heading", level=1, name="Entrar no console")).to_be_visible()
        expect(page.get_by_role("alert")).to_contain_text("Sua sessão deixou de valer")
        # An app's API key of the same tenant goes on working.
        assert stack.api("GET", "/api/connections", key=stack.demo.agent_key).status_code == 200
        page.reload()
        expect(page.get_by_role("heading", level=1, name="Entrar no console")).to_be_visible()
    finally:
        stack.api("PATCH", f"/api/users/{attendant.user_id}", key=stack.demo.admin_key, json={"enabled": True})


def bearer(stack: Stack, token: str, path: str = "/api/me") -> int:
    answer = httpx.get(f"{stack.api_url}{path}", headers={"authorization": f"Bearer {token}"}, trust_env=False)
    return answer.status_code


def test_signing_out_ends_the_persons_tokens_and_another_tenants_person_sees_nothing_of_this_one(
    console: Console, stack: Stack, tenant: SeededTenant
) -> None:
    admin = next(person for person in stack.local.people if person.role == "admin")
    page = console.open()
    sign_in_person(page, admin.email, admin.password)
    expect(page.get_by_role("heading", level=1, name=NUMBERS_TITLE)).to_be_visible()
    for instance in stack.demo.instances:
        expect(page.get_by_role("link", name=instance.name, exact=True)).to_be_visible()
    for instance in tenant.instances:
        expect(page.get_by_role("link", name=instance.name, exact=True)).to_have_count(0)
    token = page.evaluate("() => JSON.parse(sessionStorage.getItem('switchboard.person')).accessToken")
    assert bearer(stack, token, f"/api/instances/{tenant.instances[0].name}") == 404

    page.get_by_role("button", name="Sair").click()

    expect(page.get_by_text("Você saiu: sua sessão foi encerrada neste e em todos os seus aparelhos.")).to_be_visible()
    stack.wait_for(lambda: bearer(stack, token) == 401)


def totp(secret: str, at: float) -> str:
    """RFC 6238 (SHA-1, 30 s, 6 digits), as an authenticator app computes it."""
    key = base64.b32decode(secret + "=" * (-len(secret) % 8), casefold=True)
    digest = hmac.new(key, (int(at) // 30).to_bytes(8, "big"), "sha1").digest()
    offset = digest[-1] & 15
    return f"{(int.from_bytes(digest[offset : offset + 4], 'big') & 0x7FFFFFFF) % 10**6:06d}"


def current_code(secret: str) -> str:
    """The code an app shows now, with a few seconds of its 30 left: the pool checks it against
    the current step only, so a code typed as the step turns would be refused."""
    if 30 - time.time() % 30 < 3:
        time.sleep(30 - time.time() % 30 + 0.1)
    return totp(secret, time.time())


def wrong_code(secret: str) -> str:
    """A code of six digits the app does not show now: the current one plus one."""
    return f"{(int(totp(secret, time.time())) + 1) % 10**6:06d}"


def test_a_person_turns_on_an_authenticator_app_from_the_console_and_then_signs_in_with_its_code(
    console: Console, stack: Stack, monkeypatch: pytest.MonkeyPatch, screenshot: Callable[[Page, str], Path]
) -> None:
    monkeypatch.setenv("MOTO_COGNITO_IDP_USER_POOL_ENABLE_TOTP", "true")  # the local pool checks the codes
    email, password = f"bia-{secrets.token_hex(4)}@demo.example.com", f"Pass{secrets.token_hex(5)}A1"
    body = {"email": email, "role": "attendant", "temporaryPassword": password}
    invited = stack.api("POST", "/api/users", key=stack.demo.admin_key, json=body)
    assert invited.status_code == 201, invited.text
    cognito = stack.local.cognito()
    pool_id = stack.local.user_pools["UserPool"]
    cognito.admin_set_user_password(UserPoolId=pool_id, Username=email, Password=password, Permanent=True)
    page = console.open()
    sign_in_person(page, email, password)
    expect(page.get_by_role("heading", level=1, name=CALLS_TITLE)).to_be_visible()

    page.get_by_role("navigation", name="Principal").get_by_role("link", name="Sua conta").click()
    expect(page.get_by_role("heading", level=1, name="Sua conta")).to_be_visible()
    two_step = page.get_by_role("region", name="Verificação em duas etapas")
    expect(two_step).to_contain_text("Desativada: você entra só com a senha.")
    two_step.get_by_role("button", name="Ativar com um aplicativo autenticador").click()
    # The tab's token alone makes no secret: the person's password first, refused at its field.
    own_password = two_step.get_by_label("Sua senha", exact=True)
    own_password.fill(password + "x")
    two_step.get_by_role("button", name="Continuar").click()
    expect(own_password).to_have_attribute("aria-invalid", "true")
    expect(two_step.get_by_text("Esta não é a sua senha: nada mudou.")).to_be_visible()
    own_password.fill(password)
    two_step.get_by_role("button", name="Continuar").click()
    secret = two_step.get_by_label("Chave para digitar no aplicativo").input_value().replace(" ", "")
    link = two_step.get_by_role("link", name="Abrir no aplicativo autenticador")
    expect(link).to_have_attribute("href", re.compile(rf"^otpauth://totp/switchboard:.+\?secret={secret}&"))
    assert_accessible(page, "turning on an authenticator app")
    screenshot(page, "account-authenticator")
    code = two_step.get_by_label("Código de 6 dígitos")
    code.fill(wrong_code(secret))
    two_step.get_by_role("button", name="Confirmar e ativar").click()
    expect(code).to_have_attribute("aria-invalid", "true")
    expect(two_step.get_by_text("O código não confere: digite o que o aplicativo mostra agora.")).to_be_visible()
    code.fill(current_code(secret))
    two_step.get_by_role("button", name="Confirmar e ativar").click()
    expect(two_step).to_contain_text("Ativada: ao entrar, o console pede o código do aplicativo.")

    page.get_by_role("button", name="Sair").click()
    expect(page.get_by_text("Você saiu: sua sessão foi encerrada neste e em todos os seus aparelhos.")).to_be_visible()
    # Tokens say when they were issued in whole seconds: one of the second they signed out in is
    # refused with the rest, so they sign in again in a later one.
    signed_out = int(time.time())
    stack.wait_for(lambda: int(time.time()) > signed_out)
    sign_in_person(page, email, password)
    expect(page.get_by_role("heading", level=1, name="Código do aplicativo autenticador")).to_be_visible()
    code = page.get_by_label("Código de 6 dígitos")
    code.fill(wrong_code(secret))
    page.get_by_role("button", name="Confirmar e acessar").click()
    expect(code).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_text("O código não confere: digite o que o aplicativo mostra agora.")).to_be_visible()

    code.fill(current_code(secret))
    page.get_by_role("button", name="Confirmar e acessar").click()

    expect(page.get_by_role("heading", level=1, name=CALLS_TITLE)).to_be_visible()

    # Turning it off takes the password and the app's current code: a wrong code changes nothing.
    page.get_by_role("navigation", name="Principal").get_by_role("link", name="Sua conta").click()
    two_step = page.get_by_role("region", name="Verificação em duas etapas")
    two_step.get_by_role("button", name="Desativar a verificação em duas etapas").click()
    two_step.get_by_label("Sua senha", exact=True).fill(password)
    code = two_step.get_by_label("Código de 6 dígitos")
    code.fill(wrong_code(secret))
    two_step.get_by_role("button", name="Desativar a verificação em duas etapas").click()
    expect(code).to_have_attribute("aria-invalid", "true")
    expect(two_step.get_by_text("O código não confere com o aplicativo em uso agora: nada mudou.")).to_be_visible()
    code.fill(current_code(secret))
    two_step.get_by_role("button", name="Desativar a verificação em duas etapas").click()
    expect(two_step).to_contain_text("Desativada: você entra só com a senha.")


def test_an_english_browser_gets_the_english_console_the_first_time(browser: Browser, stack: Stack) -> None:
    context = browser.new_context(base_url=stack.api_url, viewport=VIEWPORT, locale="en-US")
    try:
        page = context.new_page()
        page.goto("/console/")
        expect(page.get_by_role("heading", level=1, name="Sign in to the console")).to_be_visible()
        expect(page.locator("html")).to_have_attribute("lang", "en")
        # The choice made in the header wins from then on.
        page.get_by_role("button", name="Português").click()
        page.reload()
        expect(page.get_by_role("heading", level=1, name="Entrar no console")).to_be_visible()
    finally:
        context.close()

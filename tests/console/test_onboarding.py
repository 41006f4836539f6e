"""The console does the whole job without a terminal, in headless Chromium against the local stack:
the seeded admin connects a new wuzapi number (provider, number, instance, the provider's QR code,
the simulator's phone scanning it, connected, a test message SENT) and sees a banner on every
screen once it disconnects; an attendant hears an incoming call ring, sees who calls, answers
with one click and gets its audio, and the busy box empties when the call ends; axe-core finds no
violation on any screen, wide or phone-sized."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from devstack.seed import SeededPerson, SeededTenant
from tests.console.axe import assert_accessible
from tests.console.conftest import Console
from tests.console.test_people_signin import sign_in_person
from tests.e2e.conftest import Stack, calls_instance

CALLER = "5511977776666"


def admin_person(stack: Stack) -> SeededPerson:
    return next(person for person in stack.local.people if person.role == "admin")


def signed_in_admin(console: Console, stack: Stack) -> Page:
    admin = admin_person(stack)
    page = console.open()
    sign_in_person(page, admin.email, admin.password)
    expect(page.get_by_role("heading", level=1, name="Números e instâncias")).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    return page


def test_the_admin_connects_a_new_wuzapi_number_from_the_console_and_a_test_message_is_sent(
    console: Console, stack: Stack, screenshot: Callable[[Page, str], Path]
) -> None:
    session, token = f"loja-{uuid.uuid4().hex[:8]}", secrets.token_urlsafe(24)
    digits = "55" + str(uuid.uuid4().int % 10**11).zfill(11)
    # A wuzapi user created on the provider's side, no phone linked yet: what an operator has
    # before switchboard. Its webhook is switchboard's to set.
    stack.sim.create_instance(id=session, token=token, flavour="wuzapi", number=digits, connected=False, paired=False)
    page = signed_in_admin(console, stack)
    page.get_by_role("link", name="Conectar um número").click()
    expect(page.get_by_role("heading", level=1, name="Conectar um número")).to_be_visible()

    provider = page.get_by_role("form", name="1. Servidor do provedor")
    provider.get_by_label("Tipo").select_option("wuzapi")
    provider.get_by_label("Nome", exact=True).fill(f"wuzapi {session}")
    provider.get_by_label("URL base").fill(f"{stack.sim_url}/wuzapi")
    provider.get_by_label("Segredo do webhook").fill(secrets.token_urlsafe(32))
    provider.get_by_role("button", name="Salvar servidor").click()
    webhook_url = provider.get_by_label("URL do webhook para colar no provedor")
    expect(webhook_url).to_have_value(re.compile(rf"^{re.escape(stack.api_url)}/webhooks/prv_\w+$"))
    expect(provider.get_by_role("button", name="Copiar")).to_be_visible()

    number = page.get_by_role("form", name="2. Número")
    number.get_by_label("Número (com código do país)").fill("12")  # refused by the API, at the field
    number.get_by_label("Nome de exibição").fill("Loja Centro")
    number.get_by_role("button", name="Salvar número").click()
    field = number.get_by_label("Número (com código do país)")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(number.get_by_text("Use o número com código do país e DDD, só dígitos")).to_be_visible()
    field.fill(digits)
    number.get_by_role("button", name="Salvar número").click()

    instance = page.get_by_role("form", name="3. Instância")
    instance.get_by_label("Nome da instância").fill(session)
    instance.get_by_label("Nome da sessão no provedor").fill(session)
    instance.get_by_label("Token da instância").fill(token)
    instance.get_by_role("button", name="Salvar instância").click()

    pairing = page.get_by_role("region", name=f"WhatsApp de {session}")
    pairing.get_by_role("button", name=f"Conectar {session}").click()
    code = pairing.get_by_role("img", name=f"Código QR para conectar {session}")
    expect(code).to_be_visible()
    first = code.get_attribute("src")
    assert first is not None and first.startswith("data:image/png;base64,")
    stack.sim.expire_code(session)
    expect(code).not_to_have_attribute("src", first)  # the provider's next code, read again by itself
    assert_accessible(page, "connect a number, its code shown")
    pairing.scroll_into_view_if_needed()
    screenshot(page, "connect-number-qr")

    stack.sim.scan(session)

    expect(pairing.get_by_text(f"Pronto: {session} está conectada ao WhatsApp.")).to_be_visible()
    expect(pairing.locator("[data-field=connection]")).to_contain_text("conectado")
    test = page.get_by_role("form", name=f"Mensagem de teste por {session}")
    test.get_by_label("Para (o seu celular)").fill(CALLER)
    test.get_by_role("button", name="Enviar mensagem de teste").click()
    expect(test.locator("[data-field=test-result]")).to_contain_text("Mensagem de teste enviada: SENT")
    sent = [message for message in stack.sim.sent() if message["instance"] == session]
    assert [(message["phone"], message["body"]) for message in sent] == [(CALLER, "Mensagem de teste do switchboard")]
    screenshot(page, "connect-number-connected")

    # The number on the summary, connected; then logged out from its own screen: a banner on
    # every screen says so, with what to do.
    page.get_by_role("link", name="Todos os números").first.click()
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=session, exact=True))
    expect(row.locator("[data-field=connection]")).to_contain_text("conectado")
    page.get_by_role("searchbox", name="Buscar por número, nome ou instância").fill("Loja Centro")
    expect(page.get_by_role("table", name="Números deste cliente").locator("tbody tr")).to_have_count(1)
    row.get_by_role("link", name=session, exact=True).click()
    expect(page.get_by_role("heading", level=1, name=f"Instância {session}")).to_be_visible()
    page.get_by_role("button", name=f"Desconectar o WhatsApp de {session}").click()
    page.get_by_role("dialog").get_by_role("button", name="Desconectar o WhatsApp").click()
    banner = page.get_by_role("region", name="Avisos dos números")
    expect(banner).to_contain_text("Loja Centro) está desconectado.")
    page.get_by_role("navigation", name="Principal").get_by_role("link", name="Chaves de API").click()
    expect(banner).to_contain_text("Loja Centro) está desconectado.")
    expect(banner.get_by_role("link", name=f"Reconectar {session}")).to_be_visible()


@pytest.fixture
def attended(stack: Stack) -> tuple[SeededTenant, SeededPerson]:
    """A tenant of its own (one calls connection, limit 1) and its seeded attendant."""
    tenant = stack.new_tenant()
    assert tenant.connected, tenant.notes
    people = stack.local.seed_people(tenant.admin_key, tenant.owner_tag)
    return tenant, next(person for person in people if person.role == "attendant")


def test_an_incoming_call_rings_shows_the_caller_is_answered_with_audio_in_one_click_and_leaves_the_busy_box(
    console: Console, stack: Stack, attended: tuple[SeededTenant, SeededPerson], screenshot: Callable[[Page, str], Path]
) -> None:
    tenant, attendant = attended
    line = calls_instance(tenant)
    sim_id = next(instance.sim_id for instance in tenant.instances if instance.name == line)
    page = console.page
    page.context.grant_permissions(["notifications"])
    console.open()
    sign_in_person(page, attendant.email, attendant.password)
    expect(page.get_by_role("heading", level=1, name="Painel de ligações")).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    panel = page.get_by_role("region", name=f"Conexão {line}")

    call_id = stack.sim.incoming_call(sim_id, CALLER)

    caller = "+55 11 97777-6666"
    ringing = page.locator("[data-field=ringing]")
    expect(ringing.get_by_role("alert")).to_contain_text(f"{caller} está ligando")
    expect(page.locator("body")).to_have_attribute("data-ring", "on")
    row = panel.get_by_role("table", name=f"Ligações vivas em {line}").locator(f"tr[data-call='{call_id}']")
    expect(row.locator("[data-field=from]")).to_have_text(caller)
    expect(row).to_contain_text("recebida")
    expect(page.locator("main")).not_to_contain_text("null")
    assert_accessible(page, "the calls panel, a call ringing")
    screenshot(page, "calls-panel-ringing")

    ringing.get_by_role("button", name=f"Atender a ligação de {caller}").click()

    expect(row).to_contain_text(f"{attendant.email} (você)")
    expect(row).to_contain_text("mídia anexada")
    expect(page.locator("body")).to_have_attribute("data-ring", "off")
    expect(ringing).to_be_empty()
    session = stack.wait_for(lambda: stack.sim.media_session(sim_id, call_id))
    assert session["connected"], session

    # The line's one slot is taken: a dial is refused and the box lists the call that holds it.
    dial = panel.get_by_role("form", name=f"Discar de {line}")
    dial.get_by_label("Número a discar").fill("5511955554444")
    dial.get_by_role("button", name="Discar", exact=True).click()
    busy = panel.locator("[data-field=line-busy]")
    expect(busy).to_contain_text("Linha ocupada")
    expect(busy.get_by_role("listitem")).to_contain_text(caller)

    stack.sim.call_action(sim_id, call_id, "end")

    expect(panel.get_by_role("table", name=f"Ligações vivas em {line}")).to_have_count(0)
    expect(busy).to_have_count(0)


SCREENS = [
    ("#/numbers", "Números e instâncias"),
    ("#/numbers/connect", "Conectar um número"),
    ("#/calls", "Painel de ligações"),
    ("#/keys", "Chaves de API"),
    ("#/messages", None),
    ("#/usage", None),
    ("#/audit", None),
    ("#/users", "Usuários"),
    ("#/account", "Sua conta"),
]


@pytest.mark.parametrize("width", [1280, 360])
def test_axe_finds_no_violation_on_any_screen_wide_or_phone_sized(console: Console, stack: Stack, width: int) -> None:
    page = console.page
    page.set_viewport_size({"width": width, "height": 800})
    page.goto("/console/")
    expect(page.get_by_role("heading", level=1, name="Entrar no console")).to_be_visible()
    assert_accessible(page, f"sign-in at {width} px")
    page = signed_in_admin(console, stack)
    demo_instance = stack.demo.instances[0].name
    key_id = stack.demo.send_key_id
    screens = [*SCREENS, (f"#/instances/{demo_instance}", f"Instância {demo_instance}"), (f"#/keys/{key_id}", None)]
    for route, title in screens:
        page.evaluate("route => { location.hash = route; }", route)
        heading = page.get_by_role("heading", level=1)
        if title:
            expect(heading).to_have_text(title)
        else:
            expect(heading).to_be_visible()
        assert_accessible(page, f"{route} at {width} px")

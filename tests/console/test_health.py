"""The numbers screen shows each instance's health as the pool sees it, and an instance's own screen
lets an admin edit its settings: a number WhatsApp starts refusing with 463 turns "pausado para
novos contatos" on the open screen without a reload (and the banner says so on every screen); the
spam guard switch saves and survives one; a refused value is shown at its field."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from devstack.seed import SeededTenant
from tests.console.conftest import Console
from tests.e2e.conftest import Stack

NEW_RECIPIENTS = [f"55119666601{index:02d}" for index in range(6)]


def numbers_screen(console: Console, tenant: SeededTenant) -> Page:
    page = console.sign_in_as_admin(tenant)
    page.get_by_role("link", name="Números").click()
    expect(page.get_by_role("heading", level=1, name="Números e instâncias")).to_be_visible()
    return page


def instance_row(page: Page, name: str) -> Locator:
    """The instance's entry in its number's row of the numbers table."""
    return page.get_by_role("listitem").filter(has=page.get_by_role("link", name=name, exact=True))


def instance_screen(console: Console, tenant: SeededTenant, name: str) -> Page:
    page = numbers_screen(console, tenant)
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", level=1, name=f"Instância {name}")).to_be_visible()
    return page


def send(stack: Stack, tenant: SeededTenant, to: str, text: str) -> dict[str, Any]:
    answer = stack.api("POST", "/api/messages", key=tenant.send_key, json={"to": to, "text": text})
    assert answer.status_code == 202, answer.text

    def finished() -> dict[str, Any] | None:
        message = stack.api("GET", f"/api/messages/{answer.json()['id']}", key=tenant.send_key).json()
        return message if message["status"] in ("SENT", "FAILED") else None

    return stack.wait_for(finished, timeout=30)


def test_a_number_answering_463_shows_paused_for_new_contacts_live(
    console: Console, stack: Stack, tenant: SeededTenant, screenshot: Callable[[Page, str], Path]
) -> None:
    assert tenant.pool_mode and tenant.connected, tenant.notes
    first = send(stack, tenant, "5511966660001", "hello")
    assert first["status"] == "SENT", first
    paused = first["instance"]
    healthy = [
        instance.name for instance in tenant.instances if instance.kind == "messages" and instance.name != paused
    ]
    sim_id = next(instance.sim_id for instance in tenant.instances if instance.name == paused)

    page = numbers_screen(console, tenant)
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    expect(instance_row(page, paused)).to_contain_text("saudável")

    stack.sim.send_error(sim_id, "463")
    for to in NEW_RECIPIENTS:
        send(stack, tenant, to, f"welcome {to}")
    health = console.api("GET", f"/api/instances/{paused}/health", key=tenant.admin_key)
    assert health["state"] == "paused_for_new_contacts", health

    # No reload: the number.health.changed frame made the screen read the health again.
    row = instance_row(page, paused)
    expect(row).to_contain_text("pausado para novos contatos")
    expect(row).to_contain_text("Pausa até")
    reasons = row.get_by_role("list", name=f"Motivos da saúde de {paused}")
    expect(reasons).to_contain_text("463")
    for name in healthy:
        expect(instance_row(page, name)).to_contain_text("saudável")
    banner = page.get_by_role("region", name="Avisos dos números")
    expect(banner).to_contain_text(f"{paused} (")
    expect(banner).to_contain_text("está pausada para novos contatos.")
    expect(banner.get_by_role("link", name=f"Ver {paused}")).to_be_visible()
    screenshot(page, "numbers-health")
    stack.sim.send_error(sim_id, None)


def test_the_spam_guard_switch_saves_keeps_the_rest_of_the_instance_and_survives_a_reload(
    console: Console, tenant: SeededTenant
) -> None:
    name = next(instance.name for instance in tenant.instances if instance.kind == "messages")
    seeded = console.api("GET", f"/api/instances/{name}", key=tenant.admin_key)
    assert seeded["spamguardEnabled"] is False
    identity = {field: seeded[field] for field in ("providerId", "providerInstanceId", "numberId", "kind")}
    # A priority other than the route's default: a save that dropped it would put it back to 0.
    before = console.api("PUT", f"/api/instances/{name}", key=tenant.admin_key, json=identity | {"priority": 7})
    page = instance_screen(console, tenant, name)
    form = page.get_by_role("form", name=f"Configuração de {name}")
    switch = form.get_by_role("checkbox", name="Proteção contra spam", exact=False)
    expect(switch).not_to_be_checked()
    form.get_by_label("ID da caixa de entrada (inboxId)").fill("42")
    switch.check()
    form.get_by_role("button", name=f"Salvar configuração de {name}").click()
    expect(page.get_by_role("status")).to_contain_text(f"Configuração de {name} salva.")

    after = console.api("GET", f"/api/instances/{name}", key=tenant.admin_key)
    assert (after["spamguardEnabled"], after["inboxId"]) == (True, 42)
    unchanged = [
        "providerId",
        "providerInstanceId",
        "numberId",
        "priority",
        "kind",
        "ownerTag",
        "tokenHint",
        "eventsWebhookUrl",
    ]
    assert {field: after[field] for field in unchanged} == {field: before[field] for field in unchanged}

    page.reload()
    form = page.get_by_role("form", name=f"Configuração de {name}")
    expect(form.get_by_role("checkbox", name="Proteção contra spam", exact=False)).to_be_checked()
    expect(form.get_by_label("ID da caixa de entrada (inboxId)")).to_have_value("42")

    # A refused value is shown at its field, in the interface's words, and nothing changes.
    webhook = form.get_by_label("URL do webhook de eventos")
    webhook.fill("ftp://example.com/events")
    form.get_by_role("button", name=f"Salvar configuração de {name}").click()
    expect(webhook).to_have_attribute("aria-invalid", "true")
    expect(webhook).to_have_accessible_description(re.compile("Use um endereço https://"))
    assert console.api("GET", f"/api/instances/{name}", key=tenant.admin_key)["eventsWebhookUrl"] is None

    # Put it back: the module's tenant is shared.
    console.api(
        "PUT",
        f"/api/instances/{name}",
        key=tenant.admin_key,
        json=identity | {"priority": seeded["priority"], "spamguardEnabled": False, "inboxId": None},
    )


def test_a_meta_number_shows_connected_and_a_restriction_the_graph_api_reports_shows_paused_live(
    console: Console, stack: Stack, tenant: SeededTenant
) -> None:
    meta = next(instance for instance in tenant.instances if instance.flavour == "meta")
    page = numbers_screen(console, tenant)
    expect(page.locator("body")).to_have_attribute("data-live", "open")
    row = instance_row(page, meta.name)
    expect(row).to_contain_text("conectado")
    expect(row).not_to_contain_text("desconectado")
    expect(row).to_contain_text("saudável")

    # Meta restricts the number; the next reconciliation reads its phone number node.
    stack.sim.number_status(meta.sim_id, status="RESTRICTED")
    assert stack.local.functions is not None  # a started stack serves its functions
    stack.local.functions.invoke(
        "ReconcileSchedulerFunction", {"source": "aws.events", "detail-type": "Scheduled Event"}
    )

    expect(row).to_contain_text("pausado para novos contatos", timeout=30_000)
    expect(row.get_by_role("list", name=f"Motivos da saúde de {meta.name}")).to_contain_text(
        "a Meta restringiu o número"
    )
    expect(row).to_contain_text("conectado")
    stack.sim.number_status(meta.sim_id, status="CONNECTED")

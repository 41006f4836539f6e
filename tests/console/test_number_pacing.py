"""An instance's screen lets an admin give its number its own sending pace: the deployment's default
shows in each empty field, a saved override survives a reload, and an out-of-range value is refused
at its field, in pt-BR, with nothing changed."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from devstack.seed import SeededTenant
from tests.console.conftest import Console
from tests.console.test_health import instance_screen


def pacing_of(console: Console, tenant: SeededTenant, number_id: str) -> dict[str, object] | None:
    number = console.api("GET", f"/api/numbers/{number_id}", key=tenant.admin_key)
    return number["pacing"]  # type: ignore[no-any-return]  # the API's JSON answer


def test_an_admin_saves_a_numbers_own_pace_sees_it_after_a_reload_and_a_refusal_in_words(
    console: Console, tenant: SeededTenant
) -> None:
    number = console.api("GET", "/api/numbers", key=tenant.admin_key)[0]
    defaults = number["pacingDefaults"]
    assert number["pacing"] is None
    digits = number["number"]
    phone = f"+55 {digits[2:4]} {digits[4:-4]}-{digits[-4:]}"
    name = next(instance.name for instance in tenant.instances if instance.number_id == number["id"])
    page: Page = instance_screen(console, tenant, name)
    form = page.get_by_role("form", name=f"Ritmo de envio de {phone}")
    rate, burst = form.get_by_label("Mensagens por minuto"), form.get_by_label("Rajada (mensagens de uma vez)")
    # Empty fields follow the deployment's default, which each shows as its placeholder and hint.
    expect(rate).to_have_value("")
    expect(rate).to_have_attribute("placeholder", f"{defaults['messagesPerMinute']:g}")
    expect(burst).to_have_accessible_description(f"Vazio: o padrão, {defaults['burst']}.")

    rate.fill("12")
    burst.fill("3")
    form.get_by_role("button", name=f"Salvar ritmo de {phone}").click()

    expect(page.get_by_role("status")).to_contain_text(f"Ritmo de {phone} salvo.")
    saved = pacing_of(console, tenant, number["id"])
    assert saved is not None and (saved["messagesPerMinute"], saved["burst"], saved["newContactsMax"]) == (12, 3, None)
    page.reload()
    form = page.get_by_role("form", name=f"Ritmo de envio de {phone}")
    expect(form.get_by_label("Mensagens por minuto")).to_have_value("12")
    expect(form.get_by_label("Rajada (mensagens de uma vez)")).to_have_value("3")
    expect(form.get_by_label("Máximo de novos contatos por dia")).to_have_value("")

    # A burst of 0 is refused by the API: said at the field, in Portuguese, and the saved pace stays.
    burst = form.get_by_label("Rajada (mensagens de uma vez)")
    burst.fill("0")
    form.get_by_role("button", name=f"Salvar ritmo de {phone}").click()
    expect(burst).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_text("Precisa ser pelo menos 1.")).to_be_visible()
    expect(burst).to_be_focused()
    assert pacing_of(console, tenant, number["id"]) == saved

    # Back to the default (the module's tenant is shared).
    form.get_by_role("button", name=f"Usar o ritmo padrão em {phone}").click()
    expect(page.get_by_role("status")).to_contain_text(f"{phone} voltou ao ritmo padrão.")
    assert pacing_of(console, tenant, number["id"]) is None
    expect(
        page.get_by_role("form", name=f"Ritmo de envio de {phone}").get_by_label("Mensagens por minuto")
    ).to_have_value("")

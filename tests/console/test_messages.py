"""A message sent through the API, looked up in the console: its status, source number and the
pool decision's trace, as the admin reads them when a customer asks "which number sent this?"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.console.conftest import Console
from tests.console.test_pool_editor import phone
from tests.e2e.conftest import Stack

RECIPIENT = "5511944440001"


def sent_message(stack: Stack) -> dict[str, Any]:
    """Sent with the seeded send key (pool mode over the demo's numbers), once the worker is done."""
    answer = stack.api(
        "POST", "/api/messages", key=stack.demo.send_key, json={"to": RECIPIENT, "text": "hello from the console test"}
    )
    assert answer.status_code == 202, answer.text
    path = f"/api/messages/{answer.json()['id']}"

    def finished() -> dict[str, Any] | None:
        message: dict[str, Any] = stack.api("GET", path, key=stack.demo.send_key).json()
        return message if message["status"] in ("SENT", "FAILED") else None

    return stack.wait_for(finished, timeout=15)


def test_a_message_sent_through_the_api_shows_its_source_number_and_trace(
    console: Console, stack: Stack, screenshot: Callable[[Page, str], Path]
) -> None:
    message = sent_message(stack)
    assert message["status"] == "SENT", message
    page = console.sign_in(stack.demo.admin_key)
    page.get_by_role("navigation").get_by_role("link", name="Mensagens").click()

    page.get_by_label("ID da mensagem").fill(message["id"])
    page.get_by_role("button", name="Buscar mensagem").click()

    expect(page).to_have_url(f"{stack.api_url}/console/#/messages/{message['id']}")
    details = page.get_by_role("region", name=f"Mensagem {message['id']}")
    expect(details).to_contain_text("enviada")
    expect(details).to_contain_text(phone(message["sourceNumber"]))
    expect(details).to_contain_text(message["instance"])
    trace = page.get_by_role("region", name="Como o número foi escolhido").get_by_role("listitem")
    expect(trace.filter(has_text="Número escolhido")).to_have_count(1)
    resolved = next(event["data"] for event in message["trace"] if event["stage"] == "pool.number.resolved")
    expect(trace.filter(has_text="Número escolhido")).to_contain_text(phone(resolved["resolvedNumber"]))
    expect(trace).to_have_count(len(message["trace"]))
    page.get_by_role("region", name="Como o número foi escolhido").evaluate("box => box.scrollIntoView()")
    screenshot(page, "message-trace")


def test_an_unknown_message_is_refused_in_words(console: Console, stack: Stack) -> None:
    page = console.sign_in_as_admin(stack.demo)
    page.evaluate("route => { location.hash = route; }", "#/messages/msg_does_not_exist")

    expect(page.get_by_role("alert")).to_contain_text("Não foi possível ler a mensagem msg_does_not_exist: ")
    expect(page.get_by_role("region", name="Como o número foi escolhido")).to_have_count(0)


def test_a_message_refused_for_the_window_says_why_in_words_and_shows_the_contacts_window(
    console: Console, stack: Stack
) -> None:
    demo = stack.demo
    cloud = next(instance for instance in demo.instances if instance.flavour == "meta")
    created = stack.api(
        "POST",
        "/api/api-keys",
        key=demo.admin_key,
        json={"name": "cloud sender", "scopes": ["send"], "defaultNumber": cloud.number},
    )
    assert created.status_code == 201, created.text
    answer = stack.api("POST", "/api/messages", key=created.json()["key"], json={"to": "5511944440077", "text": "oi"})
    assert answer.status_code == 202, answer.text
    path = f"/api/messages/{answer.json()['id']}"

    def ended() -> dict[str, Any] | None:
        message: dict[str, Any] = stack.api("GET", path, key=demo.admin_key).json()
        return message if message["status"] == "FAILED" else None

    failed = stack.wait_for(ended)
    assert failed["failureReason"] == "outside_service_window"
    page = console.sign_in_as_admin(demo)

    page.evaluate("route => { location.hash = route; }", f"#/messages/{failed['id']}")

    details = page.get_by_role("region", name=f"Mensagem {failed['id']}")
    expect(details).to_contain_text("fora da janela de atendimento de 24 h")
    window = page.get_by_role("region", name="Janela de atendimento").get_by_role("listitem")
    expect(window.filter(has_text=phone(cloud.number))).to_contain_text("fechada")
    expect(window.filter(has_text=phone(cloud.number))).to_contain_text("o contato nunca escreveu a este número")


def test_a_cloud_numbers_templates_are_listed_with_their_status(
    console: Console, stack: Stack, screenshot: Callable[[Page, str], Path]
) -> None:
    demo = stack.demo
    cloud = next(instance for instance in demo.instances if instance.flavour == "meta")
    page = console.sign_in_as_admin(demo)
    page.get_by_role("navigation").get_by_role("link", name="Números").click()

    page.get_by_role("region", name=f"{phone(cloud.number)} (demo meta)").get_by_role(
        "link", name="Modelos de mensagem (Meta)"
    ).click()

    expect(page).to_have_url(f"{stack.api_url}/console/#/numbers/{cloud.number_id}/templates")
    rows = page.get_by_role("table").get_by_role("row")
    hello = rows.filter(has=page.get_by_role("rowheader", name="hello_world"))
    expect(hello).to_contain_text("en_US")
    expect(hello).to_contain_text("aprovado")
    expect(hello).to_contain_text("marketing")
    screenshot(page, "templates")
    page.get_by_role("button", name="Ler de novo na Meta").click()
    expect(page.get_by_text("lida na Meta agora")).to_be_visible()

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

"""The operators' view in the browser: a message sent through the API looked up by id (its status,
source number and the pool decision's trace, as the admin reads them when a customer asks "which
number sent this?"); the message list with its filters, a failure in Meta's own words and in red; a
customer's conversation; the webhook deliveries an endpoint that was down missed, replayed after a
confirmation; a media message's file; the provider events an instance ignored, on its own screen."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Route, expect

from devstack.seed import SeededTenant
from tests.console.conftest import Console
from tests.console.test_pool_editor import phone
from tests.e2e.conftest import Stack
from tests.support.stacks import stack_on_free_ports
from tools.support.provider_webhooks import envelope, signed_headers

RECIPIENT = "5511944440001"
CUSTOMER = "5511955510001"
KEY_NAME = "campanhas"
ASKED = "quais são as ofertas de hoje?"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """The console's stack, with two client webhook attempts a second apart (a delivery to an
    endpoint that is down ends `failed` within seconds)."""
    local = stack_on_free_ports(
        "console",
        environment={
            "PROVIDER_TIMEOUT_SECONDS": "1",
            "CLIENT_WEBHOOK_MAX_ATTEMPTS": "2",
            "CLIENT_WEBHOOK_RETRY_SECONDS": "1",
        },
    ).start()
    shared = Stack(local)
    yield shared
    shared.close()
    local.stop()


class Endpoint:
    """A client's webhook endpoint: 503 to everything until `up`, then 204, recording what it took."""

    def __init__(self) -> None:
        self.up = False
        self.accepted: list[str] = []  # webhook-id of each delivery taken
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                if endpoint.up:
                    endpoint.accepted.append(self.headers["webhook-id"])
                self.send_response(204 if endpoint.up else 503)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@dataclass
class World:
    tenant: SeededTenant
    endpoint: Endpoint
    failed_id: str
    sent_ids: list[str]
    deliveries: list[str]


@pytest.fixture(scope="module")
def world(stack: Stack, tenant: SeededTenant) -> Iterator[World]:
    """A customer asks for offers, then three messages to them within their 24 h window through the
    tenant's Meta number (the first refused with 131049), the customer's answer (no helpdesk: neither
    is forwarded), and the three client webhooks an endpoint that is down missed."""
    endpoint = Endpoint()
    meta = next(instance for instance in tenant.instances if instance.flavour == "meta")
    key = stack.api(
        "POST",
        "/api/api-keys",
        key=tenant.admin_key,
        json={"name": KEY_NAME, "scopes": ["send"], "defaultNumber": meta.number, "webhookUrl": endpoint.url},
    )
    assert key.status_code == 201, key.text
    stack.sim.incoming_message(meta.sim_id, CUSTOMER, ASKED)  # a Cloud API number answers who wrote in
    stack.wait_for(lambda: incoming_logged(stack, tenant, 1), timeout=15)
    stack.sim.send_error(meta.sim_id, "131049", times=1)
    ids = []
    for text in ("primeira oferta", "segunda oferta", "terceira oferta"):
        answer = stack.api("POST", "/api/messages", key=key.json()["key"], json={"to": CUSTOMER, "text": text})
        assert answer.status_code == 202, answer.text
        message_id: str = answer.json()["id"]
        ids.append(message_id)
        stack.wait_for(partial(final, stack, tenant, message_id), timeout=15)
    stack.sim.incoming_message(meta.sim_id, CUSTOMER, "não quero mais ofertas")

    def missed() -> list[str] | None:
        page = stack.api("GET", "/api/webhook-deliveries?status=failed", key=tenant.admin_key).json()
        return [item["id"] for item in page["items"]] if len(page["items"]) == 3 else None

    deliveries = stack.wait_for(missed, timeout=30, interval=0.3)
    stack.wait_for(lambda: incoming_logged(stack, tenant, 2), timeout=15)
    statuses = {message_id: final(stack, tenant, message_id) for message_id in ids}
    (failed,) = [message_id for message_id, status in statuses.items() if status == "FAILED"]
    yield World(tenant, endpoint, failed, [i for i in ids if i != failed], deliveries)
    endpoint.server.shutdown()


def final(stack: Stack, tenant: SeededTenant, message_id: str) -> str | None:
    status = stack.api("GET", f"/api/messages/{message_id}", key=tenant.admin_key).json()["status"]
    return status if status in ("SENT", "FAILED") else None


def incoming_logged(stack: Stack, tenant: SeededTenant, count: int) -> bool:
    page = stack.api("GET", "/api/messages?direction=in&status=NO_DOWNSTREAM", key=tenant.admin_key).json()
    return len(page["items"]) == count


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
    expect(page.get_by_role("region", name="Mídia")).to_have_count(0)
    trace = page.get_by_role("region", name="Como o número foi escolhido").get_by_role("listitem")
    expect(trace.filter(has_text="Número escolhido")).to_have_count(1)
    resolved = next(event["data"] for event in message["trace"] if event["stage"] == "pool.number.resolved")
    expect(trace.filter(has_text="Número escolhido")).to_contain_text(phone(resolved["resolvedNumber"]))
    expect(trace).to_have_count(len(message["trace"]))
    page.get_by_role("region", name="Como o número foi escolhido").evaluate("box => box.scrollIntoView()")
    screenshot(page, "message-trace")


def test_an_unknown_message_and_a_malformed_contact_are_refused_where_they_were_typed(
    console: Console, stack: Stack
) -> None:
    page = console.sign_in_as_admin(stack.demo)
    page.evaluate("route => { location.hash = route; }", "#/messages/msg_does_not_exist")

    search = page.get_by_role("search")
    expect(search.get_by_role("alert")).to_contain_text("Não foi possível ler a mensagem msg_does_not_exist: ")
    expect(page.get_by_role("region", name="Como o número foi escolhido")).to_have_count(0)

    # A filter the API refuses (422, its query parameter named) is said at the field it came from.
    page.get_by_role("link", name="Voltar à lista de mensagens").click()
    filters = page.get_by_role("form", name="Filtrar mensagens")
    contact = filters.get_by_label("Contato (telefone)")
    contact.fill("12")
    filters.get_by_role("button", name="Filtrar", exact=True).click()
    expect(contact).to_have_attribute("aria-invalid", "true")
    expect(filters.get_by_text("Use o número com código do país e DDD, só dígitos")).to_be_visible()
    expect(page.locator("#alert")).to_be_empty()


def open_messages(console: Console, world: World) -> Page:
    page = console.sign_in_as_admin(world.tenant)
    page.get_by_role("navigation").get_by_role("link", name="Mensagens").click()
    expect(page.get_by_role("heading", level=1, name="Mensagens")).to_be_visible()
    return page


def test_the_list_shows_every_message_and_a_failure_in_red_in_metas_own_words(
    console: Console, world: World, screenshot: Callable[[Page, str], Path]
) -> None:
    page = open_messages(console, world)
    listing = page.get_by_role("table", name="Mensagens deste tenant")
    rows = listing.locator("tbody tr")

    expect(rows).to_have_count(5)
    received = rows.filter(has_text="não quero mais ofertas")
    expect(received).to_contain_text("não encaminhada: sem helpdesk configurado")
    expect(received).to_contain_text("nenhum helpdesk configurado para este número")
    expect(rows.filter(has_text="segunda oferta")).to_contain_text(KEY_NAME)
    listing.evaluate("table => table.scrollIntoView()")
    screenshot(page, "messages-list")

    page.get_by_label("Somente falhas").check()

    expect(rows).to_have_count(1)
    failed = rows.first
    expect(failed).to_have_class("failed")
    expect(failed).to_contain_text("falhou")
    expect(failed).to_contain_text("o provedor recusou o envio (provider_rejected)")
    expect(failed).to_contain_text("Meta não entregou para preservar o ecossistema")
    expect(failed).to_contain_text("(131049)")
    assert failed.evaluate("row => getComputedStyle(row.cells[0]).backgroundColor") != "rgba(0, 0, 0, 0)"

    failed.get_by_role("link", name=f"Rastro da mensagem {world.failed_id}").click()

    details = page.get_by_role("region", name=f"Mensagem {world.failed_id}")
    expect(details).to_contain_text("131049")
    expect(details).to_contain_text("This message was not delivered to maintain healthy ecosystem engagement.")


def test_a_filter_nothing_matches_says_what_to_do(console: Console, world: World) -> None:
    page = open_messages(console, world)

    page.get_by_label("Contato (telefone)").fill("+5511900000009")
    page.get_by_role("button", name="Filtrar").click()

    expect(page.get_by_text("Nenhuma mensagem com esses filtros.")).to_be_visible()
    expect(page.get_by_text("Limpe os filtros para ver tudo.", exact=False)).to_be_visible()
    page.get_by_role("button", name="Limpar filtros").click()
    expect(page.get_by_role("table", name="Mensagens deste tenant").locator("tbody tr")).to_have_count(5)


def test_a_customers_conversation_reads_in_order_both_ways(
    console: Console, world: World, screenshot: Callable[[Page, str], Path]
) -> None:
    page = open_messages(console, world)
    customer = phone(CUSTOMER)

    page.get_by_role("link", name=f"Conversa com {customer}").first.click()

    expect(page.get_by_role("heading", level=1, name=f"Conversa com {customer}")).to_be_visible()
    bubbles = page.get_by_role("list", name=f"Mensagens com {customer}").get_by_role("listitem")
    expect(bubbles).to_have_count(5)
    texts = [bubbles.nth(n).locator(".text").inner_text() for n in range(5)]
    assert (texts[0], texts[-1]) == (ASKED, "não quero mais ofertas")
    assert sorted(texts[1:4]) == sorted(["primeira oferta", "segunda oferta", "terceira oferta"])
    expect(bubbles.nth(0)).to_contain_text("Contato")
    expect(bubbles.nth(4)).to_contain_text("Contato")
    expect(bubbles.filter(has_text="(131049)")).to_have_count(1)
    screenshot(page, "conversation")

    page.evaluate("route => { location.hash = route; }", "#/contacts/5511900000009")
    expect(page.get_by_text("Nenhuma mensagem com este contato ainda.")).to_be_visible()


def test_a_missed_delivery_is_replayed_after_a_confirmation_and_arrives_once(
    console: Console, world: World, screenshot: Callable[[Page, str], Path]
) -> None:
    page = console.sign_in_as_admin(world.tenant)
    page.get_by_role("navigation").get_by_role("link", name="Entregas de webhooks").click()
    rows = page.get_by_role("table", name="Entregas de webhooks deste tenant").locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.filter(has_text="falhou: tentativas esgotadas")).to_have_count(3)
    expect(rows.first).to_contain_text("HTTP 503")
    rows.first.evaluate("row => row.closest('table').scrollIntoView()")
    screenshot(page, "deliveries")
    first, second = world.deliveries[0], world.deliveries[1]
    world.endpoint.up = True

    page.get_by_role("button", name=f"Reenviar a entrega {second}").click()
    dialog = page.get_by_role("dialog", name=f"Reenviar a entrega {second}?")
    dialog.get_by_role("button", name="Cancelar").click()
    expect(dialog).to_have_count(0)
    page.get_by_role("button", name=f"Reenviar a entrega {first}").click()
    page.get_by_role("dialog", name=f"Reenviar a entrega {first}?").get_by_role("button", name="Reenviar").click()

    expect(page.get_by_role("status")).to_contain_text(f"Entrega {first} reenviada")
    console.stack.wait_for(lambda: world.endpoint.accepted == [first], timeout=15)

    def delivered() -> bool:
        page.get_by_role("button", name="Filtrar").click()
        return rows.filter(has_text=first).filter(has_text="entregue").count() == 1

    console.stack.wait_for(delivered, timeout=15, interval=0.3)
    assert world.endpoint.accepted == [first]  # the other one, cancelled, was not sent
    page.get_by_label("Somente as que esgotaram as tentativas").check()
    expect(rows).to_have_count(2)


def test_a_media_message_shows_its_file_and_a_thumbnail(console: Console, world: World) -> None:
    message_id = world.sent_ids[0]
    pixel = base64.b64encode(bytes.fromhex(PNG_PIXEL)).decode()
    media = {
        "type": "image",
        "caption": "a vitrine",
        "fileName": "foto.jpg",
        "mimeType": "image/jpeg",
        "size": 12_595,
        "previewUrl": f"data:image/png;base64,{pixel}",
    }

    def with_media(route: Route) -> None:
        answer = route.fetch()
        route.fulfill(response=answer, json={**answer.json(), "media": media})

    page = console.sign_in_as_admin(world.tenant)
    page.route(f"**/api/messages/{message_id}", with_media)
    page.evaluate("route => { location.hash = route; }", f"#/messages/{message_id}")

    region = page.get_by_role("region", name="Mídia")
    expect(region).to_contain_text("imagem")
    expect(region).to_contain_text("a vitrine")
    expect(region).to_contain_text("foto.jpg")
    expect(region).to_contain_text("12,3 KB")
    expect(region.get_by_role("img", name="Prévia de foto.jpg")).to_be_visible()

    page.unroute(f"**/api/messages/{message_id}")
    page.evaluate("route => { location.hash = route; }", f"#/messages/{world.failed_id}")
    expect(page.get_by_role("region", name=f"Mensagem {world.failed_id}")).to_be_visible()
    expect(page.get_by_role("region", name="Mídia")).to_have_count(0)


def test_a_customers_file_the_agent_got_as_a_placeholder_says_why_in_words_and_usage_counts_types(
    console: Console, world: World
) -> None:
    """The message log's outcome `forwarded: placeholder (<reason>)` in the reader's words (the
    customer's answer shown as a photo that was too slow to fetch), and the usage screen's incoming
    messages by type, as the usage summary counts them."""

    def with_placeholder(route: Route) -> None:
        answer = route.fetch()
        page_of: dict[str, Any] = answer.json()
        for item in page_of["items"]:
            if item.get("preview") == "não quero mais ofertas":
                item.update(type="image", preview="segue a foto", status="FORWARDED")
                item["outcome"] = "forwarded: placeholder (too_slow)"
        route.fulfill(response=answer, json=page_of)

    def listing(url: str) -> bool:
        return "/api/messages" in url and "/api/messages/" not in url

    page = console.sign_in_as_admin(world.tenant)
    page.route(listing, with_placeholder)
    page.get_by_role("navigation").get_by_role("link", name="Mensagens").click()

    row = page.get_by_role("table", name="Mensagens deste tenant").locator("tbody tr").filter(has_text="segue a foto")
    expect(row).to_contain_text("[imagem] segue a foto")
    expect(row).to_contain_text(
        "encaminhada com um aviso no lugar do arquivo: o provedor demorou demais para entregar o arquivo (too_slow)"
    )
    page.unroute(listing)

    month = datetime.now(UTC).strftime("%Y-%m")  # the screen's own default, the month in UTC
    [summary] = console.api("GET", f"/api/usage/summary?month={month}", world.tenant.admin_key)
    counted = summary["messagesInByType"]
    assert counted.get("text", 0) >= 2  # the customer's question and answer, at least
    page.get_by_role("navigation").get_by_role("link", name="Uso").click()

    types = page.get_by_role("table", name=f"Mensagens recebidas por tipo em {month}")
    expect(types.locator("tbody tr")).to_have_count(len(counted))
    expect(types.locator("tr[data-type=text] th")).to_have_text("texto")
    expect(types.locator("tr[data-type=text] td")).to_have_text(str(counted["text"]))
    [written_to] = [instance for instance in summary["instances"] if instance["messagesInByType"].get("text")]
    row = page.get_by_role("table", name=f"Uso por instância em {month}").get_by_role(
        "row", name=written_to["instance"]
    )
    expect(row).to_contain_text(f"texto {written_to['messagesInByType']['text']}")


def test_an_instance_shows_the_provider_events_it_ignored_and_why(console: Console, world: World) -> None:
    tenant = world.tenant
    instance = tenant.instances[0]
    body = envelope("typing", instance.sim_id, {})
    answer = httpx.post(
        f"{console.stack.api_url}/webhooks/{tenant.provider_id}",
        content=body,
        headers={"content-type": "application/json", **signed_headers(body, tenant.webhook_secret)},
        trust_env=False,
    )
    assert (answer.status_code, answer.json()["outcome"]) == (200, "ignored"), answer.text
    page = console.sign_in_as_admin(tenant)
    page.get_by_role("navigation").get_by_role("link", name="Números").click()

    page.get_by_role("link", name=instance.name, exact=True).click()  # the instance's own screen
    cell = page.locator("dd[data-field=ignored]")
    expect(cell).to_have_attribute("data-count", "1")
    cell.get_by_text("1 recente(s)").click()
    listed = cell.get_by_role("list", name=f"Eventos ignorados de {instance.name}")
    expect(listed).to_contain_text("typing")
    expect(listed).to_contain_text("tipo de evento ou mensagem não suportado")
    page.evaluate("route => { location.hash = route; }", f"#/instances/{tenant.instances[1].name}")
    expect(page.get_by_role("heading", level=1, name=f"Instância {tenant.instances[1].name}")).to_be_visible()
    expect(page.locator("dd[data-field=ignored]")).to_have_text("nenhum")


PNG_PIXEL = (
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
)


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


def test_a_message_sent_as_its_fallback_template_says_so_in_its_view(console: Console, stack: Stack) -> None:
    demo = stack.demo
    cloud = next(instance for instance in demo.instances if instance.flavour == "meta")
    created = stack.api(
        "POST",
        "/api/api-keys",
        key=demo.admin_key,
        json={"name": "cloud fallback", "scopes": ["send"], "defaultNumber": cloud.number},
    )
    assert created.status_code == 201, created.text
    body = {"to": "5511944440078", "text": "oi", "fallbackTemplate": {"name": "hello_world", "language": "en_US"}}
    answer = stack.api("POST", "/api/messages", key=created.json()["key"], json=body)
    assert answer.status_code == 202, answer.text
    path = f"/api/messages/{answer.json()['id']}"
    sent = stack.wait_for(lambda: stack.api("GET", path, key=demo.admin_key).json()["sentAs"])
    assert sent == {"type": "template", "name": "hello_world", "language": "en_US"}
    page = console.sign_in_as_admin(demo)

    page.evaluate("route => { location.hash = route; }", f"#/messages/{answer.json()['id']}")

    details = page.get_by_role("region", name=f"Mensagem {answer.json()['id']}")
    expect(details).to_contain_text("seu modelo de reserva hello_world (en_US), fora da janela de 24 h")
    trace = page.get_by_role("region", name="Como o número foi escolhido")
    expect(trace).to_contain_text("Modelo de reserva enviado no lugar")


def test_a_cloud_numbers_templates_are_listed_with_their_status(
    console: Console, stack: Stack, screenshot: Callable[[Page, str], Path]
) -> None:
    demo = stack.demo
    cloud = next(instance for instance in demo.instances if instance.flavour == "meta")
    page = console.sign_in_as_admin(demo)
    page.get_by_role("navigation").get_by_role("link", name="Números").click()

    page.get_by_role("row").filter(has_text=phone(cloud.number)).get_by_role(
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

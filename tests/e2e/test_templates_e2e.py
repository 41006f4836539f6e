"""Templates, the 24-hour window and interactive messages on the whole local stack.

A key whose pool holds a plain wuzapi number (down) and a Cloud API number sends free-form text to
a contact who never wrote: it ends FAILED `outside_service_window` and nothing reaches Meta; with
`fallbackTemplate` the template leaves through the Cloud API number, traced; once the contact
writes, free-form text goes through it. A template with the wrong number of parameters is refused
with 422 before anything is stored or queued, and a listed one leaves with its components as Meta
documents them. A list reaches the Cloud API number and Evolution natively and the wuzapi number as
a numbered text menu; the customer's tap, or typed number, reaches the helpdesk and the key's client
webhook as the option's id and title. An agent's reply outside the window through the Cloud API
instance leaves a private note in the helpdesk instead, or sends the instance's re-engagement
template and says so. A text Meta accepted and then failed for the window (131047 in a status)
leaves again as its fallback template, once, through the same number, and the client hears it."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack
from tests.e2e.test_routing_e2e import map_downstream
from tools.support.downstream import FakeDownstream, ServedDownstream

CONTRACTS = Path(__file__).parent.parent / "contracts" / "meta"
LIST = {
    "type": "list",
    "header": "Agenda",
    "body": "Qual horário fica melhor?",
    "footer": "Barbearia do Zé",
    "button": "Ver horários",
    "sections": [
        {
            "title": "Amanhã",
            "rows": [
                {"id": "slot-09", "title": "09:00", "description": "Corte"},
                {"id": "slot-15", "title": "15:00", "description": "Corte + barba"},
            ],
        }
    ],
}


class ClientWebhooks:
    """The key's client webhook URL: every POST it receives, its JSON body."""

    def __init__(self) -> None:
        received: list[dict[str, Any]] = []
        self.received = received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def events(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.received if event.get("event") == name]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def hooks() -> Iterator[ClientWebhooks]:
    served = ClientWebhooks()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def helpdesk() -> Iterator[tuple[FakeDownstream, ServedDownstream]]:
    fake = FakeDownstream()
    served = fake.serve()
    yield fake, served
    served.stop()


@pytest.fixture(scope="module")
def shared(stack: Stack, helpdesk: tuple[FakeDownstream, ServedDownstream]) -> SeededTenant:
    """One tenant, its Chatwoot its own, for the tests that change nothing of it but their own
    keys (each has its own contacts)."""
    tenant = stack.new_tenant()
    map_downstream(stack, tenant, helpdesk[1].url, inbox=41)
    return tenant


def of(tenant: SeededTenant, flavour: str) -> Any:
    return next(instance for instance in tenant.instances if instance.flavour == flavour)


def pool_key(stack: Stack, tenant: SeededTenant, flavours: tuple[str, ...], webhook_url: str | None = None) -> str:
    """A send key in pool mode over the numbers of `flavours`, in that order."""
    body: dict[str, Any] = {"name": f"pool {'+'.join(flavours)}", "scopes": ["send"]}
    if webhook_url is not None:
        body["webhookUrl"] = webhook_url
    created = stack.api("POST", "/api/api-keys", key=tenant.admin_key, json=body)
    assert created.status_code == 201, created.text
    key_id = created.json()["id"]
    mode = stack.api(
        "PUT",
        f"/api/api-keys/{key_id}/selection-mode",
        key=tenant.admin_key,
        json={"numberSelectionMode": "pool"},
    )
    assert mode.status_code == 200, mode.text
    for flavour in flavours:
        added = stack.api(
            "POST",
            f"/api/api-keys/{key_id}/pool",
            key=tenant.admin_key,
            json={"whatsappNumberId": of(tenant, flavour).number_id},
        )
        assert added.status_code == 201, added.text
    key: str = created.json()["key"]
    return key


def send(stack: Stack, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """Through the API, then the message once the worker finished it."""
    answer = stack.api("POST", "/api/messages", key=key, json=body)
    assert answer.status_code == 202, answer.text

    def finished() -> dict[str, Any] | None:
        message: dict[str, Any] = stack.api("GET", f"/api/messages/{answer.json()['id']}", key=key).json()
        return message if message["status"] in ("SENT", "FAILED") else None

    return stack.wait_for(finished, timeout=20)


def contact_wrote(stack: Stack, admin_key: str, sim_id: str, contact: str, number: str, *, text: str = "oi") -> None:
    """The contact writes to the number; returns once switchboard holds the window open."""
    stack.sim.incoming_message(sim_id, contact, text)

    def window_open() -> bool:
        answer = stack.api("GET", f"/api/contacts/{contact}/window", key=admin_key)
        assert answer.status_code == 200, answer.text
        return any(item["number"] == number and item["open"] for item in answer.json()["numbers"])

    stack.wait_for(window_open, timeout=15)


def reached(stack: Stack, sim_id: str, contact: str) -> list[dict[str, Any]]:
    """What the simulated server delivered to the contact, and what it accepted and never delivered."""
    delivered = [m for m in stack.sim.sent() if m["instance"] == sim_id and m["phone"] == contact]
    refused = [m for m in stack.sim.refused() if m["instance"] == sim_id and m["phone"] == contact]
    return delivered + refused


def stages(message: dict[str, Any]) -> list[str]:
    return [event["stage"] for event in message["trace"]]


def new_contact() -> str:
    return "5511" + str(uuid.uuid4().int % 10**9).zfill(9)


def test_outside_the_window_the_cloud_number_sends_nothing_a_fallback_template_or_free_form_once_the_contact_wrote(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    tenant, contact = fresh_tenant, new_contact()
    wuzapi, meta = of(tenant, "wuzapi"), of(tenant, "meta")
    key = pool_key(stack, tenant, ("wuzapi", "meta"))
    stack.sim.set_connection(wuzapi.sim_id, False)
    stack.wait_for(
        lambda: (
            stack.api("GET", f"/api/instances/{wuzapi.name}", key=tenant.admin_key).json()["state"] == "DISCONNECTED"
        )
    )

    refused = send(stack, key, {"to": contact, "text": "sua fatura venceu"})

    assert (refused["status"], refused["failureReason"]) == ("FAILED", "outside_service_window"), refused
    skipped = [e["data"] for e in refused["trace"] if e["data"].get("reason") == "outside_service_window"]
    assert skipped and skipped[0]["number"] == meta.number and skipped[0]["lastHeardAt"] is None
    assert reached(stack, meta.sim_id, contact) == []

    fallback = send(
        stack,
        key,
        {
            "to": contact,
            "text": "sua fatura venceu",
            "fallbackTemplate": {"name": "hello_world", "language": "en_US"},
        },
    )
    assert (fallback["status"], fallback["sourceNumber"]) == ("SENT", meta.number), fallback
    [traced] = [e["data"] for e in fallback["trace"] if e["stage"] == "message.fallback_template"]
    assert (traced["template"], traced["language"], traced["number"]) == ("hello_world", "en_US", meta.number)
    [delivered] = reached(stack, meta.sim_id, contact)
    assert json.loads(delivered["body"])["template"] == {"name": "hello_world", "language": {"code": "en_US"}}

    contact_wrote(stack, tenant.admin_key, meta.sim_id, contact, meta.number)
    free = send(stack, key, {"to": contact, "text": "segue a segunda via"})

    assert (free["status"], free["sourceNumber"]) == ("SENT", meta.number), free
    assert "pool.window.open" in stages(free)
    assert [m["body"] for m in stack.sim.sent() if m["instance"] == meta.sim_id and m["phone"] == contact][-1] == (
        "segue a segunda via"
    )


def test_a_template_is_checked_before_it_is_queued_and_a_listed_one_leaves_as_meta_documents_it(
    stack: Stack, shared: SeededTenant
) -> None:
    tenant, contact = shared, new_contact()
    meta = of(tenant, "meta")
    key = pool_key(stack, tenant, ("meta",))
    listed = stack.api("GET", f"/api/numbers/{meta.number_id}/templates", key=tenant.admin_key)
    assert listed.status_code == 200, listed.text
    promo = next(t for t in listed.json()["templates"] if t["name"] == "2023_april_promo")
    assert promo["takes"]["body"] == ["1", "2"]

    wrong = stack.api(
        "POST",
        "/api/messages",
        key=key,
        json={
            "to": contact,
            "template": {
                "name": "2023_april_promo",
                "language": "en_US",
                "components": [{"type": "body", "parameters": [{"type": "text", "text": "Mark"}]}],
            },
        },
    )

    assert (wrong.status_code, wrong.json()["error"]) == (422, "template_parameters"), wrong.text
    assert "the body takes 2 parameters, got 1" in wrong.json()["message"]
    log = stack.api("GET", f"/api/messages?to={contact}", key=tenant.admin_key).json()
    assert log["items"] == []

    request = json.loads((CONTRACTS / "send_template_april_promo_request.json").read_text())
    sent = send(
        stack,
        key,
        {
            "to": contact,
            "template": {
                "name": "2023_april_promo",
                "language": "en_US",
                "components": [
                    {
                        "type": "body",
                        "parameters": [{"type": "text", "text": "Mark"}, {"type": "text", "text": "FALL25"}],
                    }
                ],
            },
        },
    )

    assert (sent["status"], sent["type"]) == ("SENT", "template"), sent
    [delivered] = reached(stack, meta.sim_id, contact)
    assert json.loads(delivered["body"])["template"] == request["template"]


@pytest.mark.parametrize("flavour", ["meta", "wuzapi", "evolution"])
def test_a_list_reaches_each_kind_in_its_form_and_the_choice_comes_back_with_its_id(
    stack: Stack, shared: SeededTenant, helpdesk: Any, hooks: ClientWebhooks, flavour: str
) -> None:
    tenant, contact = shared, new_contact()
    fake, _ = helpdesk
    line = of(tenant, flavour)
    key = pool_key(stack, tenant, (flavour,), webhook_url=hooks.url)
    contact_wrote(stack, tenant.admin_key, line.sim_id, contact, line.number, text="quero marcar")

    sent = send(stack, key, {"to": contact, "interactive": LIST})

    assert (sent["status"], sent["type"]) == ("SENT", "interactive"), sent
    [delivered] = [m for m in stack.sim.sent() if m["instance"] == line.sim_id and m["phone"] == contact]
    if flavour == "meta":
        interactive = json.loads(delivered["body"])["interactive"]
        assert interactive["type"] == "list"
        assert interactive["action"]["sections"][0]["rows"][1] == {
            "id": "slot-15",
            "title": "15:00",
            "description": "Corte + barba",
        }
        stack.sim.incoming_choice(line.sim_id, contact, "slot-15", "15:00")
    elif flavour == "evolution":  # its native list (`sendList`), tapped
        listed = json.loads(delivered["body"])
        assert listed["type"] == "list" and "slot-15" in json.dumps(listed["sections"])
        stack.sim.incoming_choice(line.sim_id, contact, "slot-15", "15:00")
    else:
        assert "2. 15:00 — Corte + barba" in delivered["body"]
        stack.sim.incoming_message(line.sim_id, contact, "2")

    chosen = stack.wait_for(lambda: [m for m in fake.messages() if "slot-15" in str((m.body or {}).get("content"))])
    assert chosen[0].body is not None and chosen[0].body["content"] == "15:00 (opção slot-15)"
    [event] = stack.wait_for(lambda: hooks.events("message.choice"), timeout=20)
    assert event["data"]["messageId"] == sent["id"]
    assert event["data"]["choice"] == {"id": "slot-15", "title": "15:00", "source": "list"}
    assert event["data"]["from"] == contact


def test_a_reply_outside_the_window_is_a_note_to_the_agent_or_the_instances_re_engagement_template(
    stack: Stack, shared: SeededTenant, helpdesk: Any
) -> None:
    tenant, contact = shared, new_contact()
    fake, _ = helpdesk
    wuzapi, meta = of(tenant, "wuzapi"), of(tenant, "meta")
    # The contact's conversation began on the tenant's other number: they never wrote to the Cloud one.
    stack.sim.incoming_message(wuzapi.sim_id, contact, "boa tarde")
    [first] = stack.wait_for(lambda: [m for m in fake.messages() if (m.body or {}).get("content") == "boa tarde"])
    conversation = int(first.path.split("/conversations/")[1].split("/")[0])
    secret = stack.api("POST", f"/api/instances/{meta.name}/webhook-secret", key=tenant.admin_key).json()["secret"]

    def reply(message_id: int, text: str) -> dict[str, Any]:
        body = {
            "event": "message_created",
            "id": message_id,
            "content": text,
            "message_type": "outgoing",
            "private": False,
            "conversation": {"id": conversation, "meta": {"sender": {"phone_number": f"+{contact}"}}},
        }
        path = f"/api/tenants/{tenant.owner_tag}/instances/{meta.name}/webhook"
        answer = stack.api("POST", path, json=body, headers={"X-Switchboard-Secret": secret})
        assert answer.status_code == 200, answer.text
        outcome: dict[str, Any] = answer.json()
        return outcome

    def notes() -> list[str]:
        path = f"/conversations/{conversation}/messages"
        posted = [m.body or {} for m in fake.messages() if m.path.endswith(path)]
        return [str(body["content"]) for body in posted if body.get("private")]

    unsent = reply(93_001, "segue o boleto")

    assert unsent["status"] == "FAILED", unsent
    assert stack.wait_for(notes) == ["fora da janela de 24 h: envie um modelo"]
    assert reached(stack, meta.sim_id, contact) == []

    view = stack.api("GET", f"/api/instances/{meta.name}", key=tenant.admin_key).json()
    configured = stack.api(
        "PUT",
        f"/api/instances/{meta.name}",
        key=tenant.admin_key,
        json={
            "providerId": view["providerId"],
            "providerInstanceId": view["providerInstanceId"],
            "numberId": view["numberId"],
            "reengagementTemplate": {"name": "hello_world", "language": "en_US"},
        }
        | ({"ownerTag": view["ownerTag"]} if view.get("ownerTag") else {}),
    )
    assert configured.status_code == 200, configured.text
    instead = reply(93_002, "segue o boleto de novo")

    assert instead["status"] == "SENT", instead
    [template] = reached(stack, meta.sim_id, contact)
    assert json.loads(template["body"])["template"] == {"name": "hello_world", "language": {"code": "en_US"}}
    said = "fora da janela de 24 h: enviado o modelo hello_world (en_US) no lugar da resposta"
    assert stack.wait_for(lambda: notes()[1:]) == [said]


def test_a_text_meta_fails_later_for_the_window_leaves_again_as_its_fallback_template_once(
    stack: Stack, shared: SeededTenant, hooks: ClientWebhooks
) -> None:
    tenant, contact = shared, new_contact()
    meta = of(tenant, "meta")
    key = pool_key(stack, tenant, ("meta",), webhook_url=hooks.url)
    contact_wrote(stack, tenant.admin_key, meta.sim_id, contact, meta.number)  # the window is open, as far as we know
    body = {"to": contact, "text": "sua fatura", "fallbackTemplate": {"name": "hello_world", "language": "en_US"}}
    sent = send(stack, key, body)
    assert (sent["status"], sent["sentAs"]) == ("SENT", None), sent

    # Meta accepted the text and then fails it for the window; its status comes twice.
    stack.sim.receipt(meta.sim_id, sent["providerMessageId"], "failed", outside_window=True)

    def sent_as_template() -> dict[str, Any] | None:
        message: dict[str, Any] = stack.api("GET", f"/api/messages/{sent['id']}", key=key).json()
        return message if message["sentAs"] is not None and message["status"] == "SENT" else None

    fallen = stack.wait_for(sent_as_template, timeout=20)
    [status] = [
        e
        for e in stack.sim.events(meta.sim_id)
        if sent["providerMessageId"] in json.dumps(e["payload"]) and "131047" in json.dumps(e["payload"])
    ]
    stack.sim.redeliver(status["eventId"])

    assert fallen["sentAs"] == {"type": "template", "name": "hello_world", "language": "en_US"}
    assert (fallen["type"], fallen["sourceNumber"], fallen["instance"]) == ("text", meta.number, sent["instance"])
    [traced] = [e["data"] for e in fallen["trace"] if e["stage"] == "message.fallback_template"]
    assert (traced["after"], traced["number"], traced["reason"]) == (
        "receipt.failed",
        meta.number,
        "outside_service_window",
    )
    delivered = stack.wait_for(lambda: hooks.events("message.sent")[1:], timeout=20)
    assert delivered[0]["data"]["sentAs"] == fallen["sentAs"]
    assert [m["body"] for m in reached(stack, meta.sim_id, contact)][:1] == ["sua fatura"]
    templates = [m for m in reached(stack, meta.sim_id, contact) if '"template"' in m["body"]]
    assert len(templates) == 1  # once, whatever the redeliveries of the status

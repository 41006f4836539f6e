"""Replies through the downstream's webhook (the real handler on moto) to the provider simulator:
a reply longer than one message of the instance's kind leaves in parts, in order, once; Chatwoot's
automatic messages (greeting, CSAT) leave like an agent's reply; a contact known by its LID is
answered at that LID."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.bootstrap.messages import message_repository
from switchboard.core import store
from switchboard.core.clock import utcnow
from switchboard.routing.parts import split_text
from tools.support.api import SECRET_WATCH, Client
from tools.support.downstream import FakeDownstream

CHATWOOT = Path(__file__).resolve().parents[1] / "contracts" / "chatwoot"
PHONE = "16505551234"  # the contact of the Chatwoot fixtures
PARAGRAPH = ("Obrigado pelo contato. Seguem os detalhes do seu pedido, item a item. " * 17).strip()
LONG_REPLY = "\n\n".join(f"{n + 1}. {PARAGRAPH}" for n in range(8))  # over 9,000 characters


def make_instance(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl, flavour: str
) -> tuple[str, str]:
    """One instance of `flavour` on the simulator, registered through the API and connected;
    returns its simulator id and the secret of its replies webhook."""
    sim_id = f"{flavour}-{uuid.uuid4().hex[:6]}"
    token = f"token-{sim_id}-0123456789"
    phone_id = f"1065{uuid.uuid4().int % 10**9:09d}" if flavour == "meta" else None
    fields: dict[str, Any] = {"id": sim_id, "token": token, "flavour": flavour, "number": "15550783881"}
    if phone_id:
        fields["metaPhoneId"] = phone_id
    else:
        fields["connected"] = True
    control.create_instance(**fields)
    number_body: dict[str, Any] = {"number": "15550783881", "displayName": flavour}
    if phone_id:
        number_body["metaPhoneId"] = phone_id
    number = client.post("/api/numbers", key=admin, json_body=number_body).json()
    provider_body: dict[str, Any] = {
        "name": flavour,
        "kind": flavour,
        "baseUrl": f"{simulator.base_url}/{flavour}",
        "webhookSecret": f"webhook-secret-{sim_id}-0123456789",
    }
    if phone_id:
        provider_body |= {"verifyToken": "verify-token-1", "adminToken": token}
    provider = client.post("/api/providers", key=admin, json_body=provider_body)
    assert provider.status == 201, provider.body
    instance = {
        "providerId": provider.json()["id"],
        "providerInstanceId": phone_id or sim_id,
        "numberId": number["id"],
        "token": token,
        "kind": "messages",
    }
    assert client.put(f"/api/instances/{flavour}-main", key=admin, json_body=instance).status == 201
    secret: str = client.post(f"/api/instances/{flavour}-main/webhook-secret", key=admin).json()["secret"]
    SECRET_WATCH.secrets.add(secret)
    return sim_id, secret


@pytest.fixture
def admin(make_tenant: Any) -> str:
    key: str = make_tenant("acme").admin
    return key


def chatwoot_webhook(name: str, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((CHATWOOT / name).read_bytes())
    body.update(changes)
    return body


def post_reply(client: Client, flavour: str, secret: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/tenants/acme/instances/{flavour}-main/webhook?token={secret}", json_body=body)


def contact_wrote(sim_id: str, control: SimulatorControl) -> None:
    """The contact's message to the instance's number, as the ingest records it (its heard mark),
    and as Meta knows it (the simulator's window)."""
    instance = bootstrap.catalog_repository().find_instance(f"acme:{sim_id.split('-', maxsplit=1)[0]}-main")
    assert instance is not None
    uow = store.unit_of_work()
    message_repository().record_heard(uow, "acme", PHONE, instance.number_id, utcnow())
    uow.commit()
    control.open_window(sim_id, PHONE)


def sent_by(control: SimulatorControl, sim_id: str) -> list[dict[str, Any]]:
    return [message for message in control.sent() if message["instance"] == sim_id]


def test_given_a_9000_character_reply_through_a_cloud_api_number_then_it_arrives_in_order_in_parts_once(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl
) -> None:
    sim_id, secret = make_instance(client, admin, simulator, control, "meta")
    contact_wrote(sim_id, control)  # an agent answers who wrote in: within the 24-hour window
    reply = chatwoot_webhook("webhook_message_created_outgoing.json", content=LONG_REPLY)

    first = post_reply(client, "meta", secret, reply)
    again = post_reply(client, "meta", secret, reply)  # Chatwoot delivers the webhook twice

    assert (first.status, first.json()["status"]) == (200, "SENT")
    assert (again.status, again.json()["status"]) == (200, "SENT")
    received = sent_by(control, sim_id)
    assert [message["body"] for message in received] == split_text(LONG_REPLY, 4096)
    assert len(received) == 3 and "\n\n".join(message["body"] for message in received) == LONG_REPLY
    assert [message["phone"] for message in received] == [PHONE] * 3
    assert [message["time"] for message in received] == sorted(message["time"] for message in received)


def test_given_evolutions_answer_to_a_reply_is_lost_then_the_customer_gets_it_once_and_the_agent_is_told(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl, fake: FakeDownstream
) -> None:
    sim_id, secret = make_instance(client, admin, simulator, control, "evolution")
    downstream = "http://127.0.0.1:9302"
    mapping = {
        "downstreamBaseUrl": downstream,
        "downstreamApiToken": "cw-token-replies-very-secret",
        "downstreamAccountId": 7,
        "downstreamInboxId": 12,
    }
    assert client.put("/api/tenants/acme", key=admin, json_body=mapping).status == 200
    conversation = fake.open_conversation(downstream, f"+{PHONE}", inbox_id=12)
    reply = chatwoot_webhook("webhook_message_created_outgoing.json", id=9070)
    reply["conversation"] |= {"id": conversation}
    control.fault("/evolution/message/sendText/{instance}", "drop_response")  # Evolution sends, its answer is lost

    first = post_reply(client, "evolution", secret, reply)
    again = post_reply(client, "evolution", secret, reply)  # Chatwoot delivers the webhook twice
    bootstrap.outbox_service().drain_all()  # the schedule passes

    assert (first.status, first.json()["status"]) == (200, "FAILED")
    assert first.json()["reason"].startswith("ambiguous_outcome") and again.json() == first.json()
    assert [message["body"] for message in sent_by(control, sim_id)] == [reply["content"]]  # once, never resent
    [note] = fake.messages(downstream)
    assert note.path == f"/api/v1/accounts/7/conversations/{conversation}/messages"
    assert note.body is not None and note.body["private"] is True
    assert "9070" in note.body["content"] and "may not have been delivered" in note.body["content"]


def test_given_the_same_reply_through_evolution_then_it_is_one_message(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl
) -> None:
    sim_id, secret = make_instance(client, admin, simulator, control, "evolution")

    answer = post_reply(
        client, "evolution", secret, chatwoot_webhook("webhook_message_created_outgoing.json", content=LONG_REPLY)
    )

    assert answer.json()["status"] == "SENT"
    assert [message["body"] for message in sent_by(control, sim_id)] == [LONG_REPLY]


@pytest.mark.parametrize(
    "fixture", ["webhook_message_created_template_greeting.json", "webhook_message_created_template_csat.json"]
)
def test_given_chatwoots_automatic_message_then_it_is_sent_like_an_agents_reply(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl, fixture: str
) -> None:
    sim_id, secret = make_instance(client, admin, simulator, control, "evolution")
    body = (CHATWOOT / fixture).read_bytes()

    answer = client.post(f"/api/tenants/acme/instances/evolution-main/webhook?token={secret}", body=body)

    assert (answer.status, answer.json()["status"]) == (200, "SENT")
    [message] = sent_by(control, sim_id)
    assert (message["phone"], message["body"]) == (PHONE, json.loads(body)["content"])


@pytest.mark.parametrize(
    "changes",
    [
        {"private": True},  # a private note, whatever its type
        {"message_type": "incoming"},
        {"message_type": "activity"},
        {"content_type": "input_select"},  # a bot's options: a web-widget form
        {"content_type": "input_email"},
        {"source_id": "WAID:3EB0C7A1F49E2D86B53A0F"},  # it came from the channel: an echo
    ],
    ids=str,
)
def test_given_a_template_message_that_is_not_for_the_customer_then_nothing_is_sent(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl, changes: dict[str, Any]
) -> None:
    sim_id, secret = make_instance(client, admin, simulator, control, "evolution")

    answer = post_reply(
        client, "evolution", secret, chatwoot_webhook("webhook_message_created_template_greeting.json", **changes)
    )

    assert (answer.status, answer.json()["status"]) == (200, "IGNORED")
    assert sent_by(control, sim_id) == []


def test_given_a_call_bubble_or_an_echo_of_an_outgoing_message_then_nothing_is_sent(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl
) -> None:
    sim_id, secret = make_instance(client, admin, simulator, control, "evolution")
    outgoing = "webhook_message_created_outgoing.json"

    answers = [
        post_reply(client, "evolution", secret, chatwoot_webhook(outgoing, content_type="voice_call")),
        post_reply(client, "evolution", secret, chatwoot_webhook(outgoing, source_id="3EB0C7A1F49E2D86B53A0F")),
    ]

    assert [answer.json()["status"] for answer in answers] == ["IGNORED", "IGNORED"]
    assert sent_by(control, sim_id) == []


def test_given_a_contact_known_by_its_lid_then_the_reply_goes_to_that_lid(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl
) -> None:
    sim_id, secret = make_instance(client, admin, simulator, control, "evolution")
    body = chatwoot_webhook("webhook_message_created_outgoing.json", id=9050)
    body["conversation"]["meta"]["sender"] |= {"phone_number": None, "identifier": "204857600054321@lid"}

    answer = post_reply(client, "evolution", secret, body)

    assert answer.json()["status"] == "SENT"
    [message] = sent_by(control, sim_id)
    assert (message["phone"], message["body"]) == ("204857600054321@lid", body["content"])


def test_given_a_reply_beyond_chatwoots_own_content_limit_then_400(
    client: Client, admin: str, simulator: Simulator, control: SimulatorControl
) -> None:
    _, secret = make_instance(client, admin, simulator, control, "evolution")
    reply = {
        "event": "message_created",
        "id": 9060,
        "content": "a" * 150_001,
        "message_type": "outgoing",
        "conversation": {"id": 12, "meta": {"sender": {"phone_number": f"+{PHONE}"}}},
    }

    answer = post_reply(client, "evolution", secret, reply)

    assert (answer.status, answer.json()["error"]) == (400, "invalid_webhook_body")

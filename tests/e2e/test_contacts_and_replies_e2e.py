"""The small contract gaps, closed on the whole local stack: the simulator (or a signed Cloud API
delivery) -> the webhook ingest -> the forward queue -> the forwarder -> a Chatwoot-shaped helpdesk
on 127.0.0.1, and replies from it back through the outbox to the simulator."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.seed import SeededTenant
from switchboard.routing.chatwoot import LID_NOTE
from switchboard.routing.parts import split_text
from tests.e2e.conftest import Stack
from tests.e2e.test_provider_kinds_e2e import instance_of
from tests.e2e.test_routing_e2e import map_downstream, messages_with
from tests.e2e.test_templates_e2e import contact_wrote
from tools.support.downstream import FakeDownstream

PARAGRAPH = (
    "Seu pedido foi separado e sai hoje; o rastreio chega por aqui assim que a transportadora o gerar. " * 12
).strip()
LONG_REPLY = "\n\n".join(f"{n + 1}. {PARAGRAPH}" for n in range(8))  # over 9,000 characters


@pytest.fixture
def helpdesk(stack: Stack, fresh_tenant: SeededTenant) -> Iterator[FakeDownstream]:
    fake = FakeDownstream()
    served = fake.serve()
    map_downstream(stack, fresh_tenant, served.url, inbox=41)
    yield fake
    served.stop()


def contact_phone() -> str:
    """A customer's number of its own (the stack is shared by the tests of this package)."""
    return f"55{uuid.uuid4().int % 10**11:011d}"


def contact_named(fake: FakeDownstream, name: str) -> dict[str, Any] | None:
    return next((fake.contact(cid) for cid, person in list(fake.people.items()) if person["name"] == name), None)


def reply_webhook(
    message_id: int, content: str, *, phone: str | None = None, identifier: str | None = None
) -> dict[str, Any]:
    """Chatwoot's `message_created` for an agent's public reply (the fields switchboard reads)."""
    return {
        "event": "message_created",
        "id": message_id,
        "content": content,
        "content_type": "text",
        "message_type": "outgoing",
        "private": False,
        "source_id": None,
        "conversation": {
            "id": 12,
            "meta": {"sender": {"phone_number": f"+{phone}" if phone else None, "identifier": identifier}},
        },
    }


def webhook_secret(stack: Stack, tenant: SeededTenant, name: str) -> str:
    answer = stack.api("POST", f"/api/instances/{name}/webhook-secret", key=tenant.admin_key)
    assert answer.status_code == 201, answer.text
    secret: str = answer.json()["secret"]
    return secret


def post_reply(stack: Stack, tenant: SeededTenant, name: str, secret: str, body: dict[str, Any]) -> Any:
    answer = stack.api("POST", f"/api/tenants/{tenant.owner_tag}/instances/{name}/webhook?token={secret}", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def sent_to(stack: Stack, sim_id: str) -> list[dict[str, Any]]:
    return [message for message in stack.sim.sent() if message["instance"] == sim_id]


# --- the customer's name ------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["wuzapi", "evolution", "meta"])
def test_given_a_first_message_of_each_kind_then_the_contact_carries_the_whatsapp_profile_name(
    stack: Stack, fresh_tenant: SeededTenant, helpdesk: FakeDownstream, flavour: str
) -> None:
    instance = instance_of(fresh_tenant, flavour)
    phone, name = contact_phone(), f"Ana {flavour.title()} Souza"

    stack.sim.incoming_message(instance.sim_id, phone, "olá, tudo bem?", push_name=name)

    # The message is posted last (contact, conversation, then message): once it is there, so is the contact.
    stack.wait_for(lambda: messages_with(helpdesk, "olá, tudo bem?"), timeout=15)
    contact = contact_named(helpdesk, name)
    assert contact is not None and contact["phone_number"] == f"+{phone}"


# --- one bad item never blocks a delivery ------------------------------------------------------


def test_given_a_cloud_api_delivery_with_an_unmappable_item_and_a_text_then_the_text_is_forwarded_and_2xx(
    stack: Stack, fresh_tenant: SeededTenant, helpdesk: FakeDownstream
) -> None:
    secret = f"meta-app-secret-{uuid.uuid4().hex}"
    phone_id = f"1077{uuid.uuid4().int % 10**9:09d}"
    admin = fresh_tenant.admin_key
    provider = stack.api(
        "POST",
        "/api/providers",
        key=admin,
        json={
            "name": "cloud-2",
            "kind": "meta",
            "baseUrl": f"{stack.sim_url}/meta",
            "webhookSecret": secret,
            "verifyToken": "vt-e2e-1",
            "adminToken": f"tok-{phone_id}",
        },
    ).json()
    number = stack.api(
        "POST", "/api/numbers", key=admin, json={"number": "15550783881", "displayName": "c", "metaPhoneId": phone_id}
    ).json()
    body = {
        "providerId": provider["id"],
        "providerInstanceId": phone_id,
        "numberId": number["id"],
        "token": f"tok-{phone_id}",
        "kind": "messages",
    }
    assert stack.api("PUT", "/api/instances/cloud-2", key=admin, json=body).status_code == 201
    sender = contact_phone()
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_id},
        "contacts": [{"profile": {"name": "Sheena Nelson"}, "wa_id": sender}],
        "messages": [
            {"from": sender, "id": "wamid.unmappable", "timestamp": "1749416383", "type": "text", "text": "a string"},
            {"from": sender, "id": "wamid.text", "timestamp": 1749416384, "type": "text", "text": {"body": "chegou?"}},
        ],
    }
    raw = json.dumps(
        {
            "object": "whatsapp_business_account",
            "entry": [{"id": "1", "changes": [{"value": value, "field": "messages"}]}],
        }
    ).encode()
    signature = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()

    answer = stack.api(
        "POST",
        f"/webhooks/{provider['id']}",
        content=raw,
        headers={"content-type": "application/json", "x-hub-signature-256": signature},
    )

    assert (answer.status_code, answer.json()["outcome"]) == (200, "applied")
    [message] = stack.wait_for(lambda: messages_with(helpdesk, "chegou?"), timeout=15)
    assert message.body is not None and message.body["source_id"] == "wamid.text"
    assert contact_named(helpdesk, "Sheena Nelson") is not None


# --- long replies and Chatwoot's automatic messages ----------------------------------------------


def test_given_a_9000_character_reply_through_a_cloud_api_number_then_it_reaches_the_customer_in_order_once(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    instance = instance_of(fresh_tenant, "meta")
    secret = webhook_secret(stack, fresh_tenant, instance.name)
    phone = contact_phone()
    contact_wrote(stack, fresh_tenant.admin_key, instance.sim_id, phone, instance.number)  # within the 24 h window
    reply = reply_webhook(91_000, LONG_REPLY, phone=phone)

    first = post_reply(stack, fresh_tenant, instance.name, secret, reply)
    again = post_reply(stack, fresh_tenant, instance.name, secret, reply)  # Chatwoot delivers it twice

    parts = split_text(LONG_REPLY, 4096)
    received = stack.wait_for(lambda: sent_to(stack, instance.sim_id)[len(parts) - 1 :], timeout=15) and sent_to(
        stack, instance.sim_id
    )
    time.sleep(1.0)  # a duplicate would have arrived by now
    assert (first["status"], again["status"]) == ("SENT", "SENT")
    assert [message["body"] for message in sent_to(stack, instance.sim_id)] == parts
    assert len(parts) == 3 and "\n\n".join(message["body"] for message in received) == LONG_REPLY
    assert {message["phone"] for message in received} == {phone}


def test_given_chatwoots_inbox_greeting_then_the_customer_gets_it(stack: Stack, fresh_tenant: SeededTenant) -> None:
    instance = instance_of(fresh_tenant, "wuzapi")
    secret = webhook_secret(stack, fresh_tenant, instance.name)
    phone = contact_phone()
    greeting = reply_webhook(92_000, "Olá! Um atendente responde em instantes.", phone=phone) | {
        "message_type": "template",
        "sender": None,
    }

    answer = post_reply(stack, fresh_tenant, instance.name, secret, greeting)

    assert answer["status"] == "SENT"
    [message] = stack.wait_for(lambda: sent_to(stack, instance.sim_id), timeout=15)
    assert (message["phone"], message["body"]) == (phone, "Olá! Um atendente responde em instantes.")


# --- LID-only Evolution chats ---------------------------------------------------------------------


def test_given_a_lid_only_evolution_chat_whose_number_evolution_learnt_then_it_joins_the_customers_contact(
    stack: Stack, fresh_tenant: SeededTenant, helpdesk: FakeDownstream
) -> None:
    instance = instance_of(fresh_tenant, "evolution")
    phone = contact_phone()
    stack.sim.incoming_message(instance.sim_id, phone, "primeira, pelo número", push_name="Maria Souza")
    stack.wait_for(lambda: messages_with(helpdesk, "primeira, pelo número"), timeout=15)
    [contact_id] = list(helpdesk.people)
    lid = helpdesk.people[contact_id]["identifier"]
    helpdesk.people[contact_id]["identifier"] = None  # the helpdesk does not know the LID: only Evolution does

    stack.sim.incoming_message(instance.sim_id, phone, "segunda, só pelo LID", addressing="lid_only")

    stack.wait_for(lambda: messages_with(helpdesk, "segunda, só pelo LID"), timeout=15)
    assert list(helpdesk.people) == [contact_id] and len(helpdesk.conversations) == 1
    assert helpdesk.contact(contact_id) == {
        "id": contact_id,
        "name": "Maria Souza",
        "phone_number": f"+{phone}",
        "identifier": lid,
    }
    assert helpdesk.notes.get(contact_id) is None


def test_given_a_lid_only_evolution_chat_nobody_knows_then_it_reaches_a_contact_keyed_by_the_lid_and_can_be_answered(
    stack: Stack, fresh_tenant: SeededTenant, helpdesk: FakeDownstream
) -> None:
    instance = instance_of(fresh_tenant, "evolution")
    phone = contact_phone()

    stack.sim.incoming_message(
        instance.sim_id, phone, "oi, meu número é oculto", push_name="Carlos", addressing="lid_only"
    )

    stack.wait_for(lambda: messages_with(helpdesk, "oi, meu número é oculto"), timeout=15)
    [(contact_id, person)] = list(helpdesk.people.items())
    lid = person["identifier"]
    assert (person["name"], person["phone_number"], lid.endswith("@lid")) == ("Carlos", None, True)
    [note] = helpdesk.notes[contact_id]
    assert note.startswith(LID_NOTE) and lid in note
    secret = webhook_secret(stack, fresh_tenant, instance.name)

    answer = post_reply(
        stack, fresh_tenant, instance.name, secret, reply_webhook(93_000, "Olá Carlos!", identifier=lid)
    )

    assert answer["status"] == "SENT"
    [reply] = [m for m in sent_to(stack, instance.sim_id) if m["body"] == "Olá Carlos!"]
    assert reply["phone"] == lid

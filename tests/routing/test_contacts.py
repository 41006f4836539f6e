"""The helpdesk contact of an incoming message: the sender's WhatsApp name, their LID, and a contact
WhatsApp gave by LID alone. Real Evolution deliveries go through the webhook handler and the
forwarder function to a Chatwoot-shaped fake behind the real Chatwoot client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from switchboard.routing.chatwoot import LID_NOTE
from tests.routing.test_downstream_api import ACME_URL, put_mapping, run_forwarder
from tools.support.api import Client
from tools.support.aws import AwsResources
from tools.support.downstream import FakeDownstream

CONTRACT = Path(__file__).resolve().parents[1] / "contracts" / "evolution"
INSTANCE = "switchboard-test"  # the instance the fixtures name
INSTANCE_TOKEN = "B6A1E0F2-3C4D-4E5F-8A9B-0C1D2E3F4A5B"  # their `apikey`
PHONE = "+5511988887777"
LID = "104857600012345@lid"
HIDDEN_LID = "204857600054321@lid"  # the sender of the LID-only fixture


@pytest.fixture
def evolution(client: Client, make_tenant: Any) -> dict[str, str]:
    """Tenant `acme` with an Evolution instance bound to the fixtures' instance, and a downstream."""
    tenant = make_tenant("acme")
    number = client.post("/api/numbers", key=tenant.admin, json_body={"number": "5511999990000", "displayName": "M"})
    body = {
        "name": "evo",
        "kind": "evolution",
        "baseUrl": "http://127.0.0.1:9",
        "webhookSecret": "evo-secret-1",
        "webhookScheme": "evolution-apikey",  # the fixtures carry the instance's apikey, no JWT
    }
    provider = client.post("/api/providers", key=tenant.admin, json_body=body).json()
    instance = {
        "providerId": provider["id"],
        "providerInstanceId": INSTANCE,
        "numberId": number.json()["id"],
        "token": INSTANCE_TOKEN,
        "kind": "messages",
    }
    assert client.put("/api/instances/acme-evo", key=tenant.admin, json_body=instance).status == 201
    assert put_mapping(client, tenant.admin).status == 200
    return {"provider": provider["id"], "admin": tenant.admin}


def fixture(name: str, **changes: Any) -> bytes:
    payload = json.loads((CONTRACT / name).read_bytes())
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = payload
        for part in parents:
            node = node[part]
        node[last] = value
    return json.dumps(payload).encode()


def arrives(client: Client, aws: AwsResources, evolution: dict[str, str], body: bytes) -> None:
    answer = client.post(f"/webhooks/{evolution['provider']}", body=body, headers={"Content-Type": "application/json"})
    assert (answer.status, answer.json()["outcome"]) == (200, "applied"), answer.body
    assert run_forwarder(client, aws) == {"batchItemFailures": []}  # leaves them in flight: once each


def created_contacts(fake: FakeDownstream) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.method == "POST" and r.path.endswith("/contacts") and r.body]


def message_id(n: int) -> str:
    return f"AC5D2E9F7B31C0480E5A6F1D9B2C7E{n:02d}"


def test_given_a_first_message_then_the_contact_is_created_with_the_profile_name_and_both_addresses(
    client: Client, aws: AwsResources, evolution: dict[str, str], fake: FakeDownstream
) -> None:
    arrives(client, aws, evolution, fixture("webhook_messages_upsert_conversation.json"))

    assert created_contacts(fake) == [{"inbox_id": 12, "name": "Maria Souza", "phone_number": PHONE, "identifier": LID}]


def test_given_a_contact_still_named_by_its_number_then_it_takes_the_profile_name_once(
    client: Client, aws: AwsResources, evolution: dict[str, str], fake: FakeDownstream
) -> None:
    fake.contacts[(ACME_URL, PHONE)] = 500  # made before names were forwarded: named by its number

    arrives(client, aws, evolution, fixture("webhook_messages_upsert_conversation.json"))
    arrives(client, aws, evolution, fixture("webhook_messages_upsert_conversation.json", data__key__id=message_id(2)))

    updates = [(r.path, r.body) for r in fake.requests if r.method == "PUT"]
    assert updates == [("/api/v1/accounts/7/contacts/500", {"identifier": LID, "name": "Maria Souza"})]
    assert created_contacts(fake) == []


def test_given_a_contact_an_agent_renamed_then_its_name_is_never_overwritten(
    client: Client, aws: AwsResources, evolution: dict[str, str], fake: FakeDownstream
) -> None:
    arrives(client, aws, evolution, fixture("webhook_messages_upsert_conversation.json"))
    [contact_id] = fake.people
    fake.people[contact_id]["name"] = "Maria (cliente VIP)"  # an agent's edit

    arrives(client, aws, evolution, fixture("webhook_messages_upsert_conversation.json", data__key__id=message_id(3)))

    assert fake.contact(contact_id)["name"] == "Maria (cliente VIP)"
    assert [r for r in fake.requests if r.method == "PUT"] == []


def test_given_a_sender_without_a_profile_name_then_the_contact_is_named_by_its_number(
    client: Client, aws: AwsResources, evolution: dict[str, str], fake: FakeDownstream
) -> None:
    arrives(client, aws, evolution, fixture("webhook_messages_upsert_conversation.json", data__pushName=None))

    assert [body["name"] for body in created_contacts(fake)] == [PHONE]


def test_given_a_lid_only_chat_the_provider_cannot_resolve_then_it_reaches_a_contact_keyed_by_the_lid_with_a_note(
    client: Client, aws: AwsResources, evolution: dict[str, str], fake: FakeDownstream
) -> None:
    arrives(client, aws, evolution, fixture("webhook_messages_upsert_lid_only.json"))
    arrives(
        client,
        aws,
        evolution,
        fixture("webhook_messages_upsert_lid_only.json", data__key__id="B7E3A1C9D5F2048E6A1B3C5D7E9F0A2C"),
    )

    assert created_contacts(fake) == [{"inbox_id": 12, "name": "Carlos Pereira", "identifier": HIDDEN_LID}]
    [contact_id] = fake.people
    [note] = fake.notes[contact_id]
    assert note.startswith(LID_NOTE) and HIDDEN_LID in note
    assert [r.body["content"] for r in fake.messages() if r.body] == ["Boa tarde, vocês abrem no sábado?"] * 2
    assert len(fake.conversations) == 1


def test_given_a_lid_only_contact_when_a_message_carries_its_number_then_that_contact_gets_the_number(
    client: Client, aws: AwsResources, evolution: dict[str, str], fake: FakeDownstream
) -> None:
    arrives(client, aws, evolution, fixture("webhook_messages_upsert_lid_only.json", data__pushName=None))
    [contact_id] = fake.people
    lid_addressed_with_number = fixture(
        "webhook_messages_upsert_extended_text.json",
        data__key__remoteJid=HIDDEN_LID,
        data__key__remoteJidAlt="5521977776666@s.whatsapp.net",
    )

    arrives(client, aws, evolution, lid_addressed_with_number)

    assert fake.contact(contact_id) == {
        "id": contact_id,
        "name": "Maria Souza",  # the default LID name gave way to the profile name
        "phone_number": "+5521977776666",
        "identifier": HIDDEN_LID,
    }
    assert len(created_contacts(fake)) == 1 and len(fake.conversations) == 1


def test_given_a_lid_another_contact_holds_then_the_message_still_reaches_a_contact_by_its_number(
    client: Client, aws: AwsResources, evolution: dict[str, str], fake: FakeDownstream
) -> None:
    fake.people[900] = {"origin": ACME_URL, "name": "Old", "phone_number": "+5521900000000", "identifier": LID}

    arrives(client, aws, evolution, fixture("webhook_messages_upsert_conversation.json"))

    assert created_contacts(fake)[-1] == {"inbox_id": 12, "name": "Maria Souza", "phone_number": PHONE}
    assert [r.body["content"] for r in fake.messages() if r.body] == ["Oi, tudo bem? Quero confirmar meu horário."]

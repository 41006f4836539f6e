"""Media out on the whole local stack, byte for byte at the provider simulator.

Through the API: files uploaded with `POST /api/media` (a presigned PUT to the local bucket) and
a location leave through a pool of one wuzapi, one Evolution and one Meta number, each in its
kind's own format (wuzapi's data URLs, Evolution's base64 and `sendWhatsAppAudio`, Meta's upload
and media id); with a recipient's number down the same file leaves through the next kind; a
reaction and a quoted reply leave through the conversation's number; the client's mistakes are
clear 4xx. From Chatwoot: an agent's attachments (served by a Chatwoot-shaped helpdesk as
ActiveStorage serves them) leave through the instance whose inbox posted them, and one that
cannot be fetched is told to the agent; a reply's receipt and its deletion reach back."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from devstack.seed import SeededTenant
from devstack.simulator import files
from switchboard import bootstrap
from tests.e2e.conftest import Stack
from tests.e2e.test_provider_kinds_e2e import instance_of
from tests.e2e.test_routing_e2e import map_downstream
from tests.e2e.test_templates_e2e import contact_wrote
from tools.support.downstream import FakeDownstream, ServedDownstream

KINDS = ("wuzapi", "evolution", "meta")
PHOTO, PDF, VOICE = files.png(8, 8, (200, 30, 30)), files.pdf("Pedido 4711"), files.ogg_opus(frames=25)
# What each kind's server records for a voice note: wuzapi's audio route with `ptt`, Evolution's
# `sendWhatsAppAudio`, the Cloud API's audio message.
VOICE_TYPE = {"wuzapi": "voice", "evolution": "voice", "meta": "audio"}


def recipient() -> str:
    return f"55{uuid.uuid4().int % 10**11:011d}"


# --- the API side -----------------------------------------------------------------------------


def pool_key(stack: Stack, tenant: SeededTenant) -> tuple[str, str]:
    """A send key in pool mode over the tenant's wuzapi, Evolution and Meta numbers, in that order."""
    numbers = [instance_of(tenant, kind).number for kind in KINDS]
    created = stack.api(
        "POST",
        "/api/api-keys",
        key=tenant.admin_key,
        json={"name": "media", "scopes": ["send"], "defaultNumber": numbers[0]},
    )
    assert created.status_code == 201, created.text
    key, key_id = created.json()["key"], created.json()["id"]
    path = f"/api/api-keys/{key_id}"
    mode = stack.api("PUT", f"{path}/selection-mode", key=tenant.admin_key, json={"numberSelectionMode": "pool"})
    assert mode.status_code == 200, mode.text
    for kind in KINDS:
        added = stack.api(
            "POST", f"{path}/pool", key=tenant.admin_key, json={"whatsappNumberId": instance_of(tenant, kind).number_id}
        )
        assert added.status_code in (200, 201), added.text
    return key, key_id


def upload(stack: Stack, key: str, data: bytes, mime: str, file_name: str | None = None) -> str:
    body: dict[str, Any] = {"mimeType": mime, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if file_name:
        body["fileName"] = file_name
    ticket = stack.api("POST", "/api/media", key=key, json=body)
    assert ticket.status_code == 201, ticket.text
    put = httpx.put(ticket.json()["uploadUrl"], content=data, headers=ticket.json()["uploadHeaders"], trust_env=False)
    assert put.status_code == 200, put.text
    media_id: str = ticket.json()["mediaId"]
    return media_id


def send(stack: Stack, key: str, to: str, **content: Any) -> str:
    answer = stack.api("POST", "/api/messages", key=key, json={"to": to, **content})
    assert answer.status_code == 202, answer.text
    message_id: str = answer.json()["id"]
    return message_id


def finished(stack: Stack, key: str, message_id: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        view: dict[str, Any] = stack.api("GET", f"/api/messages/{message_id}", key=key).json()
        return view if view["status"] in ("SENT", "DELIVERED", "READ", "FAILED") else None

    return stack.wait_for(done, timeout=20)


def received(stack: Stack, view: dict[str, Any]) -> dict[str, Any]:
    """What the simulator recorded for a sent message: its flavour and its record."""
    found = next(m for m in stack.sim.sent() if m["id"] == view["providerMessageId"] and m["phone"] == view["to"])
    record: dict[str, Any] = json.loads(found["body"])
    return {"flavour": found["flavour"], "instance": found["instance"], **record}


def same_bytes(record: dict[str, Any], data: bytes) -> bool:
    return record["sha256"] == hashlib.sha256(data).hexdigest() and base64.b64decode(record["base64"]) == data


def wait_pool_sees(stack: Stack, tenant: SeededTenant, key_id: str, digits: str, connected: bool) -> None:
    """The send worker caches a key's pool for a few seconds: wait until it sees the change."""
    source = bootstrap.sending_config_source()
    stack.wait_for(
        lambda: any(n.digits == digits and n.connected == connected for n in source.get(tenant.owner_tag, key_id).pool),
        timeout=15,
    )


def test_given_a_pool_of_three_kinds_then_each_kind_gets_a_photo_a_pdf_a_voice_note_and_a_location_in_its_format(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    tenant = fresh_tenant
    key, key_id = pool_key(stack, tenant)
    photo = upload(stack, key, PHOTO, "image/png")
    pdf = upload(stack, key, PDF, "application/pdf", "Pedido 4711.pdf")
    voice = upload(stack, key, VOICE, "audio/ogg")
    people = [recipient() for _ in KINDS]
    meta = instance_of(tenant, "meta")
    for to in people:  # within the Meta number's 24 h window, so the pool passes over no number
        contact_wrote(stack, tenant.admin_key, meta.sim_id, to, meta.number)

    # The first message to each new recipient goes round the pool; the next ones stay (affinity).
    first = {
        to: finished(stack, key, send(stack, key, to, media={"mediaId": photo, "type": "image", "caption": "Vermelho"}))
        for to in people
    }
    later = {
        to: [
            send(stack, key, to, media={"mediaId": pdf, "type": "document"}),
            send(stack, key, to, media={"mediaId": voice, "type": "voice"}),
            send(stack, key, to, location={"latitude": -23.5613, "longitude": -46.6565, "name": "Loja"}),
        ]
        for to in people
    }
    views = {to: [first[to], *(finished(stack, key, mid) for mid in later[to])] for to in people}

    by_kind: dict[str, list[dict[str, Any]]] = {}
    for sent in views.values():
        assert [v["status"] for v in sent] == ["SENT"] * 4, sent
        assert len({v["instance"] for v in sent}) == 1  # one conversation, one number
        by_kind[received(stack, sent[0])["flavour"]] = [received(stack, v) for v in sent]
    assert set(by_kind) == set(KINDS)
    for kind, (image, document, audio, location) in by_kind.items():
        assert (image["type"], image["caption"]) == ("image", "Vermelho") and same_bytes(image, PHOTO), kind
        assert (document["type"], document["fileName"]) == ("document", "Pedido 4711.pdf") and same_bytes(document, PDF)
        assert audio["type"] == VOICE_TYPE[kind] and same_bytes(audio, VOICE), kind
        assert (location["type"], location["latitude"], location["longitude"]) == ("location", -23.5613, -46.6565)
    # Each kind's own format: Meta sends an uploaded media id, the others the bytes themselves.
    assert all("mediaId" in record for record in by_kind["meta"][:3])
    assert not any("mediaId" in record for kind in ("wuzapi", "evolution") for record in by_kind[kind])

    # The console's view: the photo's file and a thumbnail link valid a few minutes.
    view = stack.api("GET", f"/api/messages/{views[people[0]][0]['id']}", key=key).json()
    assert {k: view["media"][k] for k in ("type", "caption", "mimeType", "size")} == {
        "type": "image",
        "caption": "Vermelho",
        "mimeType": "image/png",
        "size": len(PHOTO),
    }
    preview = httpx.get(view["media"]["previewUrl"], trust_env=False)
    assert (preview.status_code, preview.content, preview.headers["content-type"]) == (200, PHOTO, "image/png")
    assert stack.api("GET", f"/api/messages/{views[people[0]][1]['id']}", key=key).json()["media"]["previewUrl"] is None

    # With a recipient's number down, the same file leaves through the pool's next number, of another kind.
    to = next(p for p in people if received(stack, views[p][0])["flavour"] == "wuzapi")
    down = instance_of(tenant, "wuzapi")
    stack.sim.set_connection(down.sim_id, False)
    wait_pool_sees(stack, tenant, key_id, down.number, False)
    moved = finished(stack, key, send(stack, key, to, media={"mediaId": photo, "type": "image"}))
    stack.sim.set_connection(down.sim_id, True)

    record = received(stack, moved)
    assert moved["status"] == "SENT" and record["flavour"] == "evolution" and same_bytes(record, PHOTO)
    skipped = [e["data"] for e in moved["trace"] if e["stage"] == "pool.number.skipped"]
    assert skipped and skipped[0]["number"] == down.number

    # A reaction and a quoted reply leave through the conversation's number (Meta's, here).
    meta_to = next(p for p in people if received(stack, views[p][0])["flavour"] == "meta")
    reaction = finished(
        stack, key, send(stack, key, meta_to, reaction={"messageId": views[meta_to][1]["id"], "emoji": "👍"})
    )
    quoted = finished(stack, key, send(stack, key, meta_to, text="Segue o pedido", replyTo=views[meta_to][1]["id"]))

    assert reaction["instance"] == quoted["instance"] == views[meta_to][1]["instance"]
    reacted = next(
        json.loads(m["body"]) for m in stack.sim.sent() if m["phone"] == meta_to and '"reaction"' in m["body"]
    )
    assert reacted == {"type": "reaction", "messageId": views[meta_to][1]["providerMessageId"], "emoji": "👍"}
    text = next(m for m in stack.sim.sent() if m["id"] == quoted["providerMessageId"])
    assert text["instance"] == instance_of(tenant, "meta").sim_id


def test_given_a_clients_mistakes_then_each_is_a_clear_4xx(stack: Stack, fresh_tenant: SeededTenant) -> None:
    key, _ = pool_key(stack, fresh_tenant)
    to = recipient()
    big_image = upload(stack, key, files.png() + bytes(5 * 1024 * 1024), "image/png")
    pdf_as_image = upload(stack, key, PDF, "image/png")

    cases: dict[str, dict[str, Any]] = {
        "over the kind's limit": {"media": {"mediaId": big_image, "type": "image"}},
        "a wrong type": {"media": {"mediaId": pdf_as_image, "type": "image"}},
        "an expired mediaId": {"media": {"mediaId": "med_0123456789abcdef0123", "type": "image"}},
        "two content fields": {"text": "oi", "location": {"latitude": 1.5, "longitude": 2.5}},
    }
    answers = {
        name: stack.api("POST", "/api/messages", key=key, json={"to": to, **body}) for name, body in cases.items()
    }
    too_large = stack.api(
        "POST", "/api/media", key=key, json={"mimeType": "application/pdf", "size": 100 * 1024 * 1024 + 1}
    )

    assert {name: (a.status_code, a.json()["error"]) for name, a in answers.items()} == {
        "over the kind's limit": (413, "too_large"),
        "a wrong type": (422, "bad_type"),
        "an expired mediaId": (422, "media_not_found"),
        "two content fields": (422, answers["two content fields"].json()["error"]),
    }
    assert "exactly one of" in answers["two content fields"].json()["message"]
    assert too_large.status_code == 422
    assert not [m for m in stack.sim.sent() if m["phone"] == to]


# --- the Chatwoot side ------------------------------------------------------------------------


@pytest.fixture
def helpdesk(stack: Stack, fresh_tenant: SeededTenant) -> Iterator[tuple[FakeDownstream, ServedDownstream]]:
    fake = FakeDownstream()
    served = fake.serve()
    map_downstream(stack, fresh_tenant, served.url, inbox=61)
    yield fake, served
    served.stop()


def webhook_secret(stack: Stack, tenant: SeededTenant, name: str) -> str:
    answer = stack.api("POST", f"/api/instances/{name}/webhook-secret", key=tenant.admin_key)
    assert answer.status_code == 201, answer.text
    secret: str = answer.json()["secret"]
    return secret


def agent_message(
    fake: FakeDownstream, conversation: int, phone: str, content: str | None, attachments: list[dict[str, Any]]
) -> dict[str, Any]:
    """Chatwoot's `message_created` for an agent's message in the helpdesk (`Message#webhook_data`)."""
    message_id = fake.agent_message(conversation, content)
    body: dict[str, Any] = {
        "event": "message_created",
        "id": message_id,
        "content": content,
        "content_type": "text",
        "content_attributes": {},
        "message_type": "outgoing",
        "private": False,
        "source_id": None,
        "conversation": {"id": conversation, "meta": {"sender": {"phone_number": f"+{phone}", "identifier": None}}},
    }
    if attachments:
        body["attachments"] = [
            {"id": n, "message_id": message_id, "account_id": 5, **a} for n, a in enumerate(attachments)
        ]
    return body


def file_attachment(
    fake: FakeDownstream, origin: str, file_type: str, data: bytes, *, mime: str, name: str
) -> dict[str, Any]:
    return {
        "file_type": file_type,
        "extension": name.rsplit(".", 1)[-1],
        "content_type": mime,
        "data_url": fake.attach(origin, data, mime, name),
        "thumb_url": "",
        "file_size": len(data),
    }


def post(stack: Stack, tenant: SeededTenant, name: str, secret: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = stack.api("POST", f"/api/tenants/{tenant.owner_tag}/instances/{name}/webhook?token={secret}", json=body)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def test_given_agents_attachments_then_each_reaches_the_customer_through_its_instance_and_the_agent_hears_back(
    stack: Stack, fresh_tenant: SeededTenant, helpdesk: tuple[FakeDownstream, ServedDownstream]
) -> None:
    tenant, (fake, served) = fresh_tenant, helpdesk
    phone = recipient()
    conversation = fake.open_conversation(served.url, f"+{phone}", inbox_id=61)
    instances = {kind: instance_of(tenant, kind) for kind in KINDS}
    secrets = {kind: webhook_secret(stack, tenant, instance.name) for kind, instance in instances.items()}
    green = files.png(8, 8, (30, 200, 30))
    meta = instances["meta"]
    contact_wrote(stack, tenant.admin_key, meta.sim_id, phone, meta.number)  # the Meta number answers within 24 h

    def reply(kind: str, content: str | None, *attachments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        body = agent_message(fake, conversation, phone, content, list(attachments))
        return body, post(stack, tenant, instances[kind].name, secrets[kind], body)

    def to_customer(kind: str) -> list[dict[str, Any]]:
        sim_id = instances[kind].sim_id
        return [json.loads(m["body"]) for m in stack.sim.sent() if m["instance"] == sim_id and m["phone"] == phone]

    _, photos = reply(
        "wuzapi",
        "As duas cores",
        file_attachment(fake, served.url, "image", PHOTO, mime="image/png", name="vermelho.png"),
        file_attachment(fake, served.url, "image", green, mime="image/png", name="verde.png"),
    )
    _, recording = reply(
        "evolution", None, file_attachment(fake, served.url, "audio", VOICE, mime="audio/ogg", name="rec.ogg")
    )
    _, document = reply(
        "meta", None, file_attachment(fake, served.url, "file", PDF, mime="application/pdf", name="Pedido 4711.pdf")
    )
    located = {
        "file_type": "location",
        "coordinates_lat": -23.5613,
        "coordinates_long": -46.6565,
        "fallback_title": "Loja",
    }
    _, location = reply("wuzapi", None, located)

    assert [r["status"] for r in (photos, recording, document, location)] == ["SENT"] * 4
    first, second, place = to_customer("wuzapi")
    assert (first["type"], first["caption"], second["type"], second.get("caption")) == (
        "image",
        "As duas cores",
        "image",
        None,
    )
    assert same_bytes(first, PHOTO) and same_bytes(second, green)
    assert (place["type"], place["latitude"], place["longitude"], place["name"]) == (
        "location",
        -23.5613,
        -46.6565,
        "Loja",
    )
    [voice] = to_customer("evolution")
    assert voice["type"] == "voice" and same_bytes(voice, VOICE)
    [pdf] = to_customer("meta")
    assert (
        (pdf["type"], pdf["fileName"]) == ("document", "Pedido 4711.pdf") and same_bytes(pdf, PDF) and "mediaId" in pdf
    )

    # An attachment the helpdesk no longer hands over: the agent is told, nothing leaves.
    gone = file_attachment(fake, served.url, "file", PDF, mime="application/pdf", name="Contrato.pdf")
    fake.gone.add(gone["data_url"].split("/")[-2])
    body, failed = reply("wuzapi", None, gone)
    notes = [m for m in fake.posted[conversation] if m["private"]]
    assert failed["status"] == "FAILED" and len(to_customer("wuzapi")) == 3
    assert [n["content"] for n in notes] == [
        f"The attachment (Contrato.pdf) of message {body['id']} was not sent through {instances['wuzapi'].name}:"
        " the helpdesk answered 404."
    ]
    assert fake.status_of(body["id"]) == ("failed", "none of its attachments could be sent")

    # WhatsApp's receipt of the PDF is shown on the agent's message; the agent deletes the photos.
    pdf_id = next(
        m["id"] for m in stack.sim.sent() if m["instance"] == instances["meta"].sim_id and m["phone"] == phone
    )
    stack.sim.receipt(instances["meta"].sim_id, pdf_id, "delivered")
    stack.wait_for(lambda: fake.status_of(document_id(fake, conversation, 2))[0] == "delivered", timeout=15)
    deletion = {
        "event": "message_updated",  # `MessagesController#destroy`
        "id": document_id(fake, conversation, 0),
        "content": "This message was deleted",
        "content_type": "text",
        "content_attributes": {"deleted": True},
        "message_type": "outgoing",
        "private": False,
        "source_id": None,
        "conversation": {"id": conversation, "meta": {"sender": {"phone_number": f"+{phone}", "identifier": None}}},
    }
    deleted = post(stack, tenant, instances["wuzapi"].name, secrets["wuzapi"], deletion)

    assert deleted["status"] == "REVOKED"
    revoked = [r for r in to_customer("wuzapi") if r["type"] == "revoke"]
    photo_ids = [
        m["id"] for m in stack.sim.sent() if m["instance"] == instances["wuzapi"].sim_id and '"image"' in m["body"]
    ]
    assert sorted(r["messageId"] for r in revoked) == sorted(photo_ids)


def document_id(fake: FakeDownstream, conversation: int, index: int) -> int:
    """The id of the `index`-th agent message of the conversation (private notes left out)."""
    agents = [m for m in fake.posted[conversation] if m["message_type"] == 1 and not m["private"]]
    return int(agents[index]["id"])

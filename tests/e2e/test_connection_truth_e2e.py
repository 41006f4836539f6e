"""Connection state from the provider, on the whole local stack: numbers already paired are
connected as soon as they are registered (no connection webhook ever arrives), sessions lost
without a webhook are seen by the next reconciliation, Meta numbers are connected by nature (their
Chatwoot replies leave) and paused when the Graph API restricts them, and a captured `LoggedOut`
replayed after the number reconnected changes nothing."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e.conftest import Stack
from tests.e2e.test_templates_e2e import contact_wrote
from tools.support.downstream import FakeDownstream, ServedDownstream, agent_reply

CONTACT = "5511977770001"
SCHEDULED = {"version": "0", "detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}


@dataclass
class Tenant:
    """A tenant of its own, registered through the API as an operator would, nothing seeded."""

    stack: Stack
    owner_tag: str
    admin: str
    providers: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)

    def provider(self, flavour: str) -> str:
        if flavour not in self.providers:
            secret = secrets.token_urlsafe(32)  # 43 characters: a wuzapi HMAC key needs 32+
            body = {
                "name": flavour,
                "kind": flavour,
                "baseUrl": f"{self.stack.sim_url}/{flavour}",
                "webhookSecret": secret,
            }
            answer = self.stack.api("POST", "/api/providers", key=self.admin, json=body)
            assert answer.status_code == 201, answer.text
            self.providers[flavour], self.secrets[flavour] = answer.json()["id"], secret
        return self.providers[flavour]

    def number(self, meta_phone_id: str | None = None) -> tuple[str, str]:
        digits = "55" + str(uuid.uuid4().int % 10**11).zfill(11)
        body: dict[str, Any] = {"number": digits, "displayName": digits}
        if meta_phone_id:
            body["metaPhoneId"] = meta_phone_id
        answer = self.stack.api("POST", "/api/numbers", key=self.admin, json=body)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"]), digits

    def register(self, flavour: str, *, paired: bool = True, webhook: bool = False) -> Line:
        """A session on the simulator (already paired: no connection webhook will ever come), then
        the instance registered through `PUT /api/instances/{name}`."""
        name = f"{self.owner_tag}-{flavour}-{uuid.uuid4().hex[:6]}"
        meta_phone_id = str(uuid.uuid4().int % 10**15).zfill(15) if flavour == "meta" else None
        number_id, digits = self.number(meta_phone_id)
        provider_id = self.provider(flavour)
        token = secrets.token_urlsafe(24)
        fields: dict[str, Any] = {"id": name, "token": token, "flavour": flavour, "number": digits}
        fields["connected"] = paired
        if webhook:
            fields |= {
                "webhookUrl": f"{self.stack.api_url}/webhooks/{provider_id}",
                "webhookSecret": self.secrets[flavour],
            }
        if meta_phone_id:
            fields["metaPhoneId"] = meta_phone_id
        self.stack.sim.create_instance(**fields)
        instance = meta_phone_id or name
        body = {"providerId": provider_id, "providerInstanceId": instance, "numberId": number_id, "token": token}
        answer = self.stack.api("PUT", f"/api/instances/{instance}", key=self.admin, json=body)
        assert answer.status_code == 201, answer.text
        return Line(self, name, instance, number_id, digits, answer.json()["state"])

    def states(self) -> dict[str, str]:
        answer = self.stack.api("GET", "/api/instances", key=self.admin)
        assert answer.status_code == 200, answer.text
        return {item["name"]: item["state"] for item in answer.json()}


@dataclass
class Line:
    tenant: Tenant
    sim_id: str
    name: str
    number_id: str
    digits: str
    state_on_save: str

    def send(self, to: str, text: str) -> dict[str, Any]:
        stack, tenant = self.tenant.stack, self.tenant
        key = stack.api(
            "POST",
            "/api/api-keys",
            key=tenant.admin,
            json={"name": self.name, "scopes": ["send"], "defaultNumber": self.digits},
        ).json()["key"]
        answer = stack.api("POST", "/api/messages", key=key, json={"to": to, "text": text})
        assert answer.status_code == 202, answer.text

        def finished() -> dict[str, Any] | None:
            message: dict[str, Any] = stack.api("GET", f"/api/messages/{answer.json()['id']}", key=key).json()
            return message if message["status"] in ("SENT", "FAILED") else None

        return stack.wait_for(finished, timeout=30)

    def health(self) -> dict[str, Any]:
        answer = self.tenant.stack.api("GET", f"/api/instances/{self.name}/health", key=self.tenant.admin)
        assert answer.status_code == 200, answer.text
        health: dict[str, Any] = answer.json()
        return health

    def reply(self, text: str, message_id: int) -> dict[str, Any]:
        """An agent's public reply in the instance's Chatwoot inbox, as its webhook posts it."""
        stack, tenant = self.tenant.stack, self.tenant
        created = stack.api("POST", f"/api/instances/{self.name}/webhook-secret", key=tenant.admin)
        assert created.status_code == 201, created.text
        return reply(
            stack, tenant.owner_tag, self.name, secret=created.json()["secret"], text=text, message_id=message_id
        )


def reply(stack: Stack, owner_tag: str, name: str, *, secret: str, text: str, message_id: int) -> dict[str, Any]:
    body = agent_reply(message_id, text, conversation=4242, phone=CONTACT)
    answer = stack.api(
        "POST",
        f"/api/tenants/{owner_tag}/instances/{name}/webhook",
        json=body,
        headers={"X-Switchboard-Secret": secret},
    )
    assert answer.status_code == 200, answer.text
    outcome: dict[str, Any] = answer.json()
    return outcome


@pytest.fixture
def tenant(stack: Stack) -> Tenant:
    owner_tag = f"c{uuid.uuid4().hex[:10]}"
    created = stack.api("POST", "/api/tenants", key=stack.platform_key, json={"ownerTag": owner_tag, "name": owner_tag})
    assert created.status_code == 201, created.text
    return Tenant(stack, owner_tag, created.json()["adminKey"]["key"])


@pytest.fixture
def helpdesk() -> Iterator[tuple[FakeDownstream, ServedDownstream]]:
    fake = FakeDownstream()
    served = fake.serve()
    yield fake, served
    served.stop()


def reconcile_period(stack: Stack) -> None:
    """One scheduled period: the scheduler's fan-out, as EventBridge invokes it; the worker takes
    the queue from there."""
    assert stack.local.functions is not None  # a started stack serves its functions
    stack.local.functions.invoke("ReconcileSchedulerFunction", SCHEDULED)


def test_paired_wuzapi_and_evolution_numbers_are_connected_at_once_send_and_are_seen_disconnected_by_the_next_period(
    stack: Stack, tenant: Tenant
) -> None:
    wuzapi, evolution = tenant.register("wuzapi"), tenant.register("evolution")

    assert (wuzapi.state_on_save, evolution.state_on_save) == ("CONNECTED", "CONNECTED")
    assert tenant.states() == {wuzapi.name: "CONNECTED", evolution.name: "CONNECTED"}
    assert stack.sim.events(wuzapi.sim_id) == stack.sim.events(evolution.sim_id) == []
    for line in (wuzapi, evolution):
        sent = line.send(CONTACT, f"olá de {line.name}")
        assert (sent["status"], sent["instance"]) == ("SENT", line.name), sent
    assert {
        (m["instance"], m["phone"]) for m in stack.sim.sent() if m["instance"] in (wuzapi.sim_id, evolution.sim_id)
    } == {
        (wuzapi.sim_id, CONTACT),
        (evolution.sim_id, CONTACT),
    }

    # Lost on the provider's side, and no webhook says so.
    stack.sim.set_connection(wuzapi.sim_id, False, notify=False)
    stack.sim.set_connection(evolution.sim_id, False, notify=False)
    assert tenant.states() == {wuzapi.name: "CONNECTED", evolution.name: "CONNECTED"}
    reconcile_period(stack)

    stack.wait_for(lambda: set(tenant.states().values()) == {"DISCONNECTED"}, timeout=30)
    failed = wuzapi.send(CONTACT, "depois da queda")
    assert (failed["status"], failed["failureReason"]) == ("FAILED", "no_number_available"), failed


def test_a_meta_number_is_connected_its_chatwoot_reply_is_sent_and_a_restricted_number_is_paused(
    stack: Stack, tenant: Tenant
) -> None:
    meta = tenant.register("meta", webhook=True)
    contact_wrote(stack, tenant.admin, meta.sim_id, CONTACT, meta.digits)  # an agent answers who wrote in

    assert meta.state_on_save == tenant.states()[meta.name] == "CONNECTED"
    assert meta.reply("resposta pelo número oficial", 5001)["status"] == "SENT"
    [sent] = [m for m in stack.sim.sent() if m["instance"] == meta.sim_id]
    assert (sent["phone"], sent["body"]) == (CONTACT, "resposta pelo número oficial")
    assert meta.health()["state"] == "healthy"

    stack.sim.number_status(meta.sim_id, status="RESTRICTED")
    reconcile_period(stack)

    health = stack.wait_for(lambda: meta.health() if meta.health()["state"] != "healthy" else None, timeout=30)
    assert health["state"] == "paused_for_new_contacts"
    assert [(reason["code"], reason["until"]) for reason in health["reasons"]] == [("meta_status_restricted", None)]
    assert tenant.states()[meta.name] == "CONNECTED"  # still connected: the health says what it may do


def test_the_demo_meta_number_answers_its_chatwoot_replies(stack: Stack) -> None:
    demo = stack.demo
    name = f"{demo.owner_tag}-6"
    assert demo.instance(name).flavour == "meta"
    secret = stack.api("POST", f"/api/instances/{name}/webhook-secret", key=demo.admin_key).json()["secret"]
    contact_wrote(stack, demo.admin_key, name, CONTACT, demo.instance(name).number)

    outcome = reply(stack, demo.owner_tag, name, secret=secret, text="olá do demo-6", message_id=5002)

    assert outcome["status"] == "SENT", outcome
    assert [m["body"] for m in stack.sim.sent() if m["instance"] == name] == ["olá do demo-6"]
    listed = stack.api("GET", "/api/instances", key=demo.admin_key).json()
    assert next(item["state"] for item in listed if item["name"] == name) == "CONNECTED"


def test_a_captured_logged_out_replayed_after_the_number_reconnected_cannot_take_it_out_of_the_pool(
    stack: Stack, tenant: Tenant, helpdesk: tuple[FakeDownstream, ServedDownstream]
) -> None:
    fake, served = helpdesk
    mapped = stack.api(
        "PUT",
        f"/api/tenants/{tenant.owner_tag}",
        key=tenant.admin,
        json={
            "downstreamBaseUrl": served.url,
            "downstreamApiToken": f"cw-{tenant.owner_tag}-token",
            "downstreamAccountId": 3,
            "downstreamInboxId": 9,
        },
    )
    assert mapped.status_code == 200, mapped.text
    line = tenant.register("wuzapi", paired=False, webhook=True)
    stack.sim.set_connection(line.sim_id, True)  # paired by QR code: wuzapi posts Connected
    stack.wait_for(lambda: tenant.states()[line.name] == "CONNECTED")

    # The number is logged out (wuzapi posts LoggedOut, signed over its bytes only), then paired again.
    stack.sim.set_connection(line.sim_id, False)
    stack.wait_for(lambda: tenant.states()[line.name] == "DISCONNECTED" and line.health()["state"] == "paused")
    [logged_out] = [e for e in stack.sim.events(line.sim_id) if e["payload"].get("type") == "LoggedOut"]
    stack.sim.set_connection(line.sim_id, True)
    stack.wait_for(lambda: tenant.states()[line.name] == "CONNECTED" and line.health()["state"] == "healthy")

    # Someone who captured the delivery posts it again, byte for byte, signature and all. wuzapi
    # delivers an instance's webhooks in order: once the message after it reached the helpdesk,
    # the replay has been answered.
    stack.sim.redeliver(logged_out["eventId"])
    stack.sim.incoming_message(line.sim_id, CONTACT, "depois do replay")
    stack.wait_for(
        lambda: [r for r in fake.messages() if r.body and r.body.get("content") == "depois do replay"], timeout=20
    )

    assert tenant.states()[line.name] == "CONNECTED"
    assert line.health()["state"] == "healthy"
    sent = line.send(CONTACT, "ainda no pool")
    assert (sent["status"], sent["instance"]) == ("SENT", line.name), sent

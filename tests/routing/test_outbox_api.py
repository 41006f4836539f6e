"""Replies through `/api/tenants/{owner_tag}/instances/{name}/webhook`: secret, outbox, drain on reconnect, expiry."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.routing.outbox import OutboxService
from switchboard.routing.outbox_dynamo import OutboxRepository
from tests.support.samples import sample_event
from tools.support.api import SECRET_WATCH, Client
from tools.support.aws import AwsResources
from tools.support.downstream import FakeDownstream, agent_reply
from tools.support.provider_webhooks import INSTANCE_TOKEN, Catalog, build_catalog, deliver, envelope

PHONE = "5511988887777"
CONTRACTS = Path(__file__).resolve().parents[1] / "contracts"


@pytest.fixture
def provider_instance(control: SimulatorControl) -> tuple[SimulatorControl, str]:
    """A connected messages instance on the simulator: its control API and its id."""
    instance_id = f"out-{uuid.uuid4().hex[:8]}"
    control.create_instance(
        id=instance_id, token=f"{INSTANCE_TOKEN}-{instance_id}", kind="messages", number="5511900000001", connected=True
    )
    return control, instance_id


@pytest.fixture
def sim_catalog(
    client: Client, make_tenant: Any, simulator: Simulator, provider_instance: tuple[SimulatorControl, str], fake: Any
) -> Catalog:
    """Tenant `acme`'s catalog whose provider is the simulator and whose instance is `provider_instance`."""
    _, instance_id = provider_instance
    return build_catalog(
        client,
        make_tenant("acme"),
        base_url=simulator.base_url,
        provider_instance_id=instance_id,
        token=f"{INSTANCE_TOKEN}-{instance_id}",
    )


@pytest.fixture
def secret(client: Client, sim_catalog: Catalog) -> str:
    answer = client.post("/api/instances/acme-main/webhook-secret", key=sim_catalog.tenant.admin)
    assert answer.status == 201, answer.body
    value: str = answer.json()["secret"]
    SECRET_WATCH.secrets.add(value)
    return value


def reply(message_id: int, text: str, **overrides: Any) -> dict[str, Any]:
    return {**agent_reply(message_id, text, conversation=55, phone=PHONE, account={"id": 7}), **overrides}


def customer(conversation: int) -> dict[str, Any]:
    """The webhook's `conversation`: its id and the customer's number."""
    return {"id": conversation, "meta": {"sender": {"phone_number": f"+{PHONE}"}}}


def post_reply(client: Client, secret: str | None, body: dict[str, Any], name: str = "acme-main") -> Any:
    headers = {"X-Switchboard-Secret": secret} if secret is not None else {}
    return client.post(f"/api/tenants/acme/instances/{name}/webhook", json_body=body, headers=headers)


def sent_to_provider(control: SimulatorControl, instance_id: str) -> list[str]:
    return [message["body"] for message in control.sent() if message["instance"] == instance_id]


def deliver_connection(client: Client, catalog: Catalog, seq: int, connected: bool = True) -> None:
    """A signed `connection` webhook of the catalog's instance, through the API."""
    body = envelope("connection", catalog.provider_instance_id, {"connected": connected}, seq=seq)
    answer = deliver(client, catalog.provider_id, body)
    assert answer.status == 200, answer.body


# --- authentication ----------------------------------------------------------------------


def test_given_no_or_a_wrong_secret_when_posting_a_reply_then_the_same_401(
    client: Client, sim_catalog: Catalog, secret: str, make_tenant: Any
) -> None:
    answers = [
        post_reply(client, None, reply(1, "a")),
        post_reply(client, "sbwh_wrong-secret-value", reply(1, "a")),
        post_reply(client, secret, reply(1, "a"), name="no-such-instance"),
        post_reply(client, secret + "x", reply(1, "a")),
    ]

    assert {(answer.status, answer.body) for answer in answers} == {(401, answers[0].body)}
    assert answers[0].json()["error"] == "invalid_webhook_secret"


def test_given_a_rotated_secret_when_the_old_one_is_used_then_401(
    client: Client, sim_catalog: Catalog, secret: str
) -> None:
    rotated = client.post("/api/instances/acme-main/webhook-secret", key=sim_catalog.tenant.admin).json()["secret"]
    SECRET_WATCH.secrets.add(rotated)

    assert post_reply(client, secret, reply(1, "old")).status == 401
    assert post_reply(client, rotated, reply(1, "new")).status == 200


def test_given_another_tenant_when_it_asks_for_the_instance_secret_then_404(
    client: Client, sim_catalog: Catalog, make_tenant: Any
) -> None:
    globex = make_tenant("globex")

    assert client.post("/api/instances/acme-main/webhook-secret", key=globex.admin).status == 404


# --- sending and the outbox --------------------------------------------------------------


def test_given_a_connected_instance_when_a_reply_arrives_then_it_is_sent_at_once_and_counted(
    client: Client, aws: AwsResources, sim_catalog: Catalog, secret: str, provider_instance: Any
) -> None:
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1)

    answer = post_reply(client, secret, reply(101, "Olá, como posso ajudar?"))

    assert (answer.status, answer.json()["status"]) == (200, "SENT")
    assert sent_to_provider(control, instance_id) == ["Olá, como posso ajudar?"]
    month = datetime.now(UTC).strftime("%Y-%m")
    usage = client.get(f"/api/usage/summary?month={month}", key=sim_catalog.tenant.admin).json()
    assert (usage[0]["messagesOut"], usage[0]["instances"][0]["messagesOut"]) == (1, 1)


def test_given_a_disconnected_instance_when_replies_arrive_then_they_wait_and_go_out_in_order_on_reconnect(
    client: Client, sim_catalog: Catalog, secret: str, provider_instance: Any
) -> None:
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1, connected=False)

    answers = [post_reply(client, secret, reply(200 + n, f"reply {n}")) for n in range(3)]
    waiting = sent_to_provider(control, instance_id)
    deliver_connection(client, sim_catalog, seq=2)

    assert [answer.json()["status"] for answer in answers] == ["PENDING"] * 3
    assert waiting == []
    assert sent_to_provider(control, instance_id) == ["reply 0", "reply 1", "reply 2"]
    assert post_reply(client, secret, reply(200, "reply 0")).json()["status"] == "SENT"  # a redelivery
    assert sent_to_provider(control, instance_id) == ["reply 0", "reply 1", "reply 2"]


def test_given_the_same_reply_delivered_twice_while_connected_then_it_is_sent_once(
    client: Client, sim_catalog: Catalog, secret: str, provider_instance: Any
) -> None:
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1)

    statuses = [post_reply(client, secret, reply(300, "only once")).json()["status"] for _ in range(2)]

    assert statuses == ["SENT", "SENT"]
    assert sent_to_provider(control, instance_id) == ["only once"]


def test_given_the_provider_refuses_while_we_think_it_is_connected_then_the_reply_waits(
    client: Client, sim_catalog: Catalog, secret: str, provider_instance: Any
) -> None:
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1)
    control.set_connection(instance_id, False)

    answer = post_reply(client, secret, reply(400, "later"))
    control.set_connection(instance_id, True)
    deliver_connection(client, sim_catalog, seq=5)

    assert answer.json()["status"] == "PENDING"
    assert sent_to_provider(control, instance_id) == ["later"]


def test_given_a_reply_older_than_its_validity_when_drained_then_failed_with_a_reason_reported_downstream(
    client: Client, sim_catalog: Catalog, secret: str, provider_instance: Any, fake: FakeDownstream
) -> None:
    control, instance_id = provider_instance
    client.put(
        "/api/tenants/acme",
        key=sim_catalog.tenant.admin,
        json_body={
            "downstreamBaseUrl": "http://127.0.0.1:9301",
            "downstreamApiToken": "cw-token-outbox-very-secret",
            "downstreamAccountId": 7,
            "downstreamInboxId": 12,
        },
    )
    conversation = fake.open_conversation("http://127.0.0.1:9301", f"+{PHONE}", inbox_id=12)
    deliver_connection(client, sim_catalog, seq=1, connected=False)
    post_reply(client, secret, reply(500, "too late", conversation=customer(conversation)))
    later = datetime.now(UTC) + timedelta(hours=4, minutes=1)
    real = bootstrap.outbox_service()
    expired_clock = OutboxService(
        OutboxRepository(bootstrap.table()),
        bootstrap.catalog_repository(),
        bootstrap.targets(),
        usage=bootstrap.usage_recorder(),
        downstreams=bootstrap.downstream_resolver(),
        downstream_client=bootstrap.downstream_client(),
        audit=bootstrap.audit_log(),
        clock=lambda: later,
    )

    swept = expired_clock.drain_all()
    deliver_connection(client, sim_catalog, seq=2)

    assert swept["acme:acme-main"].failed == 1
    assert real.drain("acme:acme-main").sent == 0
    assert sent_to_provider(control, instance_id) == []
    answer = post_reply(client, secret, reply(500, "too late", conversation=customer(conversation))).json()
    assert answer["status"] == "FAILED" and "expired" in answer["reason"]
    [note] = fake.messages()
    assert note.path == f"/api/v1/accounts/7/conversations/{conversation}/messages"
    assert note.body is not None and note.body["private"] is True and "500" in note.body["content"]


IGNORED = [
    reply(600, "a note", private=True),
    reply(601, "from the contact", message_type="incoming"),
    {"event": "conversation_status_changed", "id": 5},
    reply(602, "no phone", conversation={"id": 55, "meta": {"sender": {}}}),
]


def test_given_something_other_than_a_public_outgoing_message_then_ignored(
    client: Client, sim_catalog: Catalog, secret: str, provider_instance: Any
) -> None:
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1)

    answers = [post_reply(client, secret, body) for body in IGNORED]

    assert [(answer.status, answer.json()["status"]) for answer in answers] == [(200, "IGNORED")] * len(IGNORED)
    assert sent_to_provider(control, instance_id) == []


def test_given_a_body_that_is_not_json_then_400(client: Client, sim_catalog: Catalog, secret: str) -> None:
    answer = client.post(
        "/api/tenants/acme/instances/acme-main/webhook", body=b"nope", headers={"X-Switchboard-Secret": secret}
    )

    assert (answer.status, answer.json()["error"]) == (400, "invalid_webhook_body")


def test_given_a_reply_left_in_the_outbox_of_a_connected_instance_when_the_schedule_runs_then_it_is_sent(
    client: Client, sim_catalog: Catalog, secret: str, provider_instance: Any
) -> None:
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1, connected=False)
    post_reply(client, secret, reply(700, "swept"))
    # Connected by a path that does not drain (e.g. a reconciliation read), so only the schedule can.
    bootstrap.connection_state_repository().apply_event("acme:acme-main", "CONNECTED", 2, datetime.now(UTC))
    scheduled = sample_event("scheduled.json")

    summary = client._api.functions.invoke("RoutingSweepFunction", scheduled)

    assert summary["outboxes"]["acme:acme-main"]["sent"] == 1
    assert sent_to_provider(control, instance_id) == ["swept"]


def test_given_chatwoots_own_message_created_posted_to_the_webhook_url_without_a_header_then_sent(
    client: Client, sim_catalog: Catalog, provider_instance: Any
) -> None:
    """Chatwoot's API-channel inbox cannot add a header: its secret travels in the pasted URL."""
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1)
    created = client.post("/api/instances/acme-main/webhook-secret", key=sim_catalog.tenant.admin).json()
    SECRET_WATCH.secrets.add(created["secret"])
    url = created["webhookUrl"]
    body = (CONTRACTS / "chatwoot" / "webhook_message_created_outgoing.json").read_bytes()

    answer = client.post(url[url.index("/api/") :], body=body)
    forged = client.post("/api/tenants/acme/instances/acme-main/webhook?token=sbwh_forged", body=body)

    assert url.endswith(f"/api/tenants/acme/instances/acme-main/webhook?token={created['secret']}")
    assert (answer.status, answer.json()["status"]) == (200, "SENT")
    assert sent_to_provider(control, instance_id) == [json.loads(body)["content"]]
    assert forged.status == 401


def test_given_chatwoots_private_note_or_incoming_echo_then_nothing_is_sent(
    client: Client, sim_catalog: Catalog, secret: str, provider_instance: Any
) -> None:
    control, instance_id = provider_instance
    deliver_connection(client, sim_catalog, seq=1)
    for fixture in ("webhook_message_created_private_note.json", "webhook_message_created_incoming.json"):
        body = (CONTRACTS / "chatwoot" / fixture).read_bytes()
        answer = client.post(f"/api/tenants/acme/instances/acme-main/webhook?token={secret}", body=body)
        assert (answer.status, answer.json()["status"]) == (200, "IGNORED")
    assert sent_to_provider(control, instance_id) == []

"""The operators' view on the whole local stack: 10 customer messages to a Meta number, half before
the tenant had a helpdesk; 50 sends through it to those customers (within their 24 h window), some
refused with Meta's 131049; a client webhook endpoint down while all that happens, then back. The
admin lists today's failures with Meta's code, reads one customer's conversation in order, finds
the incoming messages that were not forwarded and why, and replays the webhook deliveries that ran
out of attempts: each arrives once, signed with the key's secret, under its first webhook-id.
Another tenant sees none of it; every listing pages with a cursor, and no request is a Scan."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto.dynamodb.models import DynamoDBBackend
from standardwebhooks import Webhook

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack
from tests.e2e.test_routing_e2e import map_downstream
from tools.support.downstream import FakeDownstream
from tools.support.hooks import SwitchedReceiver

CUSTOMERS = tuple(f"55119555{n:05d}" for n in range(5))
SENDS = 50
REFUSED = 10  # Meta answers 131049 to the first sends


@pytest.fixture
def endpoint() -> Iterator[SwitchedReceiver]:
    served = SwitchedReceiver()
    yield served
    served.stop()


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every Scan the embedded endpoint serves during the test (the stack runs in this process)."""
    seen: list[str] = []
    original = DynamoDBBackend.scan

    def recording(self: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(table_name)
        return original(self, table_name, *args, **kwargs)

    monkeypatch.setattr(DynamoDBBackend, "scan", recording)
    return seen


def ok(answer: Any, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def every_page(stack: Stack, path: str, key: str, limit: int = 20) -> list[dict[str, Any]]:
    """Every item of a listing, walked a page of `limit` at a time with its cursor."""
    separator = "&" if "?" in path else "?"
    page = ok(stack.api("GET", f"{path}{separator}limit={limit}", key=key))
    items = list(page["items"])
    while page["cursor"]:
        page = ok(stack.api("GET", f"{path}{separator}limit={limit}&cursor={page['cursor']}", key=key))
        items += page["items"]
    return items


def test_an_admin_sees_failures_conversations_and_unforwarded_messages_and_replays_missed_webhooks(
    stack: Stack, fresh_tenant: SeededTenant, endpoint: SwitchedReceiver, scans: list[str]
) -> None:
    tenant = fresh_tenant
    admin = tenant.admin_key
    meta = next(instance for instance in tenant.instances if instance.flavour == "meta")
    started = datetime.now(UTC) - timedelta(seconds=1)
    created = ok(
        stack.api(
            "POST",
            "/api/api-keys",
            key=admin,
            json={"name": "campaigns", "scopes": ["send"], "defaultNumber": meta.number, "webhookUrl": endpoint.url},
        ),
        201,
    )
    sender, key_id = created["key"], created["id"]
    secret = ok(stack.api("POST", f"/api/api-keys/{key_id}/webhook-secret", key=admin), 201)["secret"]
    stack.sim.send_error(meta.sim_id, "131049", times=REFUSED)

    # Five customers write in before the tenant has a helpdesk (a Cloud API number may then write
    # to them for 24 h), then 50 sends to them while the client's endpoint is down.
    for n in range(5):
        stack.sim.incoming_message(meta.sim_id, CUSTOMERS[n], f"pergunta {n}")
    stack.wait_for(lambda: len(incoming(stack, admin, "NO_DOWNSTREAM")) == 5, timeout=30, interval=0.3)
    for n in range(SENDS):
        message = {"to": CUSTOMERS[n % len(CUSTOMERS)], "text": f"oferta {n}"}
        ok(stack.api("POST", "/api/messages", key=sender, json=message), 202)

    def settled() -> list[dict[str, Any]] | None:
        rows = every_page(stack, f"/api/messages?apiKey={key_id}", admin, limit=100)
        return rows if len(rows) == SENDS and all(row["status"] in ("SENT", "FAILED") for row in rows) else None

    sent = stack.wait_for(settled, timeout=60, interval=0.5)
    assert Counter(row["status"] for row in sent) == {"SENT": SENDS - REFUSED, "FAILED": REFUSED}

    # Five more customer messages, once the tenant has a helpdesk.
    helpdesk = FakeDownstream()
    served = helpdesk.serve()
    try:
        map_downstream(stack, tenant, served.url, inbox=41)
        for n in range(5):
            stack.sim.incoming_message(meta.sim_id, CUSTOMERS[n], f"obrigado {n}")
        stack.wait_for(lambda: len(incoming(stack, admin, "FORWARDED")) == 5, timeout=30, interval=0.3)
    finally:
        served.stop()

    # Today's failures, with Meta's code and words.
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).isoformat().replace("+00:00", "Z")
    failures = every_page(stack, f"/api/messages?status=FAILED&direction=out&since={today}", admin, limit=4)
    assert len(failures) == REFUSED
    assert {(row["failureReason"], row["providerCode"]) for row in failures} == {("provider_rejected", "131049")}
    assert all("ecosystem" in (row["providerMessage"] or "") for row in failures)

    # One customer's conversation, both ways, in order.
    conversation = every_page(stack, f"/api/contacts/%2B{CUSTOMERS[0]}/messages", admin, limit=3)
    assert [row["createdAt"] for row in conversation] == sorted(row["createdAt"] for row in conversation)
    assert [row["text"] for row in conversation if row["direction"] == "in"] == ["pergunta 0", "obrigado 0"]
    assert len([row for row in conversation if row["direction"] == "out"]) == SENDS // len(CUSTOMERS)

    # The incoming messages that were not forwarded, and why.
    unforwarded = incoming(stack, admin, "NO_DOWNSTREAM")
    assert {(row["outcome"], row["failureReason"]) for row in unforwarded} == {("no_downstream", "no_downstream")}
    assert sorted(row["preview"] for row in unforwarded) == [f"pergunta {n}" for n in range(5)]

    # Every delivery ran out of attempts while the endpoint was down: the dead-letter view holds them.
    def exhausted() -> list[dict[str, Any]] | None:
        rows = every_page(stack, f"/api/webhook-deliveries?apiKey={key_id}", admin, limit=25)
        done = len(rows) == SENDS and all(row["status"] == "failed" for row in rows)
        return rows if done else None

    stack.wait_for(exhausted, timeout=90, interval=0.5)
    dead = every_page(stack, "/api/webhook-deliveries?status=failed", admin, limit=25)
    assert len(dead) == SENDS and stack.in_queue("ClientWebhookDLQ") == 0
    assert endpoint.refused == 2 * SENDS  # two attempts each (the stack's CLIENT_WEBHOOK_MAX_ATTEMPTS)

    # The endpoint is back: the admin replays the period.
    endpoint.up = True
    window = {"since": started.isoformat(), "until": datetime.now(UTC).isoformat()}
    replayed: list[str] = []
    answer = ok(stack.api("POST", "/api/webhook-deliveries/replay", key=admin, json=window), 202)
    replayed += answer["replayed"]
    while answer["cursor"]:
        more = {**window, "cursor": answer["cursor"]}
        answer = ok(stack.api("POST", "/api/webhook-deliveries/replay", key=admin, json=more), 202)
        replayed += answer["replayed"]
    assert sorted(replayed) == sorted(row["id"] for row in dead)

    stack.wait_for(lambda: len(endpoint.accepted) >= SENDS, timeout=60, interval=0.3)
    stack.wait_for(lambda: all_delivered(stack, admin, key_id), timeout=30, interval=0.5)
    received = Counter(headers["webhook-id"] for headers, _ in endpoint.accepted)
    assert received == Counter({row["id"]: 1 for row in dead})
    for headers, body in endpoint.accepted:
        Webhook(secret).verify(body, headers)  # signed now, with the key's secret
    events = Counter(json.loads(body)["event"] for _, body in endpoint.accepted)
    assert events == {"message.sent": SENDS - REFUSED, "message.failed": REFUSED}
    audit = ok(stack.api("GET", "/api/audit", key=admin))
    assert any(entry["action"] == "webhook_delivery.replayed_range" for entry in audit)

    # Another tenant sees none of it.
    other = stack.new_tenant()
    assert ok(stack.api("GET", "/api/messages", key=other.admin_key))["items"] == []
    assert ok(stack.api("GET", "/api/webhook-deliveries", key=other.admin_key))["items"] == []
    assert ok(stack.api("GET", f"/api/contacts/{CUSTOMERS[0]}/messages", key=other.admin_key))["items"] == []
    assert stack.api("GET", f"/api/webhook-deliveries/{dead[0]['id']}", key=other.admin_key).status_code == 404
    assert stack.api("POST", f"/api/webhook-deliveries/{dead[0]['id']}/replay", key=other.admin_key).status_code == 404
    assert scans == []


def incoming(stack: Stack, admin: str, status: str) -> list[dict[str, Any]]:
    return every_page(stack, f"/api/messages?direction=in&status={status}", admin, limit=50)


def all_delivered(stack: Stack, admin: str, key_id: str) -> bool:
    rows = every_page(stack, f"/api/webhook-deliveries?apiKey={key_id}", admin, limit=100)
    return bool(rows) and all(row["status"] == "delivered" for row in rows)

"""Each real provider kind through the whole local stack: the simulator posts the kind's own
webhook (wuzapi JSON signed with `x-hmac-signature`, Evolution with its JWT, Meta with
`X-Hub-Signature-256`), the ingest maps it, and the tenant's Chatwoot-style downstream gets the
message exactly once. A forged delivery is refused; Meta's subscription check is answered."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from devstack.seed import SeededTenant
from tests.e2e.conftest import Stack
from tests.e2e.test_routing_e2e import map_downstream, messages_with
from tools.support.downstream import FakeDownstream, ServedDownstream

CONTACT = "5511966665555"
KINDS = ("wuzapi", "evolution", "meta")


@pytest.fixture
def helpdesk() -> Iterator[tuple[FakeDownstream, ServedDownstream]]:
    fake = FakeDownstream()
    served = fake.serve()
    yield fake, served
    served.stop()


def instance_of(tenant: SeededTenant, flavour: str) -> Any:
    return next(instance for instance in tenant.instances if instance.flavour == flavour)


@pytest.mark.parametrize("flavour", KINDS)
def test_given_a_real_shaped_webhook_of_each_kind_then_the_downstream_gets_the_message_once(
    stack: Stack, fresh_tenant: SeededTenant, helpdesk: Any, flavour: str
) -> None:
    fake, served = helpdesk
    map_downstream(stack, fresh_tenant, served.url, inbox=31)
    instance = instance_of(fresh_tenant, flavour)
    text = f"olá pelo {flavour}"

    stack.sim.incoming_message(instance.sim_id, CONTACT, text)

    [message] = stack.wait_for(lambda: messages_with(fake, text), timeout=15)
    time.sleep(1.0)  # a second copy would have arrived by now
    assert len(messages_with(fake, text)) == 1
    assert message.origin == served.url


@pytest.mark.parametrize("flavour", KINDS)
def test_given_a_forged_or_unsigned_delivery_of_each_kind_then_401(
    stack: Stack, fresh_tenant: SeededTenant, flavour: str
) -> None:
    provider_id = fresh_tenant.providers[flavour]
    forged = {
        "wuzapi": {"content-type": "application/json", "x-hmac-signature": "0" * 64},
        "evolution": {"content-type": "application/json", "authorization": "Bearer e30.e30.AAAA"},
        "meta": {"content-type": "application/json", "x-hub-signature-256": "sha256=" + "0" * 64},
    }[flavour]
    for headers in (forged, {"content-type": "application/json"}):
        answer = httpx.post(f"{stack.local.api_url}/webhooks/{provider_id}", content=b'{"event":"x"}', headers=headers)
        assert (answer.status_code, answer.json()["error"]) == (401, "invalid_signature")


def test_given_metas_subscription_check_then_the_challenge_is_answered(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    instance = instance_of(fresh_tenant, "meta")

    answer = stack.sim.verify_webhook(instance.sim_id)

    assert answer == {"verified": True, "status": 200}
    wrong = httpx.get(
        f"{stack.local.api_url}/webhooks/{fresh_tenant.providers['meta']}",
        params={"hub.mode": "subscribe", "hub.verify_token": "not-the-token", "hub.challenge": "42"},
    )
    assert wrong.status_code == 403


def test_given_a_server_answering_exactly_like_wuzapi_then_the_send_ends_sent_with_its_id_after_one_post(
    stack: Stack, fresh_tenant: SeededTenant
) -> None:
    instance = instance_of(fresh_tenant, "wuzapi")
    created = stack.api(
        "POST",
        "/api/api-keys",
        key=fresh_tenant.admin_key,
        json={"name": "wuzapi sender", "environment": "TEST", "scopes": ["send"], "defaultNumber": instance.number},
    )
    assert created.status_code == 201, created.text
    accepted = stack.api("POST", "/api/messages", key=created.json()["key"], json={"to": CONTACT, "text": "via wuzapi"})
    assert accepted.status_code == 202, accepted.text
    message_id = accepted.json()["id"]

    def sent() -> dict[str, Any] | None:
        answer = stack.api("GET", f"/api/messages/{message_id}", key=fresh_tenant.admin_key).json()
        return answer if answer["status"] == "SENT" else None

    message = stack.wait_for(sent, timeout=15)
    [post] = [m for m in stack.sim.sent() if m["instance"] == instance.sim_id and m["body"] == "via wuzapi"]
    assert message["providerMessageId"] == post["id"] and post["resends"] == 0
    assert message["instance"] == instance.name

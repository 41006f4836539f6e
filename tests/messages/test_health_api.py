"""The ban watch through the API, the send worker and the client-webhooks function, on moto: a
463 pauses the instance for new contacts, `GET /api/instances/{name}/health` says so, and the
change reaches the instance's `eventsWebhookUrl`, signed with the instance's own secret."""

from __future__ import annotations

from typing import Any

from standardwebhooks import Webhook

from switchboard.core.errors import ProviderThrottled
from tools.support.api import Client
from tools.support.fakes import FakeProvider
from tools.support.hooks import RecordingReceiver
from tools.support.pool import NUMBERS, build_world

RECIPIENT = "5511988880001"


def test_a_fresh_instance_is_healthy_and_only_its_tenants_admin_reads_its_health(
    client: Client, make_tenant: Any
) -> None:
    world = build_world(client, make_tenant("acme"), NUMBERS[0])
    other = make_tenant("globex")
    world.create_send_key(default_number=NUMBERS[0])
    name = world.instances[NUMBERS[0]]

    answer = client.get(f"/api/instances/{name}/health", key=world.tenant.admin)

    assert answer.status == 200, answer.body
    view = answer.json()
    assert (view["instance"], view["state"], view["reasons"], view["pausedUntil"]) == (name, "healthy", [], None)
    assert view["velocity"] == {"sendsThisMinute": 0, "sendsThisHour": 0}
    assert client.get(f"/api/instances/{name}/health", key=other.admin).status == 404
    assert client.get(f"/api/instances/{name}/health", key=world.send_key).status == 403


def test_a_463_pauses_the_instance_for_new_contacts_and_its_events_webhook_is_told_signed(
    client: Client, make_tenant: Any, provider: FakeProvider, run_worker: Any, drain: Any
) -> None:
    receiver = RecordingReceiver()
    try:
        world = build_world(client, make_tenant("acme"), NUMBERS[0])
        world.create_send_key(default_number=NUMBERS[0])
        name = world.instances[NUMBERS[0]]
        configured = client.put(
            f"/api/instances/{name}",
            key=world.tenant.admin,
            json_body={
                "providerId": world.provider_id,
                "providerInstanceId": name,
                "numberId": world.numbers[NUMBERS[0]],
                "eventsWebhookUrl": receiver.url,
            },
        )
        assert configured.status == 200, configured.body
        rotated = client.post(f"/api/instances/{name}/events-webhook-secret", key=world.tenant.admin)
        assert rotated.status == 201, rotated.body
        secret = rotated.json()["secret"]
        provider.failures[name] = [ProviderThrottled("timelock", provider_code="463")]

        message_id = world.send(RECIPIENT)
        run_worker()
        drain("ClientWebhookQueue", "ClientWebhooksFunction")

        skipped = [e["data"] for e in world.message(message_id)["trace"] if e["stage"] == "pool.instance.skipped"]
        assert [(data["instance"], data["reason"], data["providerCode"]) for data in skipped] == [
            (name, "provider_throttled", "463")
        ]
        view = client.get(f"/api/instances/{name}/health", key=world.tenant.admin).json()
        assert view["state"] == "paused_for_new_contacts"
        assert [(reason["code"], reason["count"]) for reason in view["reasons"]] == [("timelock_463", 1)]
        assert view["failures"] == {"463": 1}
        [(headers, body)] = receiver.requests
        event = Webhook(secret).verify(body, headers)
        assert event["event"] == "number.health.changed"
        assert (event["data"]["instance"], event["data"]["previousState"], event["data"]["state"]) == (
            name,
            "healthy",
            "paused_for_new_contacts",
        )
        assert event["data"]["numberId"] == world.numbers[NUMBERS[0]]
    finally:
        receiver.stop()

"""The notifier pushes each bus event to its tenant's live connections only."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from boto3.dynamodb.conditions import Key

from switchboard import bootstrap
from tests.live.conftest import Live, ManagementApi
from tools.support.api import TenantKeys


def frames(management: ManagementApi, connection_id: str) -> list[dict[str, Any]]:
    return [json.loads(data) for data in management.posts.get(connection_id, [])]


def test_an_event_reaches_every_connection_of_its_tenant_and_none_of_another(
    sockets: Live, management: ManagementApi, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme, globex = make_tenant("acme"), make_tenant("globex")
    sockets.connect("acme-1", sockets.ticket(acme.admin))
    sockets.connect("acme-2", sockets.ticket(acme.admin))
    sockets.connect("globex-1", sockets.ticket(globex.admin))

    sockets.notify("pool.changed", {"tenant": "acme", "keyId": "key_1"})

    expected = {"type": "pool.changed", "detail": {"tenant": "acme", "keyId": "key_1"}, "time": "2026-12-01T04:00:00Z"}
    assert frames(management, "acme-1") == [expected]
    assert frames(management, "acme-2") == [expected]
    assert frames(management, "globex-1") == []


def test_an_event_without_a_tenant_reaches_nobody(
    sockets: Live, management: ManagementApi, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    sockets.connect("acme-1", sockets.ticket(acme.admin))

    sockets.notify("pool.changed", {"keyId": "key_1"})

    assert management.posts == {}


def test_an_agent_gets_the_events_of_no_attendant_and_its_own_but_not_another_agents(
    sockets: Live,
    management: ManagementApi,
    make_tenant: Callable[..., TenantKeys],
    agent_key: Callable[[TenantKeys, str], str],
) -> None:
    acme = make_tenant("acme")
    sockets.connect("ana", sockets.ticket(agent_key(acme, "ana")))
    sockets.connect("bia", sockets.ticket(agent_key(acme, "bia")))
    sockets.connect("admin", sockets.ticket(acme.admin))

    sockets.notify("call.state.changed", {"tenant": "acme", "instance": "i", "callId": "c1", "attendant": "ana"})
    sockets.notify("line.occupancy.changed", {"tenant": "acme", "instance": "i", "occupied": 1, "limit": 2})

    assert [frame["type"] for frame in frames(management, "ana")] == ["call.state.changed", "line.occupancy.changed"]
    assert [frame["type"] for frame in frames(management, "bia")] == ["line.occupancy.changed"]
    assert [frame["type"] for frame in frames(management, "admin")] == [
        "call.state.changed",
        "line.occupancy.changed",
    ]


def test_a_gone_connection_is_forgotten_and_a_failing_one_does_not_stop_the_others(
    sockets: Live, management: ManagementApi, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    for connection_id in ("gone", "broken", "fine"):
        sockets.connect(connection_id, sockets.ticket(acme.admin))
    management.gone.add("gone")
    management.broken.add("broken")

    counts = sockets.notify("pool.changed", {"tenant": "acme", "keyId": "key_1"})

    assert counts == {"gone": 1, "failed": 1, "sent": 1}
    assert len(frames(management, "fine")) == 1
    table = bootstrap.table()
    remaining = table.query(KeyConditionExpression=Key("pk").eq("LIVE#acme"))["Items"]
    assert sorted(item["sk"] for item in remaining) == ["CONNECTION#broken", "CONNECTION#fine"]
    assert table.get_item(Key={"pk": "LIVECONNECTION#gone", "sk": "#META"}).get("Item") is None


def test_a_message_status_change_reaches_the_console_as_a_hint_without_the_client_webhooks_body(
    sockets: Live,
    management: ManagementApi,
    make_tenant: Callable[..., TenantKeys],
    agent_key: Callable[[TenantKeys, str], str],
) -> None:
    acme = make_tenant("acme")
    sockets.connect("ana", sockets.ticket(agent_key(acme, "ana")))
    sockets.connect("admin", sockets.ticket(acme.admin))
    hint = {"tenant": "acme", "keyId": "key_1", "messageId": "msg_1", "status": "FAILED", "at": "2026-12-01T04:00:00Z"}
    body = {"clientWebhook": True, "destinationNumber": "5521999990000", "failureReason": "expired"}

    sockets.notify("message.status.changed", {**hint, **body, "sourceNumber": "5511988880000"})

    for connection in ("ana", "admin"):
        (sent,) = frames(management, connection)
        assert sent["detail"] == {**hint, "sourceNumber": "5511988880000"}

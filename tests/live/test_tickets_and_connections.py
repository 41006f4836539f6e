"""A ticket opens one live connection of its key's tenant, once, within 30 seconds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from boto3.dynamodb.conditions import Key

from switchboard import bootstrap
from switchboard.core.clock import utcnow
from switchboard.core.errors import Unauthenticated
from switchboard.live.service import ConnectionService, TicketService
from tests.live.conftest import LIVE_URL, Live, digest, ws_event
from tools.support.api import Client, TenantKeys


def items(pk: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = bootstrap.table().query(KeyConditionExpression=Key("pk").eq(pk))["Items"]
    return found


def test_an_admin_key_gets_a_ticket_stored_only_by_its_digest_with_a_30_second_ttl(
    sockets: Live, client: Client, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    before = datetime.now(UTC)

    answer = client.post("/api/live/tickets", key=acme.admin)

    assert answer.status == 201
    body = answer.json()
    assert body["url"] == LIVE_URL
    assert len(body["ticket"]) >= 32
    assert body["ticket"].replace("-", "").replace("_", "").isalnum()
    expires = datetime.fromisoformat(body["expiresAt"])
    assert timedelta(seconds=29) <= expires - before <= timedelta(seconds=31)
    [stored] = items(f"TICKET#{digest(body['ticket'])}")
    assert stored["tenant"] == "acme"
    assert stored["scope"] == "admin"
    assert int(stored["expiresAt"]) == int(expires.timestamp())
    everything = bootstrap.table().scan()["Items"]
    assert body["ticket"] not in repr(everything)


def test_send_and_platform_keys_get_no_ticket(
    sockets: Live, client: Client, make_tenant: Callable[..., TenantKeys], platform_key: str
) -> None:
    acme = make_tenant("acme")
    send = client.post("/api/api-keys", key=acme.admin, json_body={"name": "s", "scopes": ["send"]}).json()["key"]

    assert client.post("/api/live/tickets", key=send).status == 403
    assert client.post("/api/live/tickets", key=platform_key).status == 403
    assert client.post("/api/live/tickets").status == 401


def test_a_ticket_opens_one_connection_bound_to_its_tenant_and_a_second_use_is_refused(
    sockets: Live, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    ticket = sockets.ticket(acme.admin)

    assert sockets.connect("conn-1", ticket) == 200
    assert sockets.connect("conn-2", ticket) == 401

    [connection] = items("LIVE#acme")
    assert connection["sk"] == "CONNECTION#conn-1"
    assert connection["scope"] == "admin"
    assert "attendant" not in connection
    lifetime = int(connection["expiresAt"]) - int(datetime.now(UTC).timestamp())
    assert 2 * 3600 - 60 <= lifetime <= 2 * 3600
    assert items(f"TICKET#{digest(ticket)}") == []


def test_an_agent_connection_carries_its_attendant(
    sockets: Live, make_tenant: Callable[..., TenantKeys], agent_key: Callable[[TenantKeys, str], str]
) -> None:
    acme = make_tenant("acme")

    assert sockets.connect("conn-ana", sockets.ticket(agent_key(acme, "ana"))) == 200

    [connection] = items("LIVE#acme")
    assert (connection["scope"], connection["attendant"]) == ("agent", "ana")


def test_a_missing_unknown_or_expired_ticket_is_refused(sockets: Live, make_tenant: Callable[..., TenantKeys]) -> None:
    acme = make_tenant("acme")
    repository = bootstrap.live_repository()
    principal = bootstrap.catalog_service().authenticate(acme.admin)
    assert principal is not None
    issued = TicketService(repository, LIVE_URL).issue(principal)
    later = ConnectionService(
        repository, repository, bootstrap.live_grants(), clock=lambda: utcnow() + timedelta(seconds=31)
    )

    assert sockets.connect("conn-1", None) == 401
    assert sockets.connect("conn-2", "not-a-ticket") == 401
    with pytest.raises(Unauthenticated):
        later.connect("conn-3", issued.ticket)
    assert items("LIVE#acme") == []


def test_disconnect_forgets_the_connection_and_a_ping_is_accepted(
    sockets: Live, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    sockets.connect("conn-1", sockets.ticket(acme.admin))
    ping = sockets.api.functions.invoke("LiveConnectionsFunction", ws_event("$default", "conn-1"))

    assert ping["statusCode"] == 200
    assert sockets.disconnect("conn-1") == 200
    assert sockets.disconnect("conn-1") == 200  # a repeated $disconnect changes nothing
    assert items("LIVE#acme") == []
    assert items("LIVECONNECTION#conn-1") == []

"""A key revoked or changed so that it may no longer hold a live socket loses its connections at
once: the catalog's hook closes them through @connections, a ticket issued before opens nothing,
and the notifier checks each connection's key before it posts (the safety net)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from boto3.dynamodb.conditions import Key

from switchboard import bootstrap
from switchboard.core.clock import utcnow
from switchboard.core.identity import key_principal
from switchboard.live.domain import CONNECTION_LIFETIME, Connection
from tests.live.conftest import Live, ManagementApi
from tools.support.api import Client, TenantKeys

EVENT = {"tenant": "acme", "keyId": "key_1"}


def items(pk: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = bootstrap.table().query(KeyConditionExpression=Key("pk").eq(pk))["Items"]
    return found


def frames(management: ManagementApi, connection_id: str) -> list[str]:
    return [json.loads(data)["type"] for data in management.posts.get(connection_id, [])]


def new_key(client: Client, tenant: TenantKeys, *scopes: str, attendant: str | None = None) -> tuple[str, str]:
    """A new key of the tenant: its plaintext and its id."""
    body: dict[str, Any] = {"name": "k", "scopes": list(scopes)}
    if attendant:
        body["attendantId"] = attendant
    answer = client.post("/api/api-keys", key=tenant.admin, json_body=body)
    assert answer.status == 201, answer.body
    return str(answer.json()["key"]), str(answer.json()["id"])


def test_deleting_a_key_closes_its_connections_at_once_and_no_one_elses(
    sockets: Live, management: ManagementApi, client: Client, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    leaving, leaving_id = new_key(client, acme, "admin")
    sockets.connect("leaving-tab-1", sockets.ticket(leaving))
    sockets.connect("leaving-tab-2", sockets.ticket(leaving))
    sockets.connect("staying", sockets.ticket(acme.admin))

    assert client.delete(f"/api/api-keys/{leaving_id}", key=acme.admin).status == 204

    assert sorted(management.closed) == ["leaving-tab-1", "leaving-tab-2"]
    assert [item["sk"] for item in items("LIVE#acme")] == ["CONNECTION#staying"]
    assert items(f"LIVEPRINCIPAL#acme#{key_principal(leaving_id)}") == []
    assert items("LIVECONNECTION#leaving-tab-1") == []
    sockets.notify("pool.changed", EVENT)
    assert frames(management, "staying") == ["pool.changed"]
    assert frames(management, "leaving-tab-1") == []


def test_a_key_demoted_to_send_or_from_admin_to_agent_is_closed_and_a_rename_is_not(
    sockets: Live,
    management: ManagementApi,
    client: Client,
    make_tenant: Callable[..., TenantKeys],
    override: Callable[..., object],
) -> None:
    """An admin demoted to agent would still see every attendant's calls on the socket it opened."""
    acme = make_tenant("acme")
    to_send, to_send_id = new_key(client, acme, "admin")
    to_agent, to_agent_id = new_key(client, acme, "admin")
    renamed, renamed_id = new_key(client, acme, "admin")
    moved, moved_id = new_key(client, acme, "agent", attendant="ana")
    for name, key in (("to-send", to_send), ("to-agent", to_agent), ("renamed", renamed), ("moved", moved)):
        assert sockets.connect(name, sockets.ticket(key)) == 200

    changes = {
        to_send_id: {"scopes": ["send"]},
        to_agent_id: {"scopes": ["agent"], "attendantId": "bia"},
        renamed_id: {"name": "still an admin"},
        moved_id: {"attendantId": "carla"},
    }
    for key_id, change in changes.items():
        answer = client.patch(f"/api/api-keys/{key_id}", key=acme.admin, json_body=change)
        assert answer.status == 200, answer.body

    assert sorted(management.closed) == ["moved", "to-agent", "to-send"]
    assert [item["sk"] for item in items("LIVE#acme")] == ["CONNECTION#renamed"]
    override()  # a new container: a warm authorizer keeps a found key for KEY_CACHE_SECONDS
    assert client.post("/api/live/tickets", key=to_send).status == 403  # the console stops there
    assert sockets.connect("to-agent-again", sockets.ticket(to_agent)) == 200  # with its new, narrower grant


def test_a_ticket_issued_before_its_key_was_deleted_opens_nothing(
    sockets: Live, management: ManagementApi, client: Client, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    leaving, leaving_id = new_key(client, acme, "admin")
    ticket = sockets.ticket(leaving)
    demoted, demoted_id = new_key(client, acme, "admin")
    demoted_ticket = sockets.ticket(demoted)
    assert client.delete(f"/api/api-keys/{leaving_id}", key=acme.admin).status == 204
    assert client.patch(f"/api/api-keys/{demoted_id}", key=acme.admin, json_body={"scopes": ["send"]}).status == 200

    assert sockets.connect("late", ticket) == 401
    assert sockets.connect("late-demoted", demoted_ticket) == 401

    assert items("LIVE#acme") == []
    assert items("LIVECONNECTION#late") == []
    assert items(f"LIVEPRINCIPAL#acme#{key_principal(leaving_id)}") == []


def test_the_notifier_checks_each_connections_key_before_it_posts_and_closes_a_revoked_one(
    sockets: Live, management: ManagementApi, client: Client, make_tenant: Callable[..., TenantKeys]
) -> None:
    """The hook missed it (here the key is deleted behind the catalog service's back): the next
    event reaches every other connection, not this one, and closes it."""
    acme = make_tenant("acme")
    revoked, revoked_id = new_key(client, acme, "admin")
    sockets.connect("revoked", sockets.ticket(revoked))
    sockets.connect("fine", sockets.ticket(acme.admin))
    bootstrap.catalog_repository().delete_api_key("acme", revoked_id)

    counts = sockets.notify("pool.changed", EVENT)

    assert counts == {"revoked": 1, "sent": 1}
    assert frames(management, "revoked") == []
    assert frames(management, "fine") == ["pool.changed"]
    assert management.closed == ["revoked"]
    assert [item["sk"] for item in items("LIVE#acme")] == ["CONNECTION#fine"]


def test_the_notifier_reads_the_grants_once_per_event_whatever_the_number_of_tabs(
    sockets: Live, management: ManagementApi, make_tenant: Callable[..., TenantKeys], monkeypatch: Any
) -> None:
    acme = make_tenant("acme")
    for tab in range(5):
        sockets.connect(f"tab-{tab}", sockets.ticket(acme.admin))
    reads: list[list[str]] = []
    grants = bootstrap.live_grants()
    real = grants.live_grants

    def counted(tenant: str, principals: Any) -> Any:
        reads.append(sorted(principals))
        return real(tenant, principals)

    monkeypatch.setattr(grants, "live_grants", counted)

    assert sockets.notify("pool.changed", EVENT) == {"sent": 5}
    assert len(reads) == 1 and len(reads[0]) == 1  # one read, of the one principal behind five tabs


def test_a_close_that_fails_keeps_the_connection_so_the_next_event_closes_it(
    sockets: Live, management: ManagementApi, client: Client, make_tenant: Callable[..., TenantKeys]
) -> None:
    acme = make_tenant("acme")
    leaving, leaving_id = new_key(client, acme, "admin")
    sockets.connect("stubborn", sockets.ticket(leaving))
    management.broken.add("stubborn")

    assert client.delete(f"/api/api-keys/{leaving_id}", key=acme.admin).status == 204  # the revocation stands

    assert management.closed == []
    assert sockets.notify("pool.changed", EVENT) == {"revoked": 1}
    assert frames(management, "stubborn") == []
    management.broken.clear()
    assert sockets.notify("pool.changed", EVENT) == {"revoked": 1}
    assert management.closed == ["stubborn"]
    assert items("LIVE#acme") == []
    assert sockets.notify("pool.changed", EVENT) == {}


def test_the_hook_takes_any_principal_and_one_nothing_vouches_for_holds_no_socket(
    sockets: Live, management: ManagementApi, make_tenant: Callable[..., TenantKeys]
) -> None:
    """The same hook serves a person disabled in the user pool: its principal id, not a key id."""
    make_tenant("acme")
    now = utcnow()
    person = Connection(
        connection_id="person",
        tenant="acme",
        principal="user:6f1c2b9e",
        scope="admin",
        connected_at=now,
        expires_at=now + CONNECTION_LIFETIME,
    )
    bootstrap.live_repository().put_connection(person)

    bootstrap.live_access().grant_changed("acme", "user:6f1c2b9e")

    assert management.closed == ["person"]
    assert items("LIVE#acme") == []


def test_a_connection_stored_before_principals_were_recorded_is_still_checked_and_forgotten(
    sockets: Live, management: ManagementApi, client: Client, make_tenant: Callable[..., TenantKeys]
) -> None:
    """Connections live two hours: those a previous version stored carry only their key id."""
    acme = make_tenant("acme")
    _, old_id = new_key(client, acme, "admin")
    expires = int((utcnow() + timedelta(hours=1)).timestamp())
    table = bootstrap.table()
    table.put_item(
        Item={
            "pk": "LIVE#acme",
            "sk": "CONNECTION#old",
            "connection_id": "old",
            "tenant": "acme",
            "key_id": old_id,
            "scope": "admin",
            "connected_at": utcnow().isoformat(),
            "expires_at": (utcnow() + timedelta(hours=1)).isoformat(),
            "expiresAt": expires,
        }
    )
    table.put_item(Item={"pk": "LIVECONNECTION#old", "sk": "#META", "tenant": "acme", "expiresAt": expires})

    assert sockets.notify("pool.changed", EVENT) == {"sent": 1}
    bootstrap.catalog_repository().delete_api_key("acme", old_id)
    assert sockets.notify("pool.changed", EVENT) == {"revoked": 1}
    assert management.closed == ["old"]
    assert items("LIVE#acme") == [] and items("LIVECONNECTION#old") == []

"""A number's own pacing: set, read and cleared through PATCH /api/numbers/{id}, refused in words
when out of range, audited, and carried to the send worker with the number's routes."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard import bootstrap
from tools.support.api import Client, TenantKeys


def number_and_key(client: Client, tenant: TenantKeys) -> tuple[dict[str, Any], dict[str, Any]]:
    """A number and a send key whose default number it is."""
    number = client.post("/api/numbers", key=tenant.admin, json_body={"number": "5511999990001", "displayName": "Main"})
    assert number.status == 201, number.body
    key = client.post(
        "/api/api-keys",
        key=tenant.admin,
        json_body={"name": "sender", "scopes": ["send"], "defaultNumber": "5511999990001"},
    )
    assert key.status == 201, key.body
    return number.json(), key.json()


def rate_and_burst(audited: dict[str, Any]) -> tuple[float, int] | None:
    """An audited number's override, as its rate and burst (the audit keeps a rate as a string)."""
    pacing = audited.get("pacing")
    return None if pacing is None else (float(pacing["messages_per_minute"]), int(pacing["burst"]))


@pytest.fixture
def deployment_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PACING_MESSAGES_PER_MINUTE", "20")
    monkeypatch.setenv("PACING_BURST", "4")
    monkeypatch.setenv("POOL_CONFIG_CACHE_SECONDS", "0")
    bootstrap.reset()


@pytest.mark.usefixtures("deployment_pacing")
def test_an_admin_sets_reads_and_clears_a_numbers_pacing_and_the_worker_gets_it_with_the_number(
    client: Client, make_tenant: Any
) -> None:
    tenant = make_tenant("acme")
    number, key = number_and_key(client, tenant)
    path = f"/api/numbers/{number['id']}"
    assert number["pacing"] is None
    assert number["pacingDefaults"] == {
        "messagesPerMinute": 20,
        "burst": 4,
        "newContactsFirstDay": 20,
        "newContactsStep": 20,
        "newContactsMax": 200,
    }

    patched = client.patch(path, key=tenant.admin, json_body={"pacing": {"messagesPerMinute": 2.5, "burst": 1}})

    assert patched.status == 200, patched.body
    expected = {
        "messagesPerMinute": 2.5,
        "burst": 1,
        "newContactsFirstDay": None,
        "newContactsStep": None,
        "newContactsMax": None,
    }
    assert patched.json()["pacing"] == expected
    assert client.get(path, key=tenant.admin).json()["pacing"] == expected
    [listed] = client.get("/api/numbers", key=tenant.admin).json()
    assert (listed["pacing"], listed["pacingDefaults"]["messagesPerMinute"]) == (expected, 20)
    routes = bootstrap.sending_config_source().get("acme", key["id"]).default
    assert routes is not None and routes.pacing is not None
    assert (routes.pacing.messages_per_minute, routes.pacing.burst, routes.pacing.new_contacts_max) == (2.5, 1, None)

    renamed = client.patch(path, key=tenant.admin, json_body={"displayName": "Sales"})
    assert renamed.json()["pacing"] == expected, "a PATCH without pacing keeps it"

    cleared = client.patch(path, key=tenant.admin, json_body={"pacing": None})

    assert cleared.status == 200, cleared.body
    assert client.get(path, key=tenant.admin).json()["pacing"] is None
    cleared_routes = bootstrap.sending_config_source().get("acme", key["id"]).default
    assert cleared_routes is not None and cleared_routes.pacing is None
    audit = client.get("/api/audit", key=tenant.admin).json()
    changes = [
        (rate_and_burst(entry["before"]), rate_and_burst(entry["after"]))
        for entry in audit
        if entry["action"] == "number.updated" and entry["target"] == number["id"]
    ]
    set_override = (2.5, 1)
    assert sorted(changes, key=repr) == sorted(
        [(None, set_override), (set_override, set_override), (set_override, None)], key=repr
    )


def test_an_empty_override_is_no_override(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    number, _ = number_and_key(client, tenant)

    answer = client.patch(f"/api/numbers/{number['id']}", key=tenant.admin, json_body={"pacing": {"burst": None}})

    assert answer.status == 200, answer.body
    assert answer.json()["pacing"] is None


@pytest.mark.parametrize(
    ("pacing", "field"),
    [
        ({"burst": 0}, "burst"),
        ({"messagesPerMinute": -1}, "messagesPerMinute"),
        ({"messagesPerMinute": "10"}, "messagesPerMinute"),
        ({"newContactsMax": -5}, "newContactsMax"),
        ({"newContactsStep": 1.5}, "newContactsStep"),
        ({"perMinute": 10}, "perMinute"),
    ],
)
def test_a_bad_pacing_value_is_a_422_naming_the_field_and_changes_nothing(
    client: Client, make_tenant: Any, pacing: dict[str, Any], field: str
) -> None:
    tenant = make_tenant("acme")
    number, _ = number_and_key(client, tenant)
    path = f"/api/numbers/{number['id']}"
    assert client.patch(path, key=tenant.admin, json_body={"pacing": {"burst": 3}}).status == 200

    answer = client.patch(path, key=tenant.admin, json_body={"pacing": pacing})

    assert answer.status == 422, answer.body
    assert answer.json()["error"] == "validation_error"
    assert field in answer.json()["message"]
    assert client.get(path, key=tenant.admin).json()["pacing"]["burst"] == 3


def test_an_infinite_rate_is_refused_not_stored(client: Client, make_tenant: Any) -> None:
    tenant = make_tenant("acme")
    number, _ = number_and_key(client, tenant)

    answer = client.patch(
        f"/api/numbers/{number['id']}", key=tenant.admin, body=b'{"pacing": {"messagesPerMinute": Infinity}}'
    )

    assert answer.status in (400, 422), answer.body
    assert client.get(f"/api/numbers/{number['id']}", key=tenant.admin).json()["pacing"] is None

"""The bodies README.md and docs/api.md show are accepted as shown: a provider without a name,
numbers written with their `+` (stored as E.164 digits, found again either way)."""

from __future__ import annotations

from typing import Any

import pytest

from tools.support.api import Client


def test_a_provider_registered_without_a_name_is_named_by_its_host(client: Client, make_tenant: Any) -> None:
    admin = make_tenant("acme").admin
    body = {"kind": "wuzapi", "baseUrl": "http://localhost:8080/", "webhookSecret": "w" * 32}

    created = client.post("/api/providers", key=admin, json_body=body)

    assert created.status == 201, created.body
    assert created.json()["name"] == "localhost"


@pytest.mark.parametrize("written", ["+5511999990001", "5511999990001"])
def test_a_number_with_or_without_its_plus_is_stored_as_its_digits_and_is_a_default_number_either_way(
    client: Client, make_tenant: Any, written: str
) -> None:
    admin = make_tenant("acme").admin

    number = client.post("/api/numbers", key=admin, json_body={"number": written, "displayName": "Support"})
    key = client.post(
        "/api/api-keys", key=admin, json_body={"name": "crm", "scopes": ["send"], "defaultNumber": "+5511999990001"}
    )
    duplicate = client.post("/api/numbers", key=admin, json_body={"number": "5511999990001", "displayName": "Again"})

    assert (number.status, number.json()["number"]) == (201, "5511999990001")
    assert (key.status, key.json()["defaultNumber"]) == (201, "5511999990001")
    assert duplicate.status == 409


@pytest.mark.parametrize("written", ["++5511999990001", "+05511999990001", "+55 11 99999-0001", "+"])
def test_anything_else_is_refused_with_422(client: Client, make_tenant: Any, written: str) -> None:
    admin = make_tenant("acme").admin

    answer = client.post("/api/numbers", key=admin, json_body={"number": written, "displayName": "Support"})

    assert (answer.status, answer.json()["error"]) == (422, "validation_error")

"""A tenant's pool built through the API, for the pool and messages tests on moto.

`PoolWorld` builds a tenant's catalog through the API (numbers, a wuzapi provider, one
instance per number) and a send key, and lets tests flip an instance's connection state in the
table as the `connection` webhook effect would.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from switchboard import bootstrap
from switchboard.catalog.domain import InstanceState, instance_key
from tools.support.api import Client, TenantKeys

NUMBERS = ("5511999990001", "5511999990002", "5511999990003")


_SEQ = itertools.count(1)


@dataclass
class PoolWorld:
    client: Client
    tenant: TenantKeys
    provider_id: str
    numbers: dict[str, str] = field(default_factory=dict)  # digits -> number id
    instances: dict[str, str] = field(default_factory=dict)  # digits -> instance name
    send_key: str = ""
    send_key_id: str = ""

    def add_number(self, digits: str, *, connected: bool = True) -> str:
        answer = self.client.post(
            "/api/numbers", key=self.tenant.admin, json_body={"number": digits, "displayName": f"n{digits[-1]}"}
        )
        assert answer.status == 201, answer.body
        number_id: str = answer.json()["id"]
        name = f"{self.tenant.owner_tag}-{digits[-4:]}"
        answer = self.client.put(
            f"/api/instances/{name}",
            key=self.tenant.admin,
            json_body={
                "providerId": self.provider_id,
                "providerInstanceId": name,
                "numberId": number_id,
                "token": f"token-of-{name}-0123456789",
            },
        )
        assert answer.status == 201, answer.body
        self.numbers[digits], self.instances[digits] = number_id, name
        self.set_connected(digits, connected)
        return number_id

    def set_connected(self, digits: str, connected: bool) -> None:
        """What a provider's `connection` event does: the state, ordered by its seq."""
        state: InstanceState = "CONNECTED" if connected else "DISCONNECTED"
        key = instance_key(self.tenant.owner_tag, self.instances[digits])
        bootstrap.connection_state_repository().apply_event(key, state, next(_SEQ), datetime.now(UTC))

    def create_send_key(self, *, default_number: str | None = None, webhook_url: str | None = None) -> None:
        body: dict[str, Any] = {"name": "sender", "scopes": ["send"]}
        if default_number:
            body["defaultNumber"] = default_number
        if webhook_url:
            body["webhookUrl"] = webhook_url
        answer = self.client.post("/api/api-keys", key=self.tenant.admin, json_body=body)
        assert answer.status == 201, answer.body
        self.send_key, self.send_key_id = answer.json()["key"], answer.json()["id"]

    def use_pool(self, *digits: str) -> None:
        mode = self.client.put(
            f"/api/api-keys/{self.send_key_id}/selection-mode",
            key=self.tenant.admin,
            json_body={"numberSelectionMode": "pool"},
        )
        assert mode.status == 200, mode.body
        for each in digits:
            added = self.client.post(
                f"/api/api-keys/{self.send_key_id}/pool",
                key=self.tenant.admin,
                json_body={"whatsappNumberId": self.numbers[each]},
            )
            assert added.status == 201, added.body

    def send(self, to: str, text: str = "hello", headers: dict[str, str] | None = None) -> str:
        answer = self.client.post(
            "/api/messages", key=self.send_key, json_body={"to": to, "text": text}, headers=headers
        )
        assert answer.status == 202, answer.body
        return str(answer.json()["id"])

    def message(self, message_id: str) -> dict[str, Any]:
        answer = self.client.get(f"/api/messages/{message_id}", key=self.send_key)
        assert answer.status == 200, answer.body
        return dict(answer.json())


def build_world(client: Client, tenant: TenantKeys, *numbers: str) -> PoolWorld:
    provider = client.post(
        "/api/providers",
        key=tenant.admin,
        json_body={
            "name": "zap",
            "kind": "wuzapi",
            "baseUrl": "http://127.0.0.1:3100",
            "webhookSecret": "whsec-very-secret-value-1",
        },
    )
    assert provider.status == 201, provider.body
    world = PoolWorld(client=client, tenant=tenant, provider_id=provider.json()["id"])
    for digits in numbers:
        world.add_number(digits)
    return world

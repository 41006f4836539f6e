"""Instances of every provider kind registered through the in-process API, each on the simulator
server of its flavour: the setup of the connection state's tests."""

from __future__ import annotations

import secrets
from typing import Any

from devstack.simulator import Simulator, SimulatorControl
from tools.support.api import Client, TenantKeys

PREFIX = {"wuzapi": "/wuzapi", "evolution": "/evolution", "meta": "/meta", "calls": ""}
KIND = {"wuzapi": "wuzapi", "evolution": "evolution", "meta": "meta", "calls": "wuzapi"}


class KindsSetup:
    def __init__(self, client: Client, tenant: TenantKeys, simulator: Simulator, control: SimulatorControl) -> None:
        self.client, self.tenant, self.simulator, self.control = client, tenant, simulator, control
        self.providers: dict[str, str] = {}

    def provider(self, flavour: str) -> str:
        if flavour not in self.providers:
            body = {
                "name": flavour,
                "kind": KIND[flavour],
                "baseUrl": self.simulator.base_url + PREFIX[flavour],
                "webhookSecret": secrets.token_urlsafe(32),
            }
            answer = self.client.post("/api/providers", key=self.tenant.admin, json_body=body)
            assert answer.status == 201, answer.body
            self.providers[flavour] = answer.json()["id"]
        return self.providers[flavour]

    def number(self, digits: str, meta_phone_id: str | None = None) -> str:
        body: dict[str, Any] = {"number": digits, "displayName": digits}
        if meta_phone_id:
            body["metaPhoneId"] = meta_phone_id
        answer = self.client.post("/api/numbers", key=self.tenant.admin, json_body=body)
        assert answer.status == 201, answer.body
        return str(answer.json()["id"])

    def paired(self, flavour: str, name: str, digits: str, *, connected: bool = True, **fields: Any) -> str:
        """A session on the simulator (no webhook configured: nothing will ever be posted)."""
        token = secrets.token_urlsafe(24)
        self.control.create_instance(
            id=name, token=token, flavour=flavour, number=digits, connected=connected, **fields
        )
        return token

    def put(self, name: str, flavour: str, number_id: str, token: str | None, **extra: Any) -> Any:
        body: dict[str, Any] = {"providerId": self.provider(flavour), "providerInstanceId": name, "numberId": number_id}
        if token is not None:
            body["token"] = token
        answer = self.client.put(f"/api/instances/{name}", key=self.tenant.admin, json_body=body | extra)
        assert answer.status in (200, 201), answer.body
        return answer.json()

    def listed(self, name: str) -> str:
        answer = self.client.get("/api/instances", key=self.tenant.admin)
        return str(next(item["state"] for item in answer.json() if item["name"] == name))

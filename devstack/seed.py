"""Seeds a tenant through the public HTTP API (never by writing tables), with its instances on
the provider simulator: what an operator would do by hand, so the seed also exercises the API.

`seed_tenant` is used for the demo tenant of `make local` and for isolated tenants in e2e tests.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from devstack.simulator import SimulatorControl


class SeedError(RuntimeError):
    """A seeding request the API refused: the message names the step and the answer."""


class TenantExists(SeedError):
    """The tenant is already there (an external endpoint seeded by an earlier run)."""


@dataclass(frozen=True)
class SeededInstance:
    name: str  # the instance's name in switchboard (also its id on the simulator)
    sim_id: str
    token: str
    kind: str
    number_id: str
    number: str


@dataclass
class SeededTenant:
    owner_tag: str
    admin_key: str
    send_key: str
    send_key_id: str
    agent_key: str
    agent_key_id: str
    attendant_id: str
    provider_id: str
    webhook_secret: str
    numbers: list[dict[str, Any]]
    instances: list[SeededInstance]
    pool_mode: bool = False
    connected: bool = False
    notes: list[str] = field(default_factory=list)

    def instance(self, name: str) -> SeededInstance:
        return next(instance for instance in self.instances if instance.name == name)


class ApiClient:
    """A thin httpx client for the local API that raises `SeedError` on an unexpected status."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self._client = httpx.Client(base_url=base_url, timeout=timeout, trust_env=False)

    def close(self) -> None:
        self._client.close()

    def call(
        self, method: str, path: str, key: str, body: Any = None, *, expect: tuple[int, ...] = (200, 201, 204)
    ) -> httpx.Response:
        response = self._client.request(method, path, json=body, headers={"authorization": f"Bearer {key}"})
        if response.status_code not in expect:
            raise SeedError(f"{method} {path} answered {response.status_code}: {response.text[:500]}")
        return response


def _route_missing(response: httpx.Response) -> bool:
    """The gateway's own 404 (no such route), as opposed to the API's `{"error": ...}` 404."""
    return response.status_code == 404 and "error" not in response.json()


def seed_tenant(
    api_url: str,
    sim_url: str,
    platform_key: str,
    *,
    owner_tag: str,
    digits_prefix: str,
    sim_admin_token: str | None = None,
    connect_timeout: float = 10.0,
) -> SeededTenant:
    """A tenant with a wuzapi provider on the simulator, three numbers each with one instance
    (the third of kind `calls`), connected; a `send` key whose pool holds the three numbers,
    an `agent` key and the tenant's admin key.

    `digits_prefix` makes the phone numbers (prefix + 1..3) unique on the simulator.
    """
    api = ApiClient(api_url)
    sim = SimulatorControl(sim_url)
    try:
        created = api.call(
            "POST", "/api/tenants", platform_key, {"ownerTag": owner_tag, "name": owner_tag}, expect=(201, 409)
        )
        if created.status_code == 409:
            raise TenantExists(f"tenant {owner_tag} already exists: its keys were shown when it was seeded")
        tenant = created.json()
        admin = tenant["adminKey"]["key"]
        webhook_secret = secrets.token_urlsafe(24)
        provider_body: dict[str, Any] = {
            "name": "simulator",
            "kind": "wuzapi",
            "baseUrl": sim_url,
            "webhookSecret": webhook_secret,
        }
        if sim_admin_token:
            provider_body["adminToken"] = sim_admin_token
        provider = api.call("POST", "/api/providers", admin, provider_body).json()
        numbers, instances = [], []
        for index, kind in enumerate(("messages", "messages", "calls"), start=1):
            digits = f"{digits_prefix}{index}"
            number = api.call(
                "POST", "/api/numbers", admin, {"number": digits, "displayName": f"{owner_tag} {index}"}
            ).json()
            numbers.append(number)
            name = f"{owner_tag}-{index}"
            token = secrets.token_urlsafe(24)
            api.call(
                "PUT",
                f"/api/instances/{name}",
                admin,
                {
                    "providerId": provider["id"],
                    "providerInstanceId": name,
                    "numberId": number["id"],
                    "token": token,
                    "kind": kind,
                },
            )
            sim.create_instance(
                id=name,
                token=token,
                kind=kind,
                number=digits,
                connected=False,
                webhookUrl=f"{api_url}/webhooks/{provider['id']}",
                webhookSecret=webhook_secret,
            )
            instances.append(SeededInstance(name, name, token, kind, number["id"], digits))
        for instance in instances:
            sim.set_connection(instance.sim_id, True)
        attendant = f"{owner_tag}-attendant-1"
        send = api.call(
            "POST",
            "/api/api-keys",
            admin,
            {"name": f"{owner_tag} send", "scopes": ["send"], "defaultNumber": numbers[0]["number"]},
        ).json()
        agent = api.call(
            "POST",
            "/api/api-keys",
            admin,
            {"name": f"{owner_tag} agent", "scopes": ["agent"], "attendantId": attendant},
        ).json()
        seeded = SeededTenant(
            owner_tag=owner_tag,
            admin_key=admin,
            send_key=send["key"],
            send_key_id=send["id"],
            agent_key=agent["key"],
            agent_key_id=agent["id"],
            attendant_id=attendant,
            provider_id=provider["id"],
            webhook_secret=webhook_secret,
            numbers=numbers,
            instances=instances,
        )
        seeded.pool_mode = _pool(api, seeded)
        seeded.connected = _await_connected(api, seeded, connect_timeout)
        return seeded
    finally:
        api.close()
        sim.close()


def _pool(api: ApiClient, seeded: SeededTenant) -> bool:
    """Put the send key in pool mode with the three numbers; False if the pool API is absent."""
    key_path = f"/api/api-keys/{seeded.send_key_id}"
    mode = api.call(
        "PUT", f"{key_path}/selection-mode", seeded.admin_key, {"numberSelectionMode": "pool"}, expect=(200, 404)
    )
    if _route_missing(mode):
        seeded.notes.append("the pool API is not deployed: the send key uses its default number")
        return False
    if mode.status_code != 200:
        raise SeedError(f"PUT {key_path}/selection-mode answered 404: {mode.text[:500]}")
    for number in seeded.numbers:
        api.call("POST", f"{key_path}/pool", seeded.admin_key, {"whatsappNumberId": number["id"]})
    return True


def _await_connected(api: ApiClient, seeded: SeededTenant, timeout: float) -> bool:
    """Wait until the simulator's `connection` webhooks have made every number connected."""
    probe = api.call("POST", f"/webhooks/{seeded.provider_id}", seeded.admin_key, {}, expect=(400, 401, 404, 413, 422))
    if _route_missing(probe):
        seeded.notes.append("the provider webhook API is not deployed: the numbers stay disconnected")
        return False
    deadline = time.monotonic() + timeout
    while True:
        listed = api.call("GET", "/api/numbers", seeded.admin_key).json()
        if all(number["connected"] for number in listed):
            return True
        if time.monotonic() >= deadline:
            seeded.notes.append("the numbers are not connected yet: provider webhooks are not applied")
            return False
        time.sleep(0.1)

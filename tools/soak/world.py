"""The soak's tenant, arranged through the public API as an operator would: the seeded demo tenant
(three numbers on the calls-capable server, one each on a plain wuzapi, Evolution and Meta) plus
send keys in pool and default mode, attendants, a call limit of 2, each instance's reply webhook,
its Chatwoot-shaped downstream and a client webhook receiver."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from tools.support.downstream import FakeDownstream, ServedDownstream, incoming
from tools.support.hooks import HookReceiver

CALL_LIMIT = 2
ACCOUNT_ID = 7
INBOX_ID = 12
# Generous quotas: the soak measures loss under faults, not the tenant's rate limit.
QUOTAS = {"requestsPerSecond": 2000, "burst": 4000, "keyRequestsPerSecond": 1000, "keyBurst": 2000}


class SetupFailed(RuntimeError):
    pass


class TimedDownstream(FakeDownstream):
    """The fake Chatwoot, also remembering when each incoming message arrived (by source id), so
    a second copy says how long after the first it came."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: dict[str, list[float]] = {}
        self._arrivals_lock = threading.Lock()

    def applied(self, method: str, path: str, payload: Any) -> None:
        if method == "POST" and path.endswith("/messages") and isinstance(payload, dict) and incoming(payload):
            with self._arrivals_lock:
                self.arrivals.setdefault(str(payload.get("source_id")), []).append(time.monotonic())


@dataclass(frozen=True)
class SoakInstance:
    name: str  # switchboard's name and the simulator's id
    flavour: str  # calls, wuzapi, evolution or meta
    kind: str  # calls or messages
    number: str
    number_id: str
    token: str  # the provider's instance token (simulator reads only)
    reply_path: str = ""  # the outgoing webhook's path and query, secret included


@dataclass
class World:
    api_url: str
    sim_url: str
    owner_tag: str
    admin_key: str
    platform_key: str
    instances: list[SoakInstance]
    send_keys: dict[str, str]  # label -> key
    attendants: dict[str, str]  # attendant id -> agent key
    calls_instance: SoakInstance
    downstream: TimedDownstream
    client_webhooks: ClientWebhookReceiver
    secrets: set[str] = field(default_factory=set)  # what must never appear in the report

    def instance(self, name: str) -> SoakInstance:
        return next(instance for instance in self.instances if instance.name == name)


class ClientWebhookReceiver(HookReceiver):
    """Where one send key's client webhooks go: counts deliveries and distinct `webhook-id`s."""

    def __init__(self) -> None:
        self.deliveries = 0
        self.ids: set[str] = set()
        self.types: dict[str, int] = {}
        self._lock = threading.Lock()
        super().__init__(self._answer)

    def _answer(self, headers: dict[str, str], body: bytes) -> int:
        try:
            kind = str(json.loads(body).get("event") or json.loads(body).get("type") or "?")
        except ValueError:
            kind = "?"
        with self._lock:
            self.deliveries += 1
            self.ids.add(headers.get("webhook-id") or "")
            self.types[kind] = self.types.get(kind, 0) + 1
        return 204


class Api:
    """The local HTTP API with one key; raises SetupFailed on an unexpected status."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30.0, trust_env=False)

    def call(self, method: str, path: str, key: str, body: Any = None, expect: tuple[int, ...] = (200, 201)) -> Any:
        answer = self.http.request(method, path, json=body, headers={"authorization": f"Bearer {key}"})
        if answer.status_code not in expect:
            raise SetupFailed(f"{method} {path} answered {answer.status_code}: {answer.text[:300]}")
        return answer.json() if answer.content else None

    def close(self) -> None:
        self.http.close()


@contextmanager
def api_client(base_url: str) -> Iterator[Api]:
    api = Api(base_url)
    try:
        yield api
    finally:
        api.close()


def arrange(info: dict[str, Any], attendants: int) -> tuple[World, ServedDownstream]:
    """Everything the soak's traffic needs, through the API; the served downstream to stop at the end."""
    downstream = TimedDownstream()
    served = downstream.serve()
    receiver = ClientWebhookReceiver()
    try:
        world = _arranged(info, attendants, downstream, served, receiver)
    except BaseException:
        served.stop()
        receiver.stop()
        raise
    return world, served


def _arranged(
    info: dict[str, Any],
    attendants: int,
    downstream: TimedDownstream,
    served: ServedDownstream,
    receiver: ClientWebhookReceiver,
) -> World:
    demo = info["demo"]
    admin, platform, owner = demo["admin_key"], info["platformKey"], demo["owner_tag"]
    with api_client(info["apiUrl"]) as api:
        api.call(
            "PUT",
            f"/api/tenants/{owner}",
            admin,
            {
                "downstreamBaseUrl": served.url,
                "downstreamApiToken": "soak-chatwoot-token",
                "downstreamAccountId": ACCOUNT_ID,
                "downstreamInboxId": INBOX_ID,
            },
        )
        api.call("PUT", f"/api/tenants/{owner}/quotas", platform, QUOTAS)
        instances = []
        for seeded in demo["instances"]:
            made = api.call("POST", f"/api/instances/{seeded['name']}/webhook-secret", admin)
            parts = urlsplit(made["webhookUrl"])
            instances.append(
                SoakInstance(
                    name=seeded["name"],
                    flavour=seeded["flavour"],
                    kind=seeded["kind"],
                    number=seeded["number"],
                    number_id=seeded["number_id"],
                    token=seeded["token"],
                    reply_path=f"{parts.path}?{parts.query}",
                )
            )
        by_flavour = {instance.flavour: instance for instance in instances if instance.kind == "messages"}
        calls = next(instance for instance in instances if instance.kind == "calls")
        keys = {"pool-calls-server": demo["send_key"]}
        mixed = _send_key(api, admin, "soak pool wuzapi+evolution+meta", by_flavour["wuzapi"].number)
        for flavour in ("wuzapi", "evolution", "meta"):
            api.call(
                "POST", f"/api/api-keys/{mixed['id']}/pool", admin, {"whatsappNumberId": by_flavour[flavour].number_id}
            )
        api.call("PUT", f"/api/api-keys/{mixed['id']}/selection-mode", admin, {"numberSelectionMode": "pool"})
        keys["pool-mixed"] = mixed["key"]
        for flavour in ("wuzapi", "evolution", "meta"):
            made = _send_key(api, admin, f"soak default {flavour}", by_flavour[flavour].number, receiver.url)
            keys[f"default-{flavour}"] = made["key"]
        api.call("PUT", f"/api/connections/{calls.name}/calls-limit", admin, {"callsMaxConcurrent": CALL_LIMIT})
        agents = {demo["attendant_id"]: demo["agent_key"]}
        for index in range(2, attendants + 1):
            attendant = f"{owner}-attendant-{index}"
            made = api.call(
                "POST",
                "/api/api-keys",
                admin,
                {"name": f"soak {attendant}", "scopes": ["agent"], "attendantId": attendant},
            )
            agents[attendant] = made["key"]
    secrets = {admin, platform, info["simAdminToken"], "soak-chatwoot-token", *keys.values(), *agents.values()}
    secrets |= {instance.token for instance in instances} | set(demo["other_secrets"]) | {demo["webhook_secret"]}
    secrets |= {instance.reply_path.partition("token=")[2] for instance in instances}
    world = World(
        api_url=info["apiUrl"],
        sim_url=info["simUrl"],
        owner_tag=owner,
        admin_key=admin,
        platform_key=platform,
        instances=instances,
        send_keys=keys,
        attendants=agents,
        calls_instance=calls,
        downstream=downstream,
        client_webhooks=receiver,
        secrets={secret for secret in secrets if secret},
    )
    return world


def _send_key(api: Api, admin: str, name: str, default_number: str, webhook_url: str | None = None) -> Any:
    body: dict[str, Any] = {"name": name, "scopes": ["send"], "defaultNumber": default_number}
    if webhook_url:
        body["webhookUrl"] = webhook_url
    return api.call("POST", "/api/api-keys", admin, body, expect=(201,))

"""Seeds a tenant through the public HTTP API (never by writing tables), with its instances on
the provider simulator: what an operator would do by hand, so the seed also exercises the API.

`seed_tenant` is used for the demo tenant of `make local` and for isolated tenants in e2e tests.
Each provider points at the simulator server of its flavour (`devstack/simulator/README.md`):
the calls-capable wuzapi server at the root, a plain wuzapi at `/wuzapi`, an Evolution API at
`/evolution` and a Meta Cloud API at `/meta`.
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
    flavour: str = "calls"  # the simulator server it lives on: calls, wuzapi, evolution or meta
    provider_id: str = ""


@dataclass(frozen=True)
class OtherKind:
    """A provider of another kind with one number: which simulator server, what its secret is and
    how it signs its webhooks (None: the kind's default)."""

    flavour: str
    kind: str
    secret_length: int = 24  # bytes of `secrets.token_urlsafe`; wuzapi wants an HMAC key of 32+ characters
    webhook_scheme: str | None = None


OTHER_KINDS = (
    OtherKind("wuzapi", "wuzapi", secret_length=32, webhook_scheme="wuzapi-hmac"),
    OtherKind("evolution", "evolution"),
    OtherKind("meta", "meta"),
)


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
    # flavour -> provider id, for the calls server and each other kind
    providers: dict[str, str] = field(default_factory=dict)
    # the other kinds' webhook secrets (HMAC key, jwt_key, app secret) and Meta's verify token
    other_secrets: list[str] = field(default_factory=list)

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
    other_kinds: bool = True,
) -> SeededTenant:
    """A tenant with a wuzapi provider on the simulator's calls-capable server, three numbers
    each with one instance (the third of kind `calls`), connected; then, with `other_kinds`, one
    number each on a plain wuzapi, an Evolution API and a Meta Cloud API (prefix + 4..6); a
    `send` key whose pool holds the first three numbers, an `agent` key and the tenant's admin key.

    `digits_prefix` makes the phone numbers (prefix + 1..6) unique on the simulator.
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
            instances.append(SeededInstance(name, name, token, kind, number["id"], digits, "calls", provider["id"]))
        providers = {"calls": provider["id"]}
        notes: list[str] = []
        other_secrets: list[str] = []
        if other_kinds:
            for index, other in enumerate(OTHER_KINDS, start=len(instances) + 1):
                seeded_other = _seed_other_kind(
                    api,
                    sim,
                    other,
                    admin=admin,
                    owner_tag=owner_tag,
                    digits=f"{digits_prefix}{index}",
                    index=index,
                    api_url=api_url,
                    sim_url=sim_url,
                    notes=notes,
                )
                numbers.append(seeded_other.number)
                instances.append(seeded_other.instance)
                providers[other.flavour] = seeded_other.instance.provider_id
                other_secrets.extend(seeded_other.secrets)
        for instance in instances:
            if instance.flavour != "meta":
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
            notes=notes,
            providers=providers,
            other_secrets=other_secrets,
        )
        seeded.pool_mode = _pool(api, seeded)
        seeded.connected = _await_connected(api, seeded, connect_timeout)
        return seeded
    finally:
        api.close()
        sim.close()


@dataclass(frozen=True)
class _SeededOther:
    number: dict[str, Any]
    instance: SeededInstance
    secrets: list[str]


def _seed_other_kind(
    api: ApiClient,
    sim: SimulatorControl,
    other: OtherKind,
    *,
    admin: str,
    owner_tag: str,
    digits: str,
    index: int,
    api_url: str,
    sim_url: str,
    notes: list[str],
) -> _SeededOther:
    """A provider of `other.kind` on the simulator server of its flavour, one number, one instance.

    The instance's providerInstanceId is what the server's webhooks name it by: the wuzapi user
    name (`instanceName`) or the Evolution instance name; a Meta number is found by its
    `metaPhoneId` (the Cloud API's phone number id).
    """
    secret = secrets.token_urlsafe(other.secret_length)
    body: dict[str, Any] = {
        "name": other.flavour,
        "kind": other.kind,
        "baseUrl": f"{sim_url}/{other.flavour}",
        "webhookSecret": secret,
    }
    if other.webhook_scheme is not None:
        body["webhookScheme"] = other.webhook_scheme
    verify_token = secrets.token_urlsafe(16) if other.kind == "meta" else None
    provider = _create_provider(api, admin, body, verify_token, notes)
    meta_phone_id = f"1065{digits}" if other.kind == "meta" else None
    # The number's WhatsApp Business Account, where its templates are listed (one per tenant here).
    waba_id = f"1077{digits}" if other.kind == "meta" else None
    number_body: dict[str, Any] = {"number": digits, "displayName": f"{owner_tag} {other.flavour}"}
    if meta_phone_id is not None:
        number_body["metaPhoneId"] = meta_phone_id
        number_body["wabaId"] = waba_id
    number = api.call("POST", "/api/numbers", admin, number_body).json()
    name = f"{owner_tag}-{index}"
    token = secrets.token_urlsafe(24)
    api.call(
        "PUT",
        f"/api/instances/{name}",
        admin,
        {
            "providerId": provider["id"],
            "providerInstanceId": meta_phone_id or name,
            "numberId": number["id"],
            "token": token,
            "kind": "messages",
        },
    )
    sim_fields: dict[str, Any] = {
        "id": name,
        "token": token,
        "flavour": other.flavour,
        "number": digits,
        "connected": other.kind == "meta",
        "webhookUrl": f"{api_url}/webhooks/{provider['id']}",
        "webhookSecret": secret,
    }
    if meta_phone_id is not None:
        sim_fields |= {"metaPhoneId": meta_phone_id, "wabaId": waba_id, "verifyToken": verify_token}
    sim.create_instance(**sim_fields)
    instance = SeededInstance(name, name, token, "messages", number["id"], digits, other.flavour, provider["id"])
    return _SeededOther(number, instance, [secret] + ([verify_token] if verify_token else []))


def _create_provider(
    api: ApiClient, admin: str, body: dict[str, Any], verify_token: str | None, notes: list[str]
) -> dict[str, Any]:
    """Create the provider, with Meta's verify token when the API knows the field."""
    if verify_token is None:
        created: dict[str, Any] = api.call("POST", "/api/providers", admin, body).json()
        return created
    answer = api.call("POST", "/api/providers", admin, body | {"verifyToken": verify_token}, expect=(201, 400, 422))
    if answer.status_code == 201:
        created = answer.json()
        return created
    if "verifyToken" not in answer.text and "verify_token" not in answer.text:
        raise SeedError(f"POST /api/providers answered {answer.status_code}: {answer.text[:500]}")
    notes.append("the API has no verifyToken for Meta providers: Meta's subscription check is not seeded")
    created = api.call("POST", "/api/providers", admin, body).json()
    return created


def _pool(api: ApiClient, seeded: SeededTenant) -> bool:
    """Put the send key in pool mode with the calls server's three numbers; False if the pool API is absent."""
    key_path = f"/api/api-keys/{seeded.send_key_id}"
    mode = api.call(
        "PUT", f"{key_path}/selection-mode", seeded.admin_key, {"numberSelectionMode": "pool"}, expect=(200, 404)
    )
    if _route_missing(mode):
        seeded.notes.append("the pool API is not deployed: the send key uses its default number")
        return False
    if mode.status_code != 200:
        raise SeedError(f"PUT {key_path}/selection-mode answered 404: {mode.text[:500]}")
    for number in seeded.numbers[:3]:
        api.call("POST", f"{key_path}/pool", seeded.admin_key, {"whatsappNumberId": number["id"]})
    return True


def _await_connected(api: ApiClient, seeded: SeededTenant, timeout: float) -> bool:
    """Wait until the simulator's connection webhooks (each server's own) have made every number
    connected; a Meta number always is."""
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
            waiting = ", ".join(number["number"] for number in listed if not number["connected"])
            seeded.notes.append(f"numbers not connected yet (provider webhooks not applied): {waiting}")
            return False
        time.sleep(0.1)


# --- people: a seeded admin and attendant who sign in with a password ----------------------------


@dataclass
class SeededPerson:
    email: str
    password: str
    role: str
    user_id: str


def person_password() -> str:
    """A password the template's policy takes (12+ characters, upper, lower and digits)."""
    return f"Sb{secrets.token_hex(6)}Aa9"


def seed_people(api_url: str, admin_key: str, cognito: Any, user_pool_id: str, *, owner_tag: str) -> list[SeededPerson]:
    """One admin and one attendant of the tenant, invited through `POST /api/users` as an admin
    would, their passwords then made permanent (what the person would do at first sign-in), so
    the banner's passwords sign straight in."""
    api = ApiClient(api_url)
    people: list[SeededPerson] = []
    try:
        for role in ("admin", "attendant"):
            email = f"{role}@{owner_tag}.example.com"
            temporary = person_password()
            answer = api.call(
                "POST", "/api/users", admin_key, {"email": email, "role": role, "temporaryPassword": temporary}
            ).json()
            password = person_password()
            cognito.admin_set_user_password(
                UserPoolId=user_pool_id, Username=answer["user"]["id"], Password=password, Permanent=True
            )
            people.append(SeededPerson(email=email, password=password, role=role, user_id=answer["user"]["id"]))
    finally:
        api.close()
    return people

"""Connections on the provider simulator, for the calls and call-limit tests, on moto.

A connection is a simulator instance plus our provider, number and instance records pointing at
it, made either through the services (`register`: connected, its line's limit synced, a line in
use) or through the HTTP API as the tenant's admin (`register_connection`: nothing synced yet).
Events are taken from the simulator's event log and handed to our effect handlers as the webhook
ingest would after its dedupe commit (`deliver`), so each test decides the order, the duplicates
and the losses. `Replica` builds the calls services from its own boto3 session, like one Lambda
container.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.calls.dialing import DialService
from switchboard.calls.dynamo import CallRepository
from switchboard.calls.reconcile_queue import ReconcileQueue
from switchboard.calls.service import CallService
from switchboard.catalog.domain import Instance, instance_key
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.catalog.models import InstanceItem
from switchboard.catalog.targets import TargetResolver
from switchboard.core.secrets import SecretStore
from switchboard.core.settings import get_settings
from switchboard.lines.domain import Line, Snapshot
from switchboard.lines.dynamo import LineRepository
from switchboard.providers.base import Capabilities
from switchboard.providers.registry import provider_client_for
from tools.support.api import Client, TenantKeys
from tools.support.builders import admin, event_of_envelope, run_effects

SIM_ADMIN_TOKEN = "sim-admin-token-for-tests"  # the `simulator` fixture's admin token
PROVIDER_SECRET = "whsec-calls-test-secret"  # the webhook secret of every connection's provider
OWN_NUMBER = "5511900000000"
MAX_VERSION = 2**63 - 1  # the largest call-settings version: a signed 64-bit integer


@dataclass
class Connection:
    name: str
    sim_id: str
    sim_token: str
    provider_id: str
    tenant: str
    admin_key: str = ""  # the tenant admin's key, for a connection made through the API

    @property
    def calls_path(self) -> str:
        return f"/api/connections/{self.name}/calls"

    @property
    def limit_path(self) -> str:
        return f"/api/connections/{self.name}/calls-limit"

    @property
    def key(self) -> str:
        return instance_key(self.tenant, self.name)

    def instance(self) -> Instance:
        found = bootstrap.catalog_repository().find_instance(instance_key(self.tenant, self.name))
        assert found is not None
        return found

    def line(self) -> Line:
        line = bootstrap.call_repository().line(self.tenant, self.name)
        assert line is not None
        return line

    def occupant_kinds(self) -> list[str]:
        return sorted(occupant.kind for occupant in self.line().occupants.values())


def _simulator_instance(control: SimulatorControl, kind: str, **fields: Any) -> tuple[str, str]:
    """A new instance on the simulator: its id and token."""
    sim_id, token = f"inst-{uuid.uuid4()}", f"tok-{uuid.uuid4()}"
    control.create_instance(id=sim_id, token=token, kind=kind, number=OWN_NUMBER, **fields)
    return sim_id, token


def _unique_number() -> str:
    return f"55119{uuid.uuid4().int % 10**8:08d}"


def _unique_name(tenant: str, kind: str) -> str:
    return f"{tenant}-{kind}-{uuid.uuid4().hex[:8]}"


def register(
    simulator: Simulator,
    control: SimulatorControl,
    *,
    tenant: str = "acme",
    limit: int = 2,
    sim_limit: int | None = None,
    connected: bool = True,
) -> Connection:
    """A calls connection made through the services, its limit synced from the provider.

    `sim_limit` lets the provider admit more than our line, to observe our own admission alone.
    """
    sim_id, token = _simulator_instance(control, "calls", callsMaxConcurrent=sim_limit or limit)
    catalog = bootstrap.catalog_service()
    owner = admin(tenant)
    provider = catalog.create_provider(
        owner,
        name="zap",
        kind="wuzapi",
        base_url=simulator.base_url,
        webhook_secret=PROVIDER_SECRET,
        admin_token=SIM_ADMIN_TOKEN,
        priority=0,
    )
    number = catalog.create_number(owner, _unique_number(), "Calls", None)
    name = _unique_name(tenant, "calls")
    instance, _ = catalog.put_instance(
        owner,
        name=name,
        provider_id=provider.id,
        provider_instance_id=sim_id,
        number_id=number.id,
        token=token,
        priority=0,
        kind="calls",
        owner_tag=None,
        owner_tag_given=False,
    )
    if connected:
        set_connected(tenant, name, True)
    if sim_limit is None:
        bootstrap.calls_config_service().refresh_from_status(instance)
    else:
        LineRepository(bootstrap.table()).apply_snapshot(tenant, name, Snapshot(limit=limit, source="status"))
    return Connection(name=name, sim_id=sim_id, sim_token=token, provider_id=provider.id, tenant=tenant)


def register_connection(
    client: Client,
    tenant: TenantKeys,
    simulator: Simulator,
    control: SimulatorControl,
    *,
    kind: str = "calls",
    provider_kind: str = "wuzapi",
    **sim_fields: Any,
) -> Connection:
    """A connection made through the API by the tenant's admin; its state and limit are not synced."""
    sim_id, token = _simulator_instance(control, kind, **sim_fields)
    provider = client.post(
        "/api/providers",
        key=tenant.admin,
        json_body={
            "name": "zap",
            "kind": provider_kind,
            "baseUrl": simulator.base_url,
            "webhookSecret": PROVIDER_SECRET,
            "adminToken": SIM_ADMIN_TOKEN,
        },
    )
    assert provider.status == 201, provider.body
    number = client.post(
        "/api/numbers", key=tenant.admin, json_body={"number": _unique_number(), "displayName": "Calls"}
    )
    assert number.status == 201, number.body
    name = _unique_name(tenant.owner_tag, kind)
    instance = client.put(
        f"/api/instances/{name}",
        key=tenant.admin,
        json_body={
            "providerId": provider.json()["id"],
            "providerInstanceId": sim_id,
            "numberId": number.json()["id"],
            "token": token,
            "kind": kind,
        },
    )
    assert instance.status == 201, instance.body
    return Connection(
        name=name,
        sim_id=sim_id,
        sim_token=token,
        provider_id=provider.json()["id"],
        tenant=tenant.owner_tag,
        admin_key=tenant.admin,
    )


def set_connected(tenant: str, name: str, connected: bool) -> None:
    """What the `connection` effect stores (our copy of the session state), without its seq guard."""
    bootstrap.table().update_item(
        Key={"pk": InstanceItem.pk_for(instance_key(tenant, name)), "sk": InstanceItem.sk_for()},
        UpdateExpression="SET #state = :state",
        ExpressionAttributeNames={"#state": "state"},
        ExpressionAttributeValues={":state": "CONNECTED" if connected else "DISCONNECTED"},
    )


def emitted(control: SimulatorControl, connection: Connection, name: str) -> list[dict[str, Any]]:
    """The envelopes of event `name` the simulator emitted for the connection, oldest first."""
    return [event for event in control.events(connection.sim_id) if event["event"] == name]


def call_events(control: SimulatorControl, connection: Connection, call_id: str | None = None) -> list[dict[str, Any]]:
    events = emitted(control, connection, "call")
    return [event for event in events if call_id is None or event["data"]["callId"] == call_id]


def deliver(
    connection: Connection,
    *envelopes: dict[str, Any],
    service: CallService | None = None,
    instance: Instance | None = None,
) -> None:
    """Run the effect handlers of each envelope, as the webhook ingest does after its dedupe commit.

    With `service` (a replica's), only its `call` effect runs.
    """
    target = instance or connection.instance()
    for envelope in envelopes:
        event = event_of_envelope(target, envelope, connection.provider_id)
        if service is None:
            run_effects(event)
        else:
            service.on_call_event(event)


def around_dial(
    monkeypatch: pytest.MonkeyPatch,
    *,
    before: Callable[[], None] | None = None,
    after: Callable[[Any], None] | None = None,
) -> None:
    """Every provider client, with `before()` run just before a dial reaches the provider and
    `after(answer)` just after its answer arrives (a race that real timing rarely shows)."""
    targets = bootstrap.targets()
    real_target_for = targets.target_for

    class AroundDial:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

        def dial(self, *args: Any, **kwargs: Any) -> Any:
            if before is not None:
                before()
            answer = self._inner.dial(*args, **kwargs)
            if after is not None:
                after(answer)
            return answer

    def target_for(instance: Instance) -> Any:
        client, target = real_target_for(instance)
        return AroundDial(client), target

    monkeypatch.setattr(targets, "target_for", target_for)


class Replica:
    """One backend replica: its own boto3 session, clients, repositories and services."""

    def __init__(self, *, reconcile: Any = None) -> None:
        session = boto3.session.Session()
        settings = get_settings()
        table = session.resource("dynamodb").Table(settings.table_name)
        catalog = CatalogRepository(table)
        secrets = SecretStore(session.client("ssm"), settings.secrets_prefix, 60)
        clients = {"wuzapi": provider_client_for("wuzapi", local_mode=True, read_timeout=5.0)}
        targets = TargetResolver(catalog, secrets, lambda kind: clients[kind])
        self.repository = CallRepository(table)
        self.calls = CallService(self.repository, catalog, targets)
        self.dialing = DialService(
            catalog,
            self.repository,
            self.calls,
            targets,
            reconcile or ReconcileQueue(session.client("sqs"), settings.reconcile_queue_url),
            capabilities=lambda instance: Capabilities(calls=True, calls_video=True),
            refresh_limit=lambda instance: Line(instance=instance.name, tenant=instance.tenant),
        )

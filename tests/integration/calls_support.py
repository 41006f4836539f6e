"""Shared setup for the Calls II tests: a calls connection on the simulator and its records on moto.

Events are taken from the simulator's event log and handed to our `call` handler as the webhook
ingest would (`deliver`), so each test decides the order, the duplicates and the losses.
`Replica` builds the whole service graph from its own boto3 session, like one Lambda container.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.call_limit.domain import Line, Snapshot
from switchboard.call_limit.dynamo import LineRepository
from switchboard.calls.dialing import DialService
from switchboard.calls.dynamo import CallRepository
from switchboard.calls.reconcile_queue import ReconcileQueue
from switchboard.calls.service import CallService
from switchboard.catalog.domain import Instance, Principal, Scope
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.core.dynamo import entity_key
from switchboard.core.secrets import SecretStore
from switchboard.core.settings import get_settings
from switchboard.providers.base import Capabilities
from switchboard.providers.registry import provider_client_for
from switchboard.providers.targets import TargetResolver
from switchboard.webhooks.events import ProviderEvent

SIM_ADMIN_TOKEN = "sim-admin-token-calls-two"
OWN_NUMBER = "5511900000000"


@pytest.fixture(scope="module")
def simulator() -> Iterator[Simulator]:
    sim = Simulator(admin_token=SIM_ADMIN_TOKEN, fault_delay_seconds=1.0, webhook_retry_base_delay=0.02)
    sim.start()
    yield sim
    sim.stop()


def admin(tenant: str = "acme") -> Principal:
    return Principal(tenant=tenant, key_id="key_admin", scopes=frozenset({Scope.ADMIN}))


def agent(attendant: str, tenant: str = "acme") -> Principal:
    return Principal(tenant=tenant, key_id=f"key_{attendant}", scopes=frozenset({Scope.AGENT}), attendant_id=attendant)


@dataclass
class Connection:
    name: str
    sim_id: str
    tenant: str
    provider_id: str

    def instance(self) -> Instance:
        found = bootstrap.catalog_repository().find_instance(self.name)
        assert found is not None
        return found

    def line(self) -> Line:
        line = bootstrap.call_repository().line(self.name)
        assert line is not None
        return line

    def occupant_kinds(self) -> list[str]:
        return sorted(occupant.kind for occupant in self.line().occupants.values())


def register(
    simulator: Simulator,
    control: SimulatorControl,
    *,
    tenant: str = "acme",
    limit: int = 2,
    sim_limit: int | None = None,
    connected: bool = True,
) -> Connection:
    """A simulator calls instance and our provider, number and instance records, its limit synced.

    `sim_limit` lets the provider admit more than our line, to observe our own admission alone.
    """
    sim_id, token = f"inst-{uuid.uuid4()}", f"tok-{uuid.uuid4()}"
    control.create_instance(
        id=sim_id, token=token, kind="calls", number=OWN_NUMBER, callsMaxConcurrent=sim_limit or limit
    )
    catalog = bootstrap.catalog_service()
    owner = admin(tenant)
    provider = catalog.create_provider(
        owner,
        name="zap",
        kind="wuzapi",
        base_url=simulator.base_url,
        webhook_secret="whsec-calls-two-secret",
        admin_token=SIM_ADMIN_TOKEN,
        priority=0,
    )
    number = catalog.create_number(owner, f"55119{uuid.uuid4().int % 10**8:08d}", "Calls", None)
    name = f"{tenant}-calls-{uuid.uuid4().hex[:8]}"
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
        set_connected(name, True)
    if sim_limit is None:
        bootstrap.calls_config_service().refresh_from_status(instance)
    else:
        LineRepository(bootstrap.table()).apply_snapshot(name, tenant, Snapshot(limit=limit, source="status"))
    return Connection(name=name, sim_id=sim_id, tenant=tenant, provider_id=provider.id)


def set_connected(name: str, connected: bool) -> None:
    """What the routing engineer's `connection` handler stores (our copy of the session state)."""
    bootstrap.table().update_item(
        Key=entity_key("INSTANCE", name),
        UpdateExpression="SET #state = :state",
        ExpressionAttributeNames={"#state": "state"},
        ExpressionAttributeValues={":state": "CONNECTED" if connected else "DISCONNECTED"},
    )


def call_events(control: SimulatorControl, connection: Connection, call_id: str | None = None) -> list[dict[str, Any]]:
    events = [event for event in control.events(connection.sim_id) if event["event"] == "call"]
    return [event for event in events if call_id is None or event["data"]["callId"] == call_id]


def provider_event(connection: Connection, envelope: dict[str, Any], instance: Instance | None = None) -> ProviderEvent:
    return ProviderEvent(
        provider_id=connection.provider_id,
        instance=instance or connection.instance(),
        name=envelope["event"],
        event_id=envelope["eventId"],
        seq=envelope.get("seq"),
        data=envelope["data"],
        received_at=datetime.now(UTC),
    )


def deliver(
    connection: Connection,
    *envelopes: dict[str, Any],
    service: CallService | None = None,
    instance: Instance | None = None,
) -> None:
    """Hand events to the `call` effect, as the webhook ingest does after its dedupe commit."""
    handler = service.on_call_event if service else bootstrap.call_service().on_call_event
    instance = instance or connection.instance()
    for envelope in envelopes:
        handler(provider_event(connection, envelope, instance))


class QueueSpy:
    """Records reconcile requests instead of sending them (the tests run the reconciler themselves)."""

    def __init__(self) -> None:
        self.requested: list[str] = []

    def request(self, instance: str, delay_seconds: int = 0) -> None:
        self.requested.append(instance)


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

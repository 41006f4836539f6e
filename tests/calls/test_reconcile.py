"""Reconciliation: lost events recovered from the provider's reads, with the same forward-only guards.

Covers the manual route, the queue worker (SQS batch, partial failures) and the scheduled fan-out.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from devstack.lambdas import Functions
from devstack.simulator import Simulator, SimulatorControl
from switchboard import bootstrap
from switchboard.calls.domain import DialAttempt, reservation_id
from switchboard.calls.dynamo import ReconcileGate
from switchboard.calls.on_demand import ReconcileOnDemand
from switchboard.calls.reconcile import PER_SERVER_RATE
from switchboard.calls.reconcile_queue import ReconcileQueue
from switchboard.catalog.domain import Number, Provider, Tenant
from switchboard.core.errors import RateLimited
from switchboard.core.identity import Scope
from switchboard.core.settings import get_settings
from switchboard.providers.base import ProviderCall
from tests.support.threads import at_once
from tools.support.api import Client
from tools.support.aws import AwsResources
from tools.support.builders import admin, agent, instance
from tools.support.connections import call_events, deliver, register
from tools.support.sqs import sqs_record

CALLER = "5511955554444"


def test_given_the_end_event_was_lost_then_reconciliation_frees_the_slot_with_the_real_end(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """The receiver was down while the call ended: only the provider's reads know."""
    connection = register(simulator, control, limit=1)
    call_id = control.incoming_call(connection.sim_id, CALLER)
    deliver(connection, *call_events(control, connection, call_id))
    control.call_action(connection.sim_id, call_id, "end", reason="network", endedBy="remote")

    report = bootstrap.reconciler().reconcile(connection.instance())

    assert (report.active, report.ended) == (0, 1)
    assert connection.line().occupants == {}
    record = bootstrap.call_service().get(admin(), connection.name, call_id)
    assert (record.state, record.end_reason, record.ended_by, record.end_origin) == (
        "ended",
        "network",
        "remote",
        "reconcile",
    )
    deliver(connection, *call_events(control, connection, call_id))  # the lost event, finally
    assert bootstrap.call_service().get(admin(), connection.name, call_id).end_origin == "reconcile"


def test_given_a_call_we_never_heard_of_then_reconciliation_counts_it(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=2)
    call_id = control.incoming_call(connection.sim_id, CALLER)
    control.call_action(connection.sim_id, call_id, "answer")

    bootstrap.reconciler().reconcile(connection.instance())

    occupant = next(iter(connection.line().occupants.values()))
    assert (occupant.call_id, occupant.state, occupant.direction) == (call_id, "connecting", "incoming")


def test_given_a_stale_read_then_a_newer_event_is_never_undone(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = register(simulator, control, limit=1)
    call_id = control.incoming_call(connection.sim_id, CALLER)
    control.call_action(connection.sim_id, call_id, "answer")
    control.call_action(connection.sim_id, call_id, "active")
    deliver(connection, *call_events(control, connection, call_id))
    client, _ = bootstrap.targets().target_for(connection.instance())
    stale = [ProviderCall(call_id=call_id, state="ringing", direction="incoming", peer=CALLER)]
    monkeypatch.setattr(type(client), "active_calls", lambda self, target: stale)

    bootstrap.reconciler().reconcile(connection.instance())

    assert bootstrap.call_service().get(admin(), connection.name, call_id).state == "active"
    assert [occupant.state for occupant in connection.line().occupants.values()] == ["active"]


def test_given_a_live_call_the_provider_does_not_know_then_it_is_never_ended_on_a_guess(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    offer = {
        "event": "call",
        "eventId": str(uuid.uuid4()),
        "seq": 1,
        "data": {"type": "offer", "callId": "GHOST", "state": "ringing", "direction": "incoming", "from": CALLER},
    }
    deliver(connection, offer)

    report = bootstrap.reconciler().reconcile(connection.instance())

    assert report.unknown_to_provider == 1
    assert [occupant.call_id for occupant in connection.line().occupants.values()] == ["GHOST"]


def pending_attempt(connection: Any, *, age: timedelta, key: str) -> DialAttempt:
    """A reservation held since `age` ago whose dial never reached the provider."""
    attempt = DialAttempt(
        id=reservation_id(connection.tenant, connection.name, "ana", key),
        tenant=connection.tenant,
        instance=connection.name,
        attendant="ana",
        to="5511977776666",
        created_at=(datetime.now(UTC) - age).isoformat(),
    )
    repository = bootstrap.call_repository()
    assert repository.create_attempt(attempt) is None
    assert repository.reserve(attempt)
    return attempt


def test_given_an_old_unresolved_reservation_then_it_is_released_without_dialing(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    pending_attempt(connection, age=timedelta(minutes=10), key="old")

    report = bootstrap.reconciler().reconcile(connection.instance())

    assert report.reservations_released == 1
    assert connection.line().occupants == {}
    assert control.instance(connection.sim_id)["calls"] == []


def test_given_a_young_reservation_with_a_lost_dial_then_it_is_dialled_once_by_its_key(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    attempt = pending_attempt(connection, age=timedelta(seconds=5), key="young")

    report = bootstrap.reconciler().reconcile(connection.instance())
    again = bootstrap.reconciler().reconcile(connection.instance())

    assert (report.reservations_bound, again.reservations_bound) == (1, 0)
    calls = control.instance(connection.sim_id)["calls"]
    assert len(calls) == 1
    occupant = next(iter(connection.line().occupants.values()))
    assert (occupant.kind, occupant.call_id, occupant.owner) == ("call", calls[0]["callId"], attempt.attendant)


def test_given_a_pending_reservation_the_provider_refuses_then_it_is_released(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    pending_attempt(connection, age=timedelta(seconds=5), key="busy")
    control.incoming_call(connection.sim_id, CALLER)  # the provider's only slot is taken

    report = bootstrap.reconciler().reconcile(connection.instance())

    assert report.reservations_released == 1
    assert connection.occupant_kinds() == ["call"]


def test_the_reconcile_route_serves_the_connections_agents_and_admins_once_per_window(
    aws: AwsResources, client: Client, simulator: Simulator, control: SimulatorControl
) -> None:
    """An attendant opening the calls panel reconciles it; a second open within 10 s is told to wait."""
    connection = register(simulator, control, limit=1)
    other = register(simulator, control, limit=1)
    control.incoming_call(connection.sim_id, CALLER)
    catalog = bootstrap.catalog_service()
    admin_key = catalog.create_api_key(admin(), tenant="acme", name="a", environment="LIVE", scopes=[Scope.ADMIN])
    agent_key = catalog.create_api_key(
        admin(), tenant="acme", name="b", environment="LIVE", scopes=[Scope.AGENT], attendant_id="ana"
    )
    send_key = catalog.create_api_key(admin(), tenant="acme", name="c", environment="LIVE", scopes=[Scope.SEND])
    path = f"/api/connections/{connection.name}/reconcile"

    refused = client.post(path, key=send_key.plaintext)
    answer = client.post(path, key=agent_key.plaintext)
    again = client.post(path, key=admin_key.plaintext)
    elsewhere = client.post(f"/api/connections/{other.name}/reconcile", key=agent_key.plaintext)

    assert refused.status == 403
    assert answer.status == 200, answer.body
    assert (answer.json()["active"], answer.json()["limit"]) == (1, 1)
    assert connection.occupant_kinds() == ["call"]
    assert (again.status, again.json()["error"]) == (429, "rate_limited")
    assert 1 <= int(again.headers["retry-after"]) <= 10
    assert elsewhere.status == 200, elsewhere.body


def test_an_on_demand_reconcile_runs_again_once_its_window_has_passed(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    connection = register(simulator, control, limit=1)
    now = [1_000_000.0]
    on_demand = ReconcileOnDemand(
        bootstrap.catalog_repository(), bootstrap.reconciler(), ReconcileGate(bootstrap.table()), clock=lambda: now[0]
    )
    on_demand.reconcile(agent("ana"), connection.name)
    now[0] += 9.5
    with pytest.raises(RateLimited) as inside:
        on_demand.reconcile(agent("bob"), connection.name)
    assert inside.value.retry_after_seconds == 1

    control.incoming_call(connection.sim_id, CALLER)
    now[0] += 0.5
    assert on_demand.reconcile(agent("bob"), connection.name).active == 1


def test_two_replicas_opening_the_panel_at_once_run_one_reconciliation(
    served_aws: AwsResources, simulator: Simulator, control: SimulatorControl
) -> None:
    """The window is one conditional write on DynamoDB: replicas share it."""
    connection = register(simulator, control, limit=1)
    gates = [ReconcileGate(boto3.session.Session().resource("dynamodb").Table(get_settings().table_name)) for _ in "ab"]
    now = 1_000_000.0

    entered = at_once([functools.partial(gate.enter, connection.tenant, connection.name, now, 10) for gate in gates])

    assert sorted(entered, key=lambda left: left is not None) == [None, 10.0]


@pytest.fixture(scope="module")
def functions() -> Functions:
    return Functions()


def sqs_event(*keys: str) -> dict[str, Any]:
    arn = "arn:aws:sqs:us-east-1:000000000000:reconcile"
    bodies = [json.dumps({"instance": key}) for key in keys]
    return {"Records": [sqs_record(body, message_id=f"m-{index}", queue_arn=arn) for index, body in enumerate(bodies)]}


def test_the_worker_reconciles_each_instance_and_reports_only_the_failed_message(
    aws: AwsResources, simulator: Simulator, control: SimulatorControl, functions: Functions
) -> None:
    healthy = register(simulator, control, limit=1)
    call_id = control.incoming_call(healthy.sim_id, CALLER)
    broken = register(simulator, control, limit=1)

    first = functions.invoke("ReconcileWorkerFunction", sqs_event(healthy.key))
    control.fault("/call/active", "error500")
    second = functions.invoke("ReconcileWorkerFunction", sqs_event("acme:deleted-instance", broken.key))

    assert first == {"batchItemFailures": []}
    assert [occupant.call_id for occupant in healthy.line().occupants.values()] == [call_id]
    assert second == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}


def test_the_schedule_fans_out_one_message_per_instance_in_batches(
    aws: AwsResources, functions: Functions, monkeypatch: pytest.MonkeyPatch, override: Callable[..., object]
) -> None:
    catalog = bootstrap.catalog_repository()
    batches: list[int] = []
    delays: dict[str, int] = {}
    sqs = boto3.client("sqs", region_name="us-east-1")
    real_send_batch = sqs.send_message_batch

    def count_batch(**kwargs: Any) -> Any:
        batches.append(len(kwargs["Entries"]))
        for entry in kwargs["Entries"]:
            delays[json.loads(entry["MessageBody"])["instance"]] = entry["DelaySeconds"]
        return real_send_batch(**kwargs)

    monkeypatch.setattr(sqs, "send_message_batch", count_batch)
    queue = ReconcileQueue(sqs, aws.queues["ReconcileQueue"])
    override(reconcile_queue=queue)
    keys = []
    for tenant in ("acme", "globex"):  # the same names in both tenants: two sets of lines
        catalog.create_tenant(Tenant(tenant=tenant, owner_tag=tenant, name=tenant))
        # an instance's provider and number are its tenant's (the instance's write checks them)
        provider = Provider(
            tenant=tenant,
            id=f"prv_{tenant}",
            name="zap",
            kind="wuzapi",
            base_url="https://zap.example",
            webhook_secret_hint="…cret",
        )
        catalog.create_provider(provider)
        catalog.create_number(Number(tenant=tenant, id=f"num_{tenant}", number="5511999990001", display_name="line"))
        for index in range(12):
            line = instance(
                f"line-{index}",
                tenant=tenant,
                kind="calls",
                provider_id=provider.id,
                number_id=f"num_{tenant}",
                provider_instance_id=f"{tenant}-{index}",
            )
            catalog.put_instance(line, None)
            keys.append(line.key)

    answer = functions.invoke("ReconcileSchedulerFunction", {"source": "aws.events", "detail-type": "Scheduled Event"})

    assert answer == {"instances": 24}
    assert batches == [10, 10, 4]
    assert sorted(delays) == sorted(keys)
    # Each tenant's own provider server, 12 lines each: PER_SERVER_RATE of a server's instances each
    # second (seconds 0, 1 and 2 of each); the first second's are visible now.
    assert sorted(Counter(delays.values()).values()) == [4] + [2 * PER_SERVER_RATE] * 2
    queued = [json.loads(message["Body"])["instance"] for message in aws.queue_messages("ReconcileQueue")]
    assert sorted(queued) == sorted(key for key, delay in delays.items() if delay == 0)

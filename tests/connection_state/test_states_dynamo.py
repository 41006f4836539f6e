"""The connection state's conditional writes on DynamoDB: on moto for the rules, and with real
threads against the served (serialised) endpoint for the race a status read runs against webhooks."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime
from typing import Any

import boto3

from switchboard import bootstrap
from switchboard.catalog.domain import InstanceState, Number
from switchboard.catalog.domain import Provider as ProviderRecord
from switchboard.catalog.dynamo import CatalogRepository
from switchboard.connection_state.domain import StoredState
from switchboard.connection_state.dynamo import ConnectionStateRepository
from switchboard.core.settings import get_settings
from tests.support.threads import at_once
from tools.support.aws import REGION, AwsResources
from tools.support.builders import instance

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def saved(key_name: str = "acme-main") -> str:
    """An instance saved with the provider and number its write checks it owns."""
    catalog = bootstrap.catalog_repository()
    record = instance(key_name, provider_id=f"prv_{key_name}", number_id=f"num_{key_name}")
    catalog.create_provider(
        ProviderRecord(
            tenant=record.tenant,
            id=record.provider_id,
            name="zap",
            kind="wuzapi",
            base_url="https://zap.example",
            webhook_secret_hint="…cret",
        )
    )
    catalog.create_number(
        Number(tenant=record.tenant, id=record.number_id, number="5511999990001", display_name="line")
    )
    catalog.put_instance(record, None)
    return record.key


def test_a_new_instance_is_disconnected_at_revision_zero_and_a_read_from_there_writes(aws: AwsResources) -> None:
    states = bootstrap.connection_state_repository()
    key = saved()

    before = states.stored(key)
    write = states.apply_read(key, "CONNECTED", before or StoredState(), NOW)

    assert before == StoredState(state="DISCONNECTED", rev=0)
    assert (write.written, write.previous) == (True, "DISCONNECTED")
    assert states.stored(key) == StoredState(state="CONNECTED", rev=1)


def test_a_read_from_a_revision_that_moved_on_writes_nothing(aws: AwsResources) -> None:
    states = bootstrap.connection_state_repository()
    key = saved()
    before = states.stored(key) or StoredState()
    states.apply_event(key, "DISCONNECTED", 4, NOW)  # committed while the provider answered

    write = states.apply_read(key, "CONNECTED", before, NOW)

    assert write.written is False
    assert states.stored(key) == StoredState(state="DISCONNECTED", rev=1)


def test_events_are_written_by_seq_only_and_a_read_keeps_the_seq(aws: AwsResources) -> None:
    states = bootstrap.connection_state_repository()
    key = saved()

    assert states.apply_event(key, "CONNECTED", 5, NOW).written
    assert not states.apply_event(key, "DISCONNECTED", 5, NOW).written  # a redelivery
    assert not states.apply_event(key, "DISCONNECTED", 3, NOW).written  # older
    assert states.apply_read(key, "DISCONNECTED", states.stored(key) or StoredState(), NOW).written
    assert not states.apply_event(key, "CONNECTED", 4, NOW).written  # still older than the last event

    stored = bootstrap.catalog_repository().find_instance(key)
    assert stored is not None
    assert (stored.state, stored.state_seq, stored.state_rev) == ("DISCONNECTED", 5, 2)


def test_a_deleted_instance_is_never_written_back(aws: AwsResources) -> None:
    states = bootstrap.connection_state_repository()
    key = saved()
    bootstrap.catalog_repository().delete_instance("acme", "acme-main")

    assert states.stored(key) is None
    assert not states.apply_event(key, "CONNECTED", 1, NOW).written
    assert not states.apply_read(key, "CONNECTED", StoredState(), NOW).written
    assert bootstrap.catalog_repository().find_instance(key) is None


def test_rebinding_an_instance_starts_its_state_over_and_moves_its_revision_on(aws: AwsResources) -> None:
    states = bootstrap.connection_state_repository()
    catalog = bootstrap.catalog_repository()
    key = saved()
    states.apply_event(key, "CONNECTED", 9, NOW)
    previous = catalog.find_instance(key)
    assert previous is not None
    before_rebinding = states.stored(key) or StoredState()

    catalog.put_instance(previous.model_copy(update={"provider_instance_id": "another-session"}), previous)

    stored = catalog.find_instance(key)
    assert stored is not None
    assert (stored.state, stored.state_seq, stored.state_rev) == ("DISCONNECTED", None, 2)
    # A read of the old session that started before the rebinding cannot land on the new one.
    assert not states.apply_read(key, "CONNECTED", before_rebinding, NOW).written
    # The new session's events start their own seq space.
    assert states.apply_event(key, "CONNECTED", 1, NOW).written


class Provider:
    """A provider whose session changes before each ordered event is delivered; a status read
    answers the state the session had when the read reached it, however long the answer takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.committed: InstanceState = "DISCONNECTED"

    def commit(self, state: InstanceState) -> None:
        with self._lock:
            self.committed = state

    def answer(self) -> InstanceState:
        with self._lock:
            return self.committed


def test_reads_racing_ordered_events_never_undo_the_newest_event(served_aws: AwsResources) -> None:
    """Twelve threads, each a container: one delivers the webhooks in order, the others read the
    provider and write what it said. Whatever the interleaving, the last event's state stands."""
    key = saved()
    provider = Provider()
    table_name = get_settings().table_name
    rounds, readers = 40, 11

    def repository() -> ConnectionStateRepository:
        return ConnectionStateRepository(
            boto3.session.Session().resource("dynamodb", region_name=REGION).Table(table_name)
        )

    def events(states: ConnectionStateRepository) -> Any:
        def run() -> InstanceState:
            state: InstanceState = "DISCONNECTED"
            for seq in range(1, rounds + 1):
                state = "CONNECTED" if seq % 2 else "DISCONNECTED"
                provider.commit(state)  # the session changes, then its webhook is delivered
                states.apply_event(key, state, seq, datetime.now(UTC))
            return state

        return run

    def reads(states: ConnectionStateRepository, seed: int) -> Any:
        jitter = random.Random(seed)

        def run() -> int:
            written = 0
            for _ in range(rounds):
                before = states.stored(key) or StoredState()
                answer = provider.answer()  # the provider answers now, possibly before a later event
                threading.Event().wait(jitter.random() / 500)
                written += states.apply_read(key, answer, before, datetime.now(UTC)).written
            return written

        return run

    tasks = [events(repository())] + [reads(repository(), seed) for seed in range(readers)]
    last, *written = at_once(tasks)

    assert not [result for result in [last, *written] if isinstance(result, Exception)]
    stored = CatalogRepository(bootstrap.table()).find_instance(key)
    assert stored is not None
    assert (stored.state, stored.state_seq) == (last, rounds)

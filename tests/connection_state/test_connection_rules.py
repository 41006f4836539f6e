"""The connection state's rules with in-memory fakes: ordered events by `seq`, status reads by the
revision they started from, events without an order confirmed by a read, cloud numbers connected
by nature."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from switchboard.catalog.domain import Instance, InstanceState
from switchboard.catalog.events import ProviderEvent
from switchboard.connection_state.service import ConnectionStateService
from switchboard.core.errors import ProviderUnavailable
from switchboard.providers.base import InstanceStatus, NumberStanding, ProviderTarget
from switchboard.providers.kinds import ProviderKind
from tools.support.builders import instance, provider_event
from tools.support.fakes import FakeConnectionStates, FakePublisher

INSTANCE = instance("acme-main")


class StatusProvider:
    """A provider whose status read answers `connected` (or raises `failure`); `during_read` runs
    while the provider is answering, as a webhook committed at that moment would."""

    def __init__(self, connected: bool = True, *, number: NumberStanding | None = None) -> None:
        self.connected = connected
        self.number = number
        self.failure: Exception | None = None
        self.during_read: Callable[[], object] | None = None
        self.reads = 0

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        self.reads += 1
        if self.during_read is not None:
            self.during_read()
        if self.failure is not None:
            raise self.failure
        return InstanceStatus(connected=self.connected, number=self.number)


@dataclass
class KindTargets:
    provider: StatusProvider
    kind: ProviderKind = "wuzapi"

    def target_for(self, target: Instance) -> tuple[Any, ProviderTarget]:
        return self.provider, ProviderTarget(
            kind=self.kind, base_url="http://127.0.0.1:1", provider_instance_id=target.provider_instance_id
        )


@dataclass
class HeardHealth:
    connections: list[tuple[bool, str | None]] = field(default_factory=list)
    standings: list[tuple[str | None, str | None]] = field(default_factory=list)

    def connection(self, instance: Instance, *, connected: bool, reason: str | None) -> None:
        self.connections.append((connected, reason))

    def standing(self, instance: Instance, status: str | None, quality_rating: str | None) -> None:
        self.standings.append((status, quality_rating))


@dataclass
class World:
    provider: StatusProvider
    states: FakeConnectionStates
    publisher: FakePublisher
    health: HeardHealth
    drained: list[str]
    service: ConnectionStateService

    def stored(self) -> Instance:
        """The instance as a fresh read finds it (what the reconciler and the catalog pass in)."""
        return INSTANCE.model_copy(update={"state": self.states.state, "state_rev": self.states.rev})

    def published_states(self) -> list[str]:
        return [detail["state"] for _, detail in self.publisher.events]


def world(
    *, connected: bool = True, stored: InstanceState = "DISCONNECTED", kind: ProviderKind = "wuzapi", **provider: Any
) -> World:
    status = StatusProvider(connected, **provider)
    states = FakeConnectionStates(stored)
    publisher, health = FakePublisher(), HeardHealth()
    drained: list[str] = []
    service = ConnectionStateService(
        states, KindTargets(status, kind), publisher, health=lambda: health, drain=drained.append
    )
    return World(status, states, publisher, health, drained, service)


def ordered(seq: int, connected: bool, **data: Any) -> ProviderEvent:
    return provider_event(INSTANCE, "connection", {"connected": connected, **data}, seq=seq, event_id=f"e-{seq}")


def unordered(connected: bool, **data: Any) -> ProviderEvent:
    return provider_event(INSTANCE, "connection", {"connected": connected, **data}, event_id="plain")


# --- ordered events --------------------------------------------------------------------------


def test_given_events_out_of_order_then_the_newest_state_stays_and_a_stale_connected_event_drains_nothing() -> None:
    w = world()

    w.service.on_event(ordered(3, connected=False))
    w.service.on_event(ordered(1, connected=True))
    w.service.on_event(ordered(2, connected=True))

    assert (w.states.state, w.states.seq, w.drained, w.provider.reads) == ("DISCONNECTED", 3, [], 0)


def test_given_a_connected_event_then_the_outbox_drains_and_a_redelivery_drains_again() -> None:
    w = world()

    w.service.on_event(ordered(4, connected=True))
    w.service.on_event(ordered(4, connected=True))

    assert (w.states.state, w.drained) == ("CONNECTED", ["acme:acme-main", "acme:acme-main"])


def test_only_a_write_that_moves_the_state_is_published() -> None:
    w = world()

    w.service.on_event(ordered(1, connected=True))
    w.service.on_event(ordered(1, connected=True))  # redelivery
    w.service.on_event(ordered(2, connected=True))  # newer, same state
    w.service.on_event(ordered(0, connected=False))  # older
    w.service.on_event(ordered(3, connected=False))

    assert w.published_states() == ["CONNECTED", "DISCONNECTED"]
    assert w.publisher.events[0][1] | {"at": "t"} == {
        "tenant": INSTANCE.tenant,
        "instance": INSTANCE.name,
        "numberId": INSTANCE.number_id,
        "state": "CONNECTED",
        "at": "t",
    }


def test_an_ordered_logout_reaches_the_ban_watch_with_its_reason() -> None:
    w = world()

    w.service.on_event(ordered(5, connected=False, reason="logged_out:401"))

    assert w.health.connections == [(False, "logged_out:401")]


# --- status reads ----------------------------------------------------------------------------


def test_a_paired_session_read_from_its_provider_becomes_connected_and_is_announced() -> None:
    w = world(connected=True)

    check, status = w.service.check(w.stored())

    assert (check.state, check.changed, w.states.state) == ("CONNECTED", True, "CONNECTED")
    assert status is not None and status.connected
    assert w.published_states() == ["CONNECTED"]
    assert w.health.connections == [(True, None)]  # a logged-out pause lifts


def test_a_read_that_finds_the_stored_state_writes_and_announces_nothing() -> None:
    w = world(connected=True, stored="CONNECTED")

    check, _ = w.service.check(w.stored())

    assert (check.changed, w.states.reads, w.publisher.events, w.health.connections) == (False, [], [], [])


def test_a_read_that_started_before_a_webhook_committed_never_undoes_it() -> None:
    """The number connected (the read's answer), then logged out (the webhook, committed while the
    provider was answering): the answer may predate the event, so it is dropped."""
    w = world(connected=True)
    w.provider.during_read = lambda: w.states.apply_event(INSTANCE.key, "DISCONNECTED", 10, INSTANCE.created_at)

    check, _ = w.service.check(w.stored())

    assert (w.states.state, w.states.seq, w.states.reads) == ("DISCONNECTED", 10, [])
    assert (check.changed, w.publisher.events) == (False, [])


def test_a_read_after_the_webhook_committed_applies_the_providers_newer_answer() -> None:
    w = world(connected=False, stored="CONNECTED")
    w.states.apply_event(INSTANCE.key, "CONNECTED", 10, INSTANCE.created_at)

    check, _ = w.service.check(w.stored())

    assert (check.state, check.changed, w.states.state, w.states.seq) == ("DISCONNECTED", True, "DISCONNECTED", 10)
    # The read keeps the event's seq: an older ordered event still cannot come back after it.
    w.service.on_event(ordered(9, connected=True))
    assert w.states.state == "DISCONNECTED"


def test_an_unreadable_provider_raises_and_leaves_the_state() -> None:
    w = world(stored="CONNECTED")
    w.provider.failure = ProviderUnavailable("wuzapi GET /session/status: could not connect")

    with pytest.raises(ProviderUnavailable):
        w.service.check(w.stored())

    assert (w.states.state, w.states.reads, w.publisher.events) == ("CONNECTED", [], [])


def test_after_a_save_a_provider_that_cannot_answer_leaves_the_instance_as_saved() -> None:
    w = world()
    w.provider.failure = ProviderUnavailable("evolution GET /instance/connectionState/{instance}: could not connect")

    saved = w.service.after_save(w.stored())

    assert (saved.state, w.states.state) == ("DISCONNECTED", "DISCONNECTED")


def test_after_a_save_the_instance_answered_is_the_one_the_provider_reported() -> None:
    w = world(connected=True)

    saved = w.service.after_save(w.stored())

    assert (saved.state, saved.state_rev, saved.state_changed_at is not None) == ("CONNECTED", 1, True)


# --- events without an order -----------------------------------------------------------------


def test_a_replayed_logout_after_the_number_reconnected_changes_nothing() -> None:
    w = world(connected=True, stored="CONNECTED")

    w.service.on_event(unordered(False, reason="logged_out:401"))

    assert (w.states.state, w.states.reads, w.publisher.events) == ("CONNECTED", [], [])
    assert w.health.connections == [(True, None)]  # no logout pause; the connection is what it hears


def test_a_logout_the_provider_confirms_disconnects_and_pauses_with_its_reason() -> None:
    w = world(connected=False, stored="CONNECTED")

    w.service.on_event(unordered(False, reason="logged_out:401"))

    assert (w.states.state, w.published_states()) == ("DISCONNECTED", ["DISCONNECTED"])
    assert w.health.connections == [(False, "logged_out:401")]


def test_a_replayed_connected_event_of_a_logged_out_number_leaves_it_disconnected() -> None:
    w = world(connected=False, stored="DISCONNECTED")

    w.service.on_event(unordered(True))

    assert (w.states.state, w.drained, w.publisher.events) == ("DISCONNECTED", [], [])


def test_a_confirmed_connected_event_connects_and_drains_the_outbox() -> None:
    w = world(connected=True)

    w.service.on_event(unordered(True))

    assert (w.states.state, w.drained) == ("CONNECTED", ["acme:acme-main"])


def test_an_event_that_cannot_be_confirmed_is_not_applied_and_fails_so_it_is_retried() -> None:
    w = world(connected=False, stored="CONNECTED")
    w.provider.failure = ProviderUnavailable("wuzapi GET /session/status: could not connect")

    with pytest.raises(ProviderUnavailable):
        w.service.on_event(unordered(False, reason="logged_out:401"))

    assert (w.states.state, w.health.connections) == ("CONNECTED", [])


# --- cloud numbers ---------------------------------------------------------------------------


def test_a_cloud_number_is_connected_and_its_standing_goes_to_the_ban_watch() -> None:
    w = world(kind="meta", number=NumberStanding(status="RESTRICTED", quality_rating="RED"))

    check, _ = w.service.check(w.stored())

    assert (check.state, w.states.state) == ("CONNECTED", "CONNECTED")
    assert w.health.standings == [("RESTRICTED", "RED")]


def test_a_cloud_number_whose_graph_read_fails_is_still_connected() -> None:
    w = world(kind="meta")
    w.provider.failure = ProviderUnavailable("meta GET /{version}/{phone-number-id}: provider unavailable (500)")

    check, status = w.service.check(w.stored())

    assert (check.state, check.status_read, status, w.health.standings) == ("CONNECTED", False, None, [])

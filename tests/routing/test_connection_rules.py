"""The `connection` effect: state guarded by seq, and the outbox drained only when connected now."""

from __future__ import annotations

from switchboard.routing.service import ConnectionStateHandler
from switchboard.webhooks.events import ProviderEvent
from tests.support.builders import instance, provider_event
from tests.support.fakes import FakeInstanceStates

INSTANCE = instance("acme-main")


def event(seq: int, connected: bool) -> ProviderEvent:
    return provider_event(INSTANCE, "connection", {"connected": connected}, seq=seq, event_id=f"e-{seq}")


def test_given_events_out_of_order_then_the_newest_state_stays_and_a_stale_connected_event_drains_nothing() -> None:
    states, drained = FakeInstanceStates(), []
    handler = ConnectionStateHandler(states, drained.append)

    handler(event(3, connected=False))
    handler(event(1, connected=True))
    handler(event(2, connected=True))

    assert (states.state, states.seq, drained) == ("DISCONNECTED", 3, [])


def test_given_a_connected_event_then_the_outbox_drains_and_a_redelivery_drains_again() -> None:
    states, drained = FakeInstanceStates(), []
    handler = ConnectionStateHandler(states, drained.append)

    handler(event(4, connected=True))
    handler(event(4, connected=True))

    assert (states.state, drained) == ("CONNECTED", ["acme:acme-main", "acme:acme-main"])

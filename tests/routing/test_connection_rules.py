"""The `connection` effect: state guarded by seq, and the outbox drained only when connected now."""

from __future__ import annotations

from switchboard.routing.service import ConnectionStateHandler
from switchboard.webhooks.events import ProviderEvent
from tests.support.builders import instance, provider_event
from tests.support.fakes import FakeInstanceStates, FakePublisher

INSTANCE = instance("acme-main")


def event(seq: int, connected: bool) -> ProviderEvent:
    return provider_event(INSTANCE, "connection", {"connected": connected}, seq=seq, event_id=f"e-{seq}")


def test_given_events_out_of_order_then_the_newest_state_stays_and_a_stale_connected_event_drains_nothing() -> None:
    states, drained = FakeInstanceStates(), []
    handler = ConnectionStateHandler(states, drained.append, FakePublisher())

    handler(event(3, connected=False))
    handler(event(1, connected=True))
    handler(event(2, connected=True))

    assert (states.state, states.seq, drained) == ("DISCONNECTED", 3, [])


def test_given_a_connected_event_then_the_outbox_drains_and_a_redelivery_drains_again() -> None:
    states, drained = FakeInstanceStates(), []
    handler = ConnectionStateHandler(states, drained.append, FakePublisher())

    handler(event(4, connected=True))
    handler(event(4, connected=True))

    assert (states.state, drained) == ("CONNECTED", ["acme:acme-main", "acme:acme-main"])


def test_only_a_write_that_moves_the_state_is_published() -> None:
    states, publisher = FakeInstanceStates(), FakePublisher()
    handler = ConnectionStateHandler(states, lambda key: None, publisher)

    handler(event(1, connected=True))
    handler(event(1, connected=True))  # redelivery
    handler(event(2, connected=True))  # newer, same state
    handler(event(0, connected=False))  # older
    handler(event(3, connected=False))

    assert [(kind, detail["state"]) for kind, detail in publisher.events] == [
        ("instance.connection.changed", "CONNECTED"),
        ("instance.connection.changed", "DISCONNECTED"),
    ]
    assert publisher.events[0][1] | {"at": "t"} == {
        "tenant": INSTANCE.tenant,
        "instance": INSTANCE.name,
        "numberId": INSTANCE.number_id,
        "state": "CONNECTED",
        "at": "t",
    }

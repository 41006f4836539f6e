"""The `connection` effect: state guarded by seq, and the outbox drained only when connected now."""

from __future__ import annotations

from datetime import UTC, datetime

from switchboard.catalog.domain import Instance, InstanceState
from switchboard.routing.service import ConnectionStateHandler
from switchboard.webhooks.events import ProviderEvent

INSTANCE = Instance(
    tenant="acme", name="acme-main", provider_id="prv", provider_instance_id="i-1", number_id="num", token_hint="…"
)


class States:
    def __init__(self) -> None:
        self.state: InstanceState = "DISCONNECTED"
        self.seq: int | None = None

    def apply_connection(self, name: str, state: InstanceState, seq: int | None, at: datetime) -> bool:
        if seq is None or (self.seq is not None and seq <= self.seq):
            return False
        self.state, self.seq = state, seq
        return True

    def instance_state(self, name: str) -> tuple[InstanceState, int | None] | None:
        return self.state, self.seq


def event(seq: int, connected: bool) -> ProviderEvent:
    return ProviderEvent(
        provider_id="prv",
        instance=INSTANCE,
        name="connection",
        event_id=f"e-{seq}",
        seq=seq,
        data={"connected": connected},
        received_at=datetime(2026, 11, 30, tzinfo=UTC),
    )


def test_given_events_out_of_order_then_the_newest_state_stays_and_a_stale_connected_event_drains_nothing() -> None:
    states, drained = States(), []
    handler = ConnectionStateHandler(states, drained.append)

    handler(event(3, connected=False))
    handler(event(1, connected=True))
    handler(event(2, connected=True))

    assert (states.state, states.seq, drained) == ("DISCONNECTED", 3, [])


def test_given_a_connected_event_then_the_outbox_drains_and_a_redelivery_drains_again() -> None:
    states, drained = States(), []
    handler = ConnectionStateHandler(states, drained.append)

    handler(event(4, connected=True))
    handler(event(4, connected=True))

    assert (states.state, drained) == ("CONNECTED", ["acme-main", "acme-main"])

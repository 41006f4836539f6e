"""How a message picks its source number (`plan_numbers` plus the worker), with fakes."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from switchboard.core.clock import utcnow
from switchboard.pool.domain import Affinity, NumberRoutes, Route, SendingConfig, plan_numbers
from tests.support.sending import SendWorld, number
from tools.support.fakes import FakeTickets


def pool_config(*numbers: NumberRoutes, default: NumberRoutes | None = None, mode: str = "pool") -> SendingConfig:
    return SendingConfig(tenant="acme", api_key_id="key_1", mode=mode, default=default, pool=numbers)


def affinity_to(target: NumberRoutes, *, at_offset: timedelta = timedelta(0)) -> Affinity:
    return Affinity(number_id=target.number_id, number=target.digits, sent_at=utcnow() + at_offset)


def first_connected(config: SendingConfig, affinity: Affinity | None, tickets: FakeTickets) -> str | None:
    plan = plan_numbers(config, affinity, tickets)
    return next((n.digits for n in plan.numbers if n.connected), None)


def test_default_mode_uses_the_default_number_and_ignores_the_pool() -> None:
    default, a, b = number("5511999990009"), number("5511999990001"), number("5511999990002")
    tickets = FakeTickets()

    plan = plan_numbers(pool_config(a, b, default=default, mode="default"), None, tickets)

    assert [n.digits for n in plan.numbers] == ["5511999990009"]
    assert plan.resolved["selectionMode"] == "default"
    assert plan.resolved["resolvedNumber"] == "5511999990009"
    assert tickets.value == 0  # no round-robin ticket taken


def test_pool_round_robin_alternates_numbers_in_sequence() -> None:
    a, b, c = number("5511999990001"), number("5511999990002"), number("5511999990003")
    config, tickets = pool_config(a, b, c), FakeTickets()

    chosen = [first_connected(config, None, tickets) for _ in range(6)]

    assert chosen == ["5511999990001", "5511999990002", "5511999990003"] * 2


def test_affinity_sends_from_the_number_that_already_reached_the_recipient() -> None:
    a, b = number("5511999990001"), number("5511999990002")
    tickets = FakeTickets()

    plan = plan_numbers(pool_config(a, b), affinity_to(b), tickets)

    assert plan.numbers[0].digits == "5511999990002"
    assert plan.resolved == {
        "selectionMode": "pool",
        "affinityNumber": "5511999990002",
        "resolvedNumber": "5511999990002",
        "roundRobinIndex": None,
        "poolSize": 2,
    }
    assert tickets.value == 0  # an affinity hit does not move the round-robin


def test_affinity_number_disconnected_falls_back_to_the_next_pool_number() -> None:
    a, b = number("5511999990001", connected=False), number("5511999990002")
    tickets = FakeTickets()

    plan = plan_numbers(pool_config(a, b), affinity_to(a), tickets)

    assert first_connected(pool_config(a, b), affinity_to(a), FakeTickets()) == "5511999990002"
    assert plan.resolved["affinityNumber"] == "5511999990001"
    assert plan.resolved["resolvedNumber"] == "5511999990002"
    assert plan.resolved["roundRobinIndex"] == 0


def test_affinity_returns_to_its_number_once_it_reconnects() -> None:
    down, up = number("5511999990001", connected=False), number("5511999990001")
    b = number("5511999990002")
    affinity = affinity_to(up)  # not rewritten while another number served the recipient

    assert first_connected(pool_config(down, b), affinity, FakeTickets()) == "5511999990002"
    assert first_connected(pool_config(up, b), affinity, FakeTickets()) == "5511999990001"


def test_affinity_older_than_the_numbers_return_to_the_pool_is_dropped() -> None:
    a = number("5511999990001", added_ago=timedelta(minutes=1))  # removed, then added again a minute ago
    b = number("5511999990002")
    stale = affinity_to(a, at_offset=-timedelta(hours=1))
    tickets = FakeTickets()
    tickets.value = 1  # the next ticket points at b

    plan = plan_numbers(pool_config(a, b), stale, tickets)

    assert plan.numbers[0].digits == "5511999990002"
    assert plan.resolved["roundRobinIndex"] == 1


def test_affinity_to_a_number_outside_the_pool_is_ignored() -> None:
    a, outsider = number("5511999990001"), number("5511999990077")

    plan = plan_numbers(pool_config(a), affinity_to(outsider), FakeTickets())

    assert plan.numbers[0].digits == "5511999990001"
    assert plan.resolved["roundRobinIndex"] == 0


def test_empty_pool_falls_back_to_the_default_number() -> None:
    default = number("5511999990009")

    plan = plan_numbers(pool_config(default=default), None, FakeTickets())

    assert [n.digits for n in plan.numbers] == ["5511999990009"]
    assert plan.resolved["selectionMode"] == "default"
    assert plan.resolved["poolSize"] == 0


def test_all_numbers_disconnected_fails_with_no_number_available() -> None:
    world = SendWorld(pool_config(number("5511999990001", connected=False), number("5511999990002", connected=False)))
    message = world.queue_message("5511988880001")

    outcome = world.process(message)

    assert outcome.status == "FAILED"
    assert outcome.failure_reason == "no_number_available"
    assert world.provider.sent == []
    stages = [(event.stage, event.data.get("reason")) for event in world.messages.items[message.id].trace]
    assert ("pool.number.skipped", "disconnected") in stages
    assert stages[-1] == ("message.failed", "no_number_available")


def test_round_robin_index_wraps_around_the_pool_size() -> None:
    numbers = [number(f"55119999900{i:02d}") for i in range(1, 4)]
    config, tickets = pool_config(*numbers), FakeTickets()

    indexes = [plan_numbers(config, None, tickets).resolved["roundRobinIndex"] for _ in range(7)]

    assert indexes == [0, 1, 2, 0, 1, 2, 0]


def test_round_robin_skips_a_disconnected_number_without_losing_the_spread() -> None:
    a, b, c = number("5511999990001"), number("5511999990002", connected=False), number("5511999990003")
    config, tickets = pool_config(a, b, c), FakeTickets()

    chosen = Counter(first_connected(config, None, tickets) for _ in range(300))

    assert chosen == {"5511999990001": 100, "5511999990003": 200}  # b's turns go to the next one, c


def test_route_order_is_part_of_the_number() -> None:
    routes = (
        Route(provider_id="p1", kind="wuzapi", base_url="http://127.0.0.1:1", provider_instance_id="x", instance="x"),
    )
    assert NumberRoutes(number_id="n", digits="5511999990001", routes=routes).connected
    assert not NumberRoutes(number_id="n", digits="5511999990001").connected

"""The send pipeline's plan step, with fakes: the key's configuration, whether a claimed message
may be sent at all, and the numbers in the order to try them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from switchboard.core.clock import utcnow
from switchboard.core.errors import NotFound
from switchboard.messages.domain import EXPIRED, Claim, PendingRoute, SendJob
from switchboard.messages.sending.plan import AMBIGUOUS_OUTCOME, API_KEY_REVOKED, Plan, Planner, Unsendable
from switchboard.pool.domain import Affinity, SendingConfig
from tests.support.sending import claimed, number
from tools.support.fakes import FakeMessages, FakeTickets

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
A, B, C = number("5511999990001"), number("5511999990002"), number("5511999990003")
POOL = SendingConfig(tenant="acme", api_key_id="key_1", mode="pool", pool=(A, B, C))


class Configs:
    def __init__(self, config: SendingConfig | None) -> None:
        self.config = config

    def get(self, tenant: str, api_key_id: str) -> SendingConfig:
        if self.config is None:
            raise NotFound("api key not found")
        return self.config


class World:
    def __init__(self, config: SendingConfig | None = POOL) -> None:
        self.messages = FakeMessages()
        self.tickets = FakeTickets()
        self.planner = Planner(self.messages, configs=Configs(config), tickets=self.tickets, clock=lambda: T0)

    def plan(self, *, marked: bool = False, **fields: Any) -> Plan | Unsendable:
        """The plan of a message claimed with `fields` (`marked`: its claim recorded the route in flight)."""
        message = claimed(self.messages, **fields)
        job = SendJob(message_id=message.id, tenant=message.tenant, api_key_id=message.api_key_id, to=message.to)
        draft = self.planner.draft(job)
        if isinstance(draft, Unsendable):
            return draft
        return self.planner.complete(draft, Claim(message=message, marked=marked))


def in_flight(number_id: str, kind: str) -> PendingRoute:
    return PendingRoute(number_id=number_id, instance=f"inst-{number_id[-4:]}", provider_id="prv_1", kind=kind)


def test_a_revoked_key_is_not_planned_and_takes_no_ticket() -> None:
    world = World(config=None)

    plan = world.plan()

    assert plan == Unsendable(None, API_KEY_REVOKED, [])
    assert world.tickets.value == 0


def test_a_new_recipient_takes_a_ticket_and_the_pool_turns_from_it() -> None:
    world = World()

    first, second = world.plan(), world.plan(to="5511988880002")

    assert isinstance(first, Plan) and isinstance(second, Plan)
    assert world.tickets.value == 2
    assert first.numbers == [A, B, C]
    assert second.numbers == [B, C, A]
    assert [event.stage for event in first.events] == ["pool.number.resolved"]
    assert first.affinity is None


def test_an_attached_recipient_starts_at_its_number_without_a_ticket() -> None:
    world = World()
    world.messages.affinities[("acme", "5511988880001")] = Affinity(
        number_id=C.number_id, number=C.digits, sent_at=utcnow()
    )

    plan = world.plan()

    assert isinstance(plan, Plan)
    assert world.tickets.value == 0
    assert [n.number_id for n in plan.numbers] == [C.number_id, A.number_id, B.number_id]
    assert plan.selection.attached == C


def test_a_default_key_neither_reads_affinity_nor_takes_a_ticket() -> None:
    world = World(SendingConfig(tenant="acme", api_key_id="key_1", mode="default", default=A))
    world.messages.affinities[("acme", "5511988880001")] = Affinity(
        number_id=C.number_id, number=C.digits, sent_at=utcnow()
    )

    plan = world.plan()

    assert isinstance(plan, Plan)
    assert (plan.numbers, plan.affinity, world.tickets.value) == ([A], None, 0)


def test_a_route_left_in_flight_where_a_resend_may_copy_ends_ambiguous_unsent() -> None:
    plan = World().plan(in_flight=in_flight(C.number_id, "evolution"))

    assert isinstance(plan, Unsendable)
    assert (plan.config, plan.reason) == (POOL, AMBIGUOUS_OUTCOME)
    assert [(event.stage, event.data["numberId"]) for event in plan.events] == [
        ("send.attempt.interrupted", C.number_id)
    ]


def test_a_route_left_in_flight_where_a_resend_is_safe_becomes_pending_and_its_number_goes_first() -> None:
    route = in_flight(C.number_id, "wuzapi")

    plan = World().plan(in_flight=route)

    assert isinstance(plan, Plan)
    assert plan.message.pending == route
    assert plan.numbers[0] == C
    assert [event.stage for event in plan.events] == ["pool.number.resolved", "send.retry.pending_route"]


def test_a_key_accepting_copies_resends_where_the_kind_may_copy() -> None:
    config = POOL.model_copy(update={"at_least_once": True})

    plan = World(config).plan(in_flight=in_flight(C.number_id, "evolution"))

    assert isinstance(plan, Plan)
    assert plan.message.pending is not None


def test_a_message_past_its_validity_is_not_tried_unless_a_timed_out_send_of_it_may_have_left() -> None:
    expired = World().plan(expires_at=T0)
    pending = World().plan(expires_at=T0 - timedelta(seconds=1), pending=in_flight(A.number_id, "wuzapi"))
    valid = World().plan(expires_at=T0 + timedelta(seconds=1))

    assert expired == Unsendable(POOL, EXPIRED, [])
    assert isinstance(pending, Plan)
    assert isinstance(valid, Plan)


def test_the_configuration_after_an_unexpected_error_is_none_when_it_cannot_be_read() -> None:
    class Broken:
        def get(self, tenant: str, api_key_id: str) -> SendingConfig:
            raise RuntimeError("table unreachable")

    job = SendJob(message_id="msg_1", tenant="acme", api_key_id="key_1", to="5511988880001")

    assert Planner(FakeMessages(), configs=Broken(), tickets=FakeTickets()).config_if_readable(job) is None
    assert World().planner.config_if_readable(job) == POOL


class Pinned:
    """The configuration of a message pinned to one instance: `B` alone (its one route), or gone."""

    def __init__(self, number: Any | None) -> None:
        self.number = number
        self.asked: list[tuple[str, str, str]] = []

    def pinned(self, tenant: str, api_key_id: str, instance_name: str) -> SendingConfig:
        self.asked.append((tenant, api_key_id, instance_name))
        if self.number is None:
            raise NotFound("instance not found")
        return SendingConfig(tenant=tenant, api_key_id=api_key_id, mode="default", default=self.number)


def test_a_pinned_message_is_planned_through_its_instances_number_alone_and_tells_no_client_webhook() -> None:
    pinned = Pinned(B)
    messages = FakeMessages()
    planner = Planner(messages, configs=Configs(POOL), tickets=FakeTickets(), pinned=pinned, clock=lambda: T0)
    message = claimed(messages)
    job = SendJob(message_id=message.id, tenant="acme", api_key_id="user:ana", to=message.to, instance="shop-b")

    draft = planner.draft(job)

    assert not isinstance(draft, Unsendable)
    assert pinned.asked == [("acme", "user:ana", "shop-b")]
    assert draft.selection.numbers == [B]
    assert draft.events[0].data == {"selectionMode": "instance", "instance": "shop-b", "resolvedNumber": B.digits}
    plan = planner.complete(draft, Claim(message=message, marked=False))
    assert isinstance(plan, Plan) and plan.numbers == [B] and plan.config.webhook_url is None
    assert planner.config_if_readable(job) is None  # not the key's, whatever key sent it


def test_a_pinned_message_whose_instance_is_gone_fails_in_words() -> None:
    planner = Planner(FakeMessages(), configs=Configs(POOL), tickets=FakeTickets(), pinned=Pinned(None))
    job = SendJob(message_id="msg_1", tenant="acme", api_key_id="key_1", to="5511988880001", instance="gone")

    assert planner.draft(job) == Unsendable(None, "instance_not_found", [])

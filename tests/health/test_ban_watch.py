"""The ban watch and health-aware routing in the send worker, over the real health repository on
moto: a number WhatsApp throttles is paused for new contacts, keeps its attached recipients,
and comes back when its pause expires; velocity and delivery put it in warning."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.catalog.domain import Instance
from switchboard.core.errors import ProviderRejected, ProviderThrottled
from switchboard.health.domain import (
    LOGGED_OUT,
    LOW_DELIVERY,
    TIMELOCK,
    VELOCITY_MINUTE,
    HealthChanged,
    HealthState,
    Thresholds,
)
from switchboard.health.dynamo import HealthRepository
from switchboard.health.service import HEALTH_CHANGED, BanWatch
from switchboard.messages.domain import MessageStatus
from switchboard.pool.domain import Affinity, NumberRoutes, SendingConfig
from tests.support.sending import SendWorld
from tools.support import builders
from tools.support.aws import AwsResources
from tools.support.fakes import FakeClock

T0 = datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)
ATTACHED = "5511988880001"
NEW = ("5511988880002", "5511988880003", "5511988880004")


def instance(name: str) -> Instance:
    return builders.connected(name, events_webhook_url="https://hooks.example.com/events")


def number_of(source: Instance) -> NumberRoutes:
    routes = (builders.route_through(source),)
    return NumberRoutes(number_id=source.number_id, digits=f"55119999{len(source.name):05d}", routes=routes)


class Published:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.webhooks: list[tuple[str, str, dict[str, Any]]] = []

    def publish(self, detail_type: str, detail: dict[str, Any]) -> bool:
        self.events.append((detail_type, detail))
        return True

    def instance_event(self, source: Instance, event: str, data: dict[str, Any]) -> None:
        self.webhooks.append((source.name, event, data))


class Requests:
    """Every DynamoDB request of the container's client the item models send through: operation, body."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []
        bootstrap.current().client("dynamodb").meta.events.register("before-call.dynamodb", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.made.append((model.name, json.loads(params.get("body") or b"{}")))

    def updates(self) -> list[dict[str, Any]]:
        return [body for name, body in self.made if name == "UpdateItem"]

    def clear(self) -> None:
        self.made.clear()


class WatchedWorld(SendWorld):
    def __init__(
        self, aws: AwsResources, *instances: Instance, limits: Thresholds | None = None, buffered_sends: int = 1
    ) -> None:
        self.clock = FakeClock(T0.timestamp())
        self.published = Published()
        self.store = HealthRepository(bootstrap.table())
        self.watch = BanWatch(
            self.store,
            limits=limits or Thresholds(),
            publisher=self.published,
            events_webhook=self.published,
            cache_seconds=0,
            clock=lambda: datetime.fromtimestamp(self.clock.now, UTC),
            buffered_sends=buffered_sends,
        )
        self.instances = {source.name: source for source in instances}
        config = SendingConfig(
            tenant="acme", api_key_id="key_1", mode="pool", pool=tuple(number_of(source) for source in instances)
        )
        super().__init__(config, health=self.watch)

    def attach(self, recipient: str, name: str) -> None:
        number = number_of(self.instances[name])
        self.messages.affinities[("acme", recipient)] = Affinity(
            number_id=number.number_id, number=number.digits, sent_at=T0 - timedelta(hours=1)
        )

    def send(self, to: str) -> tuple[MessageStatus | str, str | None, list[dict[str, Any]]]:
        message = self.queue_message(to, f"hello {to}")
        outcome = self.process(message)
        skipped = [event.data for event in self.stored(message).trace if event.stage == "pool.instance.skipped"]
        return outcome.status, outcome.instance, skipped

    def wrote(self, recipient: str, name: str, ago: timedelta) -> None:
        """`recipient` wrote to `name`'s number `ago` (what an incoming message leaves: `heard`)."""
        heard = {self.instances[name].number_id: datetime.fromtimestamp(self.clock.now, UTC) - ago}
        self.messages.affinities[("acme", recipient)] = Affinity(heard=heard)

    def later(self, delta: timedelta) -> None:
        self.clock.now += delta.total_seconds()

    def state(self, name: str) -> HealthState:
        return self.store.get(self.instances[name].key).state_at(datetime.fromtimestamp(self.clock.now, UTC))


def test_given_a_463_then_the_number_is_paused_for_new_contacts_and_its_attached_recipients_keep_it(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"), instance("b"))
    world.attach(ATTACHED, "a")
    world.provider.failures["a"] = [ProviderThrottled("timelock", provider_code="463")]

    # The round-robin ticket starts new recipients on `a`: WhatsApp refuses, `b` sends.
    status, sent_by, skipped = world.send(NEW[0])

    assert (status, sent_by) == (MessageStatus.SENT, "b")
    assert [(data["instance"], data["reason"], data["providerCode"]) for data in skipped] == [
        ("a", "provider_throttled", "463")
    ]
    assert world.state("a") is HealthState.PAUSED_FOR_NEW_CONTACTS
    health = world.store.get(world.instances["a"].key)
    assert health.reasons[TIMELOCK].until == T0 + timedelta(hours=6)
    assert health.failures == {"463": 1}

    # The next new recipient whose ticket lands on `a` skips it without asking the provider.
    world.tickets.value = 0
    status, sent_by, skipped = world.send(NEW[1])
    assert (status, sent_by) == (MessageStatus.SENT, "b")
    assert [(data["instance"], data["reason"], data["healthReasons"]) for data in skipped] == [
        ("a", "health_paused_for_new_contacts", [TIMELOCK])
    ]

    # A recipient attached to `a` is no new contact: `a` still sends to them.
    status, sent_by, skipped = world.send(ATTACHED)
    assert (status, sent_by, skipped) == (MessageStatus.SENT, "a", [])
    assert [sent.instance for sent in world.provider.sent] == ["b", "b", "a"]


@pytest.mark.parametrize(
    ("wrote_ago", "expected"),
    [
        (timedelta(hours=1), ("a", [])),
        (timedelta(hours=25), ("b", [("a", "health_paused_for_new_contacts")])),
    ],
)
def test_given_a_number_paused_for_new_contacts_then_a_recipient_who_wrote_to_it_within_a_day_is_still_served_by_it(
    aws: AwsResources, wrote_ago: timedelta, expected: tuple[str, list[tuple[str, str]]]
) -> None:
    world = WatchedWorld(aws, instance("a"), instance("b"))
    world.provider.failures["a"] = [ProviderThrottled("timelock", provider_code="463")]
    world.send(NEW[0])
    assert world.state("a") is HealthState.PAUSED_FOR_NEW_CONTACTS
    # They wrote to `a` and were never sent anything: no affinity, the round robin lands on `a`.
    world.wrote(NEW[1], "a", ago=wrote_ago)
    world.tickets.value = 0

    status, sent_by, skipped = world.send(NEW[1])

    assert (status, sent_by) == (MessageStatus.SENT, expected[0])
    assert [(data["instance"], data["reason"]) for data in skipped] == expected[1]


def test_given_the_pause_expires_then_the_number_takes_new_contacts_again_and_the_change_is_announced(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"), instance("b"), limits=Thresholds(timelock_pause_seconds=600))
    world.provider.failures["a"] = [ProviderThrottled("timelock", provider_code="463")]
    world.send(NEW[0])
    [(kind, detail)] = world.published.events
    assert kind == HEALTH_CHANGED
    assert (detail["instance"], detail["previousState"], detail["state"]) == ("a", "healthy", "paused_for_new_contacts")
    assert detail["pausedUntil"] == (T0 + timedelta(minutes=10)).isoformat()
    assert [(name, event) for name, event, _ in world.published.webhooks] == [("a", HEALTH_CHANGED)]

    world.later(timedelta(minutes=10, seconds=1))
    world.tickets.value = 0
    status, sent_by, skipped = world.send(NEW[1])

    assert (status, sent_by, skipped) == (MessageStatus.SENT, "a", [])
    assert world.state("a") is HealthState.HEALTHY
    assert [detail["state"] for _, detail in world.published.events] == ["paused_for_new_contacts", "healthy"]


def test_given_every_number_throttled_then_the_message_is_retried_later_not_failed(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"), instance("b"))
    world.provider.failures["a"] = [ProviderThrottled("limit", provider_code="130429")]
    world.provider.failures["b"] = [ProviderThrottled("timelock", provider_code="463")]
    message = world.queue_message(NEW[0], "hi")

    with pytest.raises(Exception, match="provider_throttled"):
        world.process(message)

    assert world.stored(message).status is MessageStatus.QUEUED
    assert world.stored(message).in_flight is None
    assert (world.state("a"), world.state("b")) == (HealthState.PAUSED_FOR_NEW_CONTACTS,) * 2


def test_given_a_logged_out_disconnection_then_the_number_is_paused_even_for_attached_recipients(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"), instance("b"))
    world.attach(ATTACHED, "a")
    world.watch.connection(world.instances["a"], connected=False, reason="logged_out:401")

    status, sent_by, skipped = world.send(ATTACHED)
    assert (status, sent_by) == (MessageStatus.SENT, "b")
    assert [(data["reason"], data["healthReasons"]) for data in skipped] == [("health_paused", [LOGGED_OUT])]

    world.watch.connection(world.instances["a"], connected=False, reason="disconnected")
    assert world.state("a") is HealthState.PAUSED
    world.watch.connection(world.instances["a"], connected=True, reason=None)
    assert world.state("a") is HealthState.HEALTHY
    assert world.send(ATTACHED)[:2] == (MessageStatus.SENT, "a")


def test_given_a_meta_ecosystem_refusal_then_the_number_is_in_warning_and_still_used(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"))
    world.provider.failures["a"] = [ProviderRejected("refused", provider_code="131049")]
    world.send(NEW[0])
    assert world.state("a") is HealthState.WARNING

    assert world.send(NEW[1])[:2] == (MessageStatus.SENT, "a")


def test_given_more_sends_in_a_minute_than_the_threshold_then_a_velocity_warning_until_the_next_minute_ends(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"), limits=Thresholds(max_sends_per_minute=2))
    for recipient in NEW:
        assert world.send(recipient)[0] is MessageStatus.SENT

    health = world.store.get(world.instances["a"].key)
    assert (health.minute_sends, health.hour_sends) == (3, 3)
    assert world.state("a") is HealthState.WARNING
    assert health.reasons[VELOCITY_MINUTE].until == datetime(2026, 11, 30, 12, 2, tzinfo=UTC)

    world.later(timedelta(minutes=2))
    world.send(ATTACHED)
    health = world.store.get(world.instances["a"].key)
    assert (health.minute_sends, health.hour_sends, world.state("a")) == (1, 4, HealthState.HEALTHY)


def test_given_a_window_of_sends_with_few_deliveries_then_a_delivery_warning_until_a_better_window(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"), limits=Thresholds(delivery_window=2, min_delivery_ratio=0.5))
    source = world.instances["a"]
    world.send(NEW[0])
    world.send(NEW[1])  # the window closes: 0 delivered of 2
    health = world.store.get(source.key)
    assert (health.delivery_ratio, world.state("a")) == (0, HealthState.WARNING)
    assert LOW_DELIVERY in health.reasons
    assert (health.window_sent, health.window_delivered) == (0, 0)

    world.send(NEW[2])
    world.watch.delivered(source)
    world.send(ATTACHED)  # 1 delivered of 2

    health = world.store.get(source.key)
    assert (health.delivery_ratio, world.state("a")) == (0.5, HealthState.HEALTHY)


def test_a_write_on_reasons_read_before_another_writer_is_refused(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"))
    key = world.instances["a"].key
    stale = world.store.get(key)
    world.store.save_reasons(stale, {}, HealthState.HEALTHY, T0)

    with pytest.raises(HealthChanged):
        world.store.save_reasons(stale, {}, HealthState.HEALTHY, T0)
    assert world.store.get(key).version == 1


def test_one_send_costs_one_health_request_except_at_a_minutes_turn(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"))
    requests = Requests()
    key = world.instances["a"].key
    world.store.count_send(key, T0)  # a new item: the minute and hour steps fail, the third writes
    requests.clear()
    world.store.count_send(key, T0 + timedelta(seconds=10))
    assert len(requests.made) == 1
    requests.clear()
    world.store.count_send(key, T0 + timedelta(minutes=1))  # the same minute's step fails first
    assert [name for name, _ in requests.made] == ["UpdateItem", "UpdateItem"]
    assert world.store.get(key).minute_sends == 1

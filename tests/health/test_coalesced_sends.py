"""The send worker's sends are counted per instance and batch: one UpdateItem for a batch, the
thresholds judged on the counts it answers, and a failed write losing that batch alone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from switchboard import bootstrap
from switchboard.core.settings import Settings
from switchboard.health.domain import VELOCITY_MINUTE, Health, HealthState, SampleEntry, Thresholds
from switchboard.messages.domain import MessageStatus
from tests.health.test_ban_watch import Requests, WatchedWorld, instance
from tools.support.aws import AwsResources


def recipients(count: int) -> list[str]:
    return [f"55119{n:08d}" for n in range(count)]


def health_updates(requests: Requests) -> list[dict[str, Any]]:
    return [body for body in requests.updates() if body["Key"]["pk"]["S"].startswith("HEALTH#")]


def test_a_batch_of_ten_sends_through_one_instance_is_one_write(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"), buffered_sends=25)
    key = world.instances["a"].key
    world.send("5511988889999")
    world.watch.flush()  # the item exists (a new one costs its minute's and hour's steps once)
    requests = Requests()
    for to in recipients(10):
        assert world.send(to)[0] is MessageStatus.SENT
    assert health_updates(requests) == []

    world.watch.flush()

    assert len(health_updates(requests)) == 1
    health = world.store.get(key)
    assert (health.minute_sends, health.hour_sends, health.window_sent, health.send_seq) == (11, 11, 11, 11)
    assert len(health.sample_recipients) == len(health.sample_texts) == 11
    requests.clear()
    world.watch.flush()  # nothing waiting: nothing written
    assert health_updates(requests) == []


def test_a_batch_past_the_threshold_trips_it_when_written(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"), limits=Thresholds(max_sends_per_minute=5), buffered_sends=25)
    for to in recipients(10):
        world.send(to)
    assert world.state("a") is HealthState.HEALTHY  # not written yet

    world.watch.flush()

    assert world.state("a") is HealthState.WARNING
    assert VELOCITY_MINUTE in world.store.get(world.instances["a"].key).reasons
    assert [detail["state"] for _, detail in world.published.events] == ["warning"]


def test_sends_past_the_buffer_are_written_without_waiting_for_the_flush(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"), buffered_sends=3)
    for to in recipients(4):
        world.send(to)

    assert world.store.get(world.instances["a"].key).minute_sends == 3
    world.watch.flush()
    assert world.store.get(world.instances["a"].key).minute_sends == 4


def test_a_failed_write_is_logged_and_loses_only_its_batch(aws: AwsResources, caplog: pytest.LogCaptureFixture) -> None:
    world = WatchedWorld(aws, instance("a"), buffered_sends=25)
    count_send = world.store.count_send
    failures = [RuntimeError("DynamoDB is away")]

    def failing_once(
        instance_key: str, now: datetime, samples: Any = (), *, sends: int = 1
    ) -> Health:  # the first write fails
        if failures:
            raise failures.pop()
        return count_send(instance_key, now, samples, sends=sends)

    world.store.count_send = failing_once  # type: ignore[method-assign]
    for to in recipients(4):
        world.send(to)

    world.watch.flush()

    assert "sends not counted by the ban watch" in caplog.text
    for to in recipients(2):
        world.send(to)
    world.watch.flush()
    assert world.store.get(world.instances["a"].key).minute_sends == 2


def test_a_batch_larger_than_the_sample_keeps_the_last_send_of_each_slot(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"))
    key = world.instances["a"].key
    samples: list[SampleEntry] = [(slot % 3, f"r{slot}", f"t{slot}") for slot in range(5)]

    health = world.store.count_send(key, world.watch.now, samples, sends=5)

    assert (health.sample_recipients, health.send_seq) == ({0: "r3", 1: "r4", 2: "r2"}, 5)


class Watch:
    def __init__(self) -> None:
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1


SETTINGS = Settings.model_validate(
    {"SEND_QUEUE_URL": "https://queue/send", "CLIENT_WEBHOOK_QUEUE_URL": "https://queue/client-webhooks"}
)


def test_the_send_worker_profile_flushes_the_ban_watch_it_built() -> None:
    watch = Watch()
    sending = bootstrap.send_worker(settings=SETTINGS, health_watch=watch)

    sending.flush()

    assert watch.flushes == 1


def test_the_send_worker_profile_builds_no_ban_watch_only_to_flush_it() -> None:
    components = bootstrap.Components(SETTINGS)
    sending = bootstrap.send_worker(settings=SETTINGS)

    sending.flush()

    assert components.built(bootstrap.health_watch) is None

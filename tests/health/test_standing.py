"""A Meta number's own standing (its phone number node's `status` and `quality_rating`) in the ban
watch: reasons that pause it while each read says so, lift when a read no longer does, and steer
the pool like any other pause."""

from __future__ import annotations

from datetime import timedelta

import pytest

from switchboard.health.domain import QUALITY_RED, HealthState, standing_reasons
from switchboard.health.service import HEALTH_CHANGED
from switchboard.messages.domain import MessageStatus
from tests.health.test_ban_watch import ATTACHED, NEW, T0, WatchedWorld, instance
from tools.support.aws import AwsResources


@pytest.mark.parametrize(
    ("status", "quality", "expected"),
    [
        ("CONNECTED", "GREEN", {}),
        ("CONNECTED", "YELLOW", {}),
        ("CONNECTED", "NA", {}),
        ("FLAGGED", "YELLOW", {"meta_status_flagged": HealthState.PAUSED_FOR_NEW_CONTACTS}),
        ("RESTRICTED", "GREEN", {"meta_status_restricted": HealthState.PAUSED_FOR_NEW_CONTACTS}),
        ("CONNECTED", "RED", {QUALITY_RED: HealthState.PAUSED_FOR_NEW_CONTACTS}),
        (
            "RESTRICTED",
            "RED",
            {
                "meta_status_restricted": HealthState.PAUSED_FOR_NEW_CONTACTS,
                QUALITY_RED: HealthState.PAUSED_FOR_NEW_CONTACTS,
            },
        ),
        ("RATE_LIMITED", "GREEN", {"meta_status_rate_limited": HealthState.WARNING}),
        ("BANNED", None, {"meta_status_banned": HealthState.PAUSED}),
        ("DISCONNECTED", None, {"meta_status_disconnected": HealthState.PAUSED}),
        ("MESSAGING_LIMIT_TIER_2", None, {}),  # a tier, not a standing
        ("SOMETHING_NEW", None, {}),  # a word Meta adds later pauses nothing until it is understood
        (None, None, {}),
    ],
)
def test_each_standing_gives_its_reasons(status: str | None, quality: str | None, expected: dict[str, str]) -> None:
    reasons = standing_reasons(status, quality, T0)

    assert {code: reason.state for code, reason in reasons.items()} == expected
    assert all(reason.until is None and reason.since == T0 for reason in reasons.values())


def test_a_restricted_number_is_paused_for_new_contacts_announced_and_the_pool_sends_elsewhere(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"), instance("b"))
    world.attach(ATTACHED, "a")

    world.watch.standing(world.instances["a"], "RESTRICTED", "GREEN")

    health = world.store.get(world.instances["a"].key)
    assert world.state("a") is HealthState.PAUSED_FOR_NEW_CONTACTS
    assert list(health.reasons) == ["meta_status_restricted"]
    [(kind, detail)] = world.published.events
    assert (kind, detail["state"], [reason["code"] for reason in detail["reasons"]]) == (
        HEALTH_CHANGED,
        "paused_for_new_contacts",
        ["meta_status_restricted"],
    )
    world.tickets.value = 0  # a new recipient's ticket lands on `a`
    status, sent_by, skipped = world.send(NEW[0])
    assert (status, sent_by) == (MessageStatus.SENT, "b")
    assert [(data["instance"], data["reason"], data["healthReasons"]) for data in skipped] == [
        ("a", "health_paused_for_new_contacts", ["meta_status_restricted"])
    ]
    # The people `a` is already talking to are still answered through it.
    assert world.send(ATTACHED)[:2] == (MessageStatus.SENT, "a")


def test_a_standing_read_again_keeps_its_since_writes_nothing_and_lifts_once_meta_stops_saying_it(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"))
    source = world.instances["a"]
    world.watch.standing(source, "FLAGGED", "RED")
    written = world.store.get(source.key).version

    world.later(timedelta(minutes=5))
    world.watch.standing(source, "FLAGGED", "RED")

    health = world.store.get(source.key)
    assert health.version == written  # the same standing: no write
    assert {reason.since for reason in health.reasons.values()} == {T0}

    world.later(timedelta(minutes=5))
    world.watch.standing(source, "FLAGGED", "GREEN")  # quality recovered, still flagged
    assert list(world.store.get(source.key).reasons) == ["meta_status_flagged"]

    world.watch.standing(source, "CONNECTED", "GREEN")
    assert world.state("a") is HealthState.HEALTHY
    assert [detail["state"] for _, detail in world.published.events] == ["paused_for_new_contacts", "healthy"]


def test_a_healthy_standing_of_a_healthy_number_costs_no_write(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"))

    world.watch.standing(world.instances["a"], "CONNECTED", "GREEN")

    assert world.store.get(world.instances["a"].key).version == 0
    assert world.published.events == []


def test_the_standing_leaves_the_numbers_other_reasons_alone(aws: AwsResources) -> None:
    world = WatchedWorld(aws, instance("a"))
    source = world.instances["a"]
    world.watch.refused(source, "130429")  # the throughput pause, a send's own signal

    world.watch.standing(source, "RESTRICTED", None)
    world.watch.standing(source, "CONNECTED", None)

    assert list(world.store.get(source.key).reasons) == ["meta_throughput_130429"]

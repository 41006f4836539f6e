"""The ban watch's diversity signal: the same text to many different people (what bulk-spam
detection punishes) puts an instance in warning once a full sample of recent sends says so, a
conversation with few people never does, and the stored sample holds only short hashes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from switchboard import bootstrap
from switchboard.health.domain import (
    REPEATED_TEXT,
    Health,
    HealthState,
    Thresholds,
    after_send,
    diversity,
    fingerprints,
    view,
)
from switchboard.messages.domain import MessageStatus
from tests.health.test_ban_watch import T0, Requests, WatchedWorld, instance
from tools.support.aws import AwsResources

LIMITS = Thresholds()  # a sample of 50, warning under 10% distinct texts
KEY = "acme:a"


def sampled(sends: list[tuple[str, str]], **fields: Any) -> Health:
    """An instance whose sample holds `sends` (recipient, text) in slots 0, 1, 2..."""
    prints = [fingerprints(KEY, recipient, text) for recipient, text in sends]
    return Health(
        instance_key=KEY,
        sample_recipients={slot: person for slot, (person, _) in enumerate(prints)},
        sample_texts={slot: text for slot, (_, text) in enumerate(prints)},
        send_seq=len(sends),
        **fields,
    )


def recipient(number: int) -> str:
    return f"55119{number:08d}"


def test_given_a_sample_not_yet_full_then_the_same_text_to_everyone_is_not_judged() -> None:
    health = sampled([(recipient(n), "Promo! 50% off today") for n in range(49)])

    assert REPEATED_TEXT not in after_send(health, T0, LIMITS)
    assert diversity(health, LIMITS).sample == 49


def test_given_the_same_text_to_50_different_recipients_then_a_repeated_text_warning() -> None:
    # Whitespace and case do not make a text different (the spam guard's normalisation).
    texts = ["Promo! 50% off today", "  promo!   50% OFF today "]
    health = sampled([(recipient(n), texts[n % 2]) for n in range(50)])

    reasons = after_send(health, T0, LIMITS)

    assert reasons[REPEATED_TEXT].state is HealthState.WARNING
    assert reasons[REPEATED_TEXT].until is None
    assert health.model_copy(update={"reasons": reasons}).state_at(T0) is HealthState.WARNING
    assert view(health, T0, LIMITS)["diversity"] == {"sample": 50, "recipients": 1.0, "texts": 0.02}


def test_given_50_different_texts_then_no_warning() -> None:
    health = sampled([(recipient(n), f"Hello {n}, your order {n} shipped") for n in range(50)])

    assert REPEATED_TEXT not in after_send(health, T0, LIMITS)
    assert view(health, T0, LIMITS)["diversity"] == {"sample": 50, "recipients": 1.0, "texts": 1.0}


def test_given_the_same_text_in_a_conversation_with_few_people_then_no_warning() -> None:
    health = sampled([(recipient(n % 3), "ok") for n in range(50)])

    assert REPEATED_TEXT not in after_send(health, T0, LIMITS)


def test_given_diversity_recovers_then_the_warning_is_removed() -> None:
    broadcast = sampled([(recipient(n), "Promo!") for n in range(50)])
    reasons = after_send(broadcast, T0, LIMITS)
    assert REPEATED_TEXT in reasons

    # Later sends overwrite the slots with varied texts: 5 distinct of 50 is no longer under 10%.
    varied = sampled([(recipient(n), f"text {n % 5}") for n in range(50)], reasons=reasons)

    assert REPEATED_TEXT not in after_send(varied, T0 + timedelta(minutes=5), LIMITS)


def test_before_any_send_the_view_has_no_ratios_and_slots_past_a_smaller_sample_are_ignored() -> None:
    assert view(Health(instance_key=KEY), T0, LIMITS)["diversity"] == {"sample": 0, "recipients": None, "texts": None}

    health = sampled([(recipient(n), "same") for n in range(50)])

    assert diversity(health, Thresholds(diversity_sample=10)).sample == 10


def test_the_stored_sample_is_written_by_the_send_counter_itself_and_holds_no_number_or_text(
    aws: AwsResources,
) -> None:
    world = WatchedWorld(aws, instance("a"))
    key = world.instances["a"].key
    requests = Requests()
    world.store.count_send(key, T0)  # a new item (the minute and hour steps fail first)
    requests.clear()
    phone, text = "5511988887777", "Your code is 123456"
    person, said = fingerprints(key, phone, text)

    health = world.store.count_send(key, T0 + timedelta(seconds=1), [(7, person, said)])

    [update] = requests.updates()
    assert {"minute_sends", "dr_7", "dt_7"} <= set(update["ExpressionAttributeNames"].values())
    assert (health.sample_recipients, health.sample_texts, health.send_seq) == ({7: person}, {7: said}, 2)
    item = bootstrap.table().get_item(Key={"pk": f"HEALTH#{key}", "sk": "#META"})["Item"]
    assert (item["dr_7"], item["dt_7"]) == (person, said)
    assert len(person) == len(said) == 8
    stored = repr(item)
    assert phone not in stored
    assert "123456" not in stored
    assert "code" not in stored.casefold()


def test_given_the_same_text_sent_to_many_recipients_then_the_instance_is_in_warning_and_the_api_view_says_why(
    aws: AwsResources,
) -> None:
    limits = Thresholds(diversity_sample=10, min_text_diversity=0.2, max_sends_per_minute=100)
    world = WatchedWorld(aws, instance("a"), limits=limits)
    for n in range(9):
        message = world.queue_message(recipient(n), "Big sale, reply STOP to opt out")
        assert world.process(message).status is MessageStatus.SENT
    assert world.state("a") is HealthState.HEALTHY

    world.process(world.queue_message(recipient(9), "Big sale, reply STOP to opt out"))

    # One worker sending in turn fills the sample slot by slot: 10 sends, 10 slots.
    health = world.store.get(world.instances["a"].key)
    assert (health.send_seq, len(health.sample_texts)) == (10, 10)
    assert world.state("a") is HealthState.WARNING
    [(_, detail)] = world.published.events
    assert (detail["previousState"], detail["state"]) == ("healthy", "warning")
    assert [reason["code"] for reason in detail["reasons"]] == [REPEATED_TEXT]
    assert detail["diversity"] == {"sample": 10, "recipients": 1.0, "texts": 0.1}

    for n in range(10):
        world.process(world.queue_message(recipient(n), f"Hi {n}, about your order"))

    assert world.state("a") is HealthState.HEALTHY
    assert [detail["state"] for _, detail in world.published.events] == ["warning", "healthy"]

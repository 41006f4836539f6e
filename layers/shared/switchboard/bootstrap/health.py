"""Builds the ban watch once per container: its repository, thresholds, the bus and the events webhook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.bootstrap.components import Components, component
from switchboard.bootstrap.core import event_publisher, table

if TYPE_CHECKING:
    from switchboard.catalog.domain import PacingLimits
    from switchboard.health.domain import Thresholds
    from switchboard.health.pacing import Pacer
    from switchboard.health.service import BanWatch


# Sends the ban watch keeps before writing them: more than a send worker's batch (10 records),
# so the flush at the end of its invocation writes once per instance, and few enough that a
# container frozen with them lost little.
BUFFERED_SENDS = 25


def thresholds(c: Components) -> Thresholds:
    from switchboard.health.domain import Thresholds

    settings = c.settings
    return Thresholds(
        timelock_pause_seconds=settings.health_timelock_pause_seconds,
        throughput_pause_seconds=settings.health_throughput_pause_seconds,
        pair_rate_warning_seconds=settings.health_pair_rate_warning_seconds,
        ecosystem_warning_seconds=settings.health_ecosystem_warning_seconds,
        max_sends_per_minute=settings.health_max_sends_per_minute,
        max_sends_per_hour=settings.health_max_sends_per_hour,
        delivery_window=settings.health_delivery_window,
        min_delivery_ratio=settings.health_min_delivery_ratio,
        diversity_sample=settings.health_diversity_sample,
        min_text_diversity=settings.health_min_text_diversity,
    )


@component
def health_watch(c: Components) -> BanWatch:
    from switchboard.bootstrap.messages import client_webhook_publisher
    from switchboard.health.dynamo import HealthRepository
    from switchboard.health.service import BanWatch

    return BanWatch(
        HealthRepository(table(c)),
        limits=thresholds(c),
        publisher=event_publisher(c),
        events_webhook=client_webhook_publisher(c),
        cache_seconds=c.settings.health_cache_seconds,
        buffered_sends=BUFFERED_SENDS,
    )


@component
def pacing_defaults(c: Components) -> PacingLimits:
    """The deployment's pacing, which every number follows where its own override is silent."""
    from switchboard.catalog.domain import PacingLimits

    settings = c.settings
    return PacingLimits(
        per_minute=settings.pacing_messages_per_minute,
        burst=settings.pacing_burst,
        new_contacts_first_day=settings.pacing_new_contacts_first_day,
        new_contacts_step=settings.pacing_new_contacts_step,
        new_contacts_max=settings.pacing_new_contacts_max,
    )


@component
def pacer(c: Components) -> Pacer:
    from switchboard.health.dynamo import DynamoPaceStore
    from switchboard.health.pacing import Pacer

    return Pacer(DynamoPaceStore(table(c)), pacing_defaults(c))

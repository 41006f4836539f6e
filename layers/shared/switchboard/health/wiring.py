"""Builds the ban watch once per container: its repository, thresholds, the bus and the events webhook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.core.components import component
from switchboard.core.settings import get_settings
from switchboard.core.wiring import event_publisher, table

if TYPE_CHECKING:
    from switchboard.catalog.domain import PacingLimits
    from switchboard.health.domain import Thresholds
    from switchboard.health.pacing import Pacer
    from switchboard.health.service import HealthWatch


def thresholds() -> Thresholds:
    from switchboard.health.domain import Thresholds

    settings = get_settings()
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
def health_watch() -> HealthWatch:
    from switchboard.health.dynamo import HealthRepository
    from switchboard.health.service import HealthWatch
    from switchboard.messages.wiring import client_webhook_publisher

    return HealthWatch(
        HealthRepository(table()),
        limits=thresholds(),
        publisher=event_publisher(),
        events_webhook=client_webhook_publisher(),
        cache_seconds=get_settings().health_cache_seconds,
    )


def pacing_defaults() -> PacingLimits:
    """The deployment's pacing, which every number follows where its own override is silent."""
    from switchboard.catalog.domain import PacingLimits

    settings = get_settings()
    return PacingLimits(
        per_minute=settings.pacing_messages_per_minute,
        burst=settings.pacing_burst,
        new_contacts_first_day=settings.pacing_new_contacts_first_day,
        new_contacts_step=settings.pacing_new_contacts_step,
        new_contacts_max=settings.pacing_new_contacts_max,
    )


@component
def pacer() -> Pacer:
    from switchboard.health.dynamo import DynamoPaceStore
    from switchboard.health.pacing import Pacer

    return Pacer(DynamoPaceStore(table()), pacing_defaults())

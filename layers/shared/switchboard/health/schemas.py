"""The health API's answers."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from switchboard.catalog.domain import Instance
from switchboard.core.wire import View
from switchboard.health.domain import Health, Thresholds, view

State = Literal["healthy", "warning", "paused_for_new_contacts", "paused"]


class ReasonView(View):
    code: str = Field(
        description="timelock_463, meta_throughput_130429, meta_pair_rate_131056, meta_ecosystem_131049, "
        "logged_out, velocity_minute, velocity_hour, low_delivery_ratio or repeated_text"
    )
    state: State = Field(description="The state this reason puts the instance in.")
    since: datetime
    until: datetime | None = Field(description="When it lifts by itself; null: when its signal clears.")
    count: int = Field(description="How many times the signal came while the reason was active.")


class VelocityView(View):
    sends_this_minute: int
    sends_this_hour: int


class DeliveryView(View):
    window_sent: int = Field(description="Sends counted in the current window.")
    window_delivered: int = Field(description="Delivery receipts counted in the current window.")
    last_ratio: float | None = Field(description="Delivered over sent in the last complete window.")


class DiversityView(View):
    sample: int = Field(description="Recent sends sampled (up to HEALTH_DIVERSITY_SAMPLE, default 50).")
    recipients: float | None = Field(description="Distinct recipients over the sample; null before any send.")
    texts: float | None = Field(
        description="Distinct texts (compared trimmed and casefolded) over the sample; null before any send."
    )


class HealthView(View):
    instance: str
    number_id: str
    state: State = Field(
        description="healthy; warning (watched, still used); paused_for_new_contacts (the pool sends it "
        "only to recipients attached to its number); paused (the pool skips it)."
    )
    since: datetime | None = Field(description="Since when the instance is in this state.")
    paused_until: datetime | None = Field(description="When the pause lifts by itself, if it does.")
    reasons: list[ReasonView]
    velocity: VelocityView
    delivery: DeliveryView
    diversity: DiversityView = Field(
        description="The recipients and texts of the recent sends: the same text to many different people "
        "(texts under HEALTH_MIN_TEXT_DIVERSITY, recipients at least half) puts the instance in warning."
    )
    failures: dict[str, int] = Field(description="Sends refused by the provider, by the provider's code.")

    @classmethod
    def of(cls, instance: Instance, health: Health, now: datetime, limits: Thresholds) -> HealthView:
        current = view(health, now, limits)
        minute, hour = int(now.timestamp()) // 60, int(now.timestamp()) // 3600
        return cls.model_validate(
            {
                "instance": instance.name,
                "number_id": instance.number_id,
                "state": current["state"],
                "since": current["since"],
                "paused_until": current["pausedUntil"],
                "reasons": current["reasons"],
                "velocity": {
                    "sends_this_minute": health.minute_sends if health.at_minute == minute else 0,
                    "sends_this_hour": health.hour_sends if health.at_hour == hour else 0,
                },
                "delivery": {
                    "window_sent": health.window_sent,
                    "window_delivered": health.window_delivered,
                    "last_ratio": health.delivery_ratio,
                },
                "failures": health.failures,
                "diversity": current["diversity"],
            }
        )


class EventsWebhookSecretView(View):
    instance: str
    secret: str = Field(
        description="The Standard Webhooks signing secret of the instance's events webhook. Shown only here."
    )

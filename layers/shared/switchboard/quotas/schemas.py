"""Bodies of the quota API (camelCase on the wire)."""

from __future__ import annotations

from pydantic import Field

from switchboard.core.wire import Body, View
from switchboard.quotas.domain import QuotaOverrides
from switchboard.quotas.service import QuotaReport

# One request every 1,000 s. A bucket stores how far ahead it may run, in microseconds: the burst
# times the microseconds between two tokens (`core.buckets.Bucket`), which for a rate like 1E-130
# outgrows any DynamoDB number (every request then failed). Below this floor a tenant is switched
# off rather than throttled, so the floor costs nobody a real setting.
MIN_RATE = 0.001


class PutQuotas(Body):
    """A tenant's overrides, replacing the current ones: an absent or null field takes the default."""

    requests_per_second: float | None = Field(default=None, ge=MIN_RATE, le=10_000)
    burst: int | None = Field(default=None, ge=1, le=100_000)
    key_requests_per_second: float | None = Field(default=None, ge=MIN_RATE, le=10_000)
    key_burst: int | None = Field(default=None, ge=1, le=100_000)
    messages_per_day: int | None = Field(default=None, ge=0, le=1_000_000_000)

    def overrides(self) -> QuotaOverrides:
        return QuotaOverrides.model_validate(self.model_dump())


class QuotasView(View):
    requests_per_second: float = Field(description="Requests a second for the whole tenant (token bucket rate).")
    burst: int = Field(description="Requests the tenant may make at once before the rate applies.")
    key_requests_per_second: float = Field(description="Requests a second for each of its API keys.")
    key_burst: int
    messages_per_day: int = Field(description="Messages accepted per UTC day (POST /api/messages).")
    messages_today: int = Field(description="Messages accepted so far this UTC day.")
    overridden: list[str] = Field(description="The fields the platform set for this tenant; the rest are defaults.")

    @classmethod
    def of(cls, report: QuotaReport) -> QuotasView:
        return cls(
            **report.quotas.model_dump(),
            messages_today=report.messages_today,
            overridden=[_camel(name) for name in report.overrides.set_fields()],
        )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)

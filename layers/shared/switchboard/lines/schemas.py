"""Bodies of the calls-limit API. Versions are 64-bit: they travel as JSON strings, never as numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from switchboard.core.wire import Body, View
from switchboard.lines.domain import MAX_LIMIT, MIN_LIMIT, Line, Occupant, SnapshotSource
from switchboard.lines.subscriptions import SubscriptionReport, SubscriptionState
from switchboard.providers.base import Capabilities

if TYPE_CHECKING:
    # What the calls view is made from; the service is imported when a route that takes it first runs.
    from switchboard.lines.service import CallsOverview

Version = Annotated[
    str | None,
    Field(description="The provider's 64-bit config version as a decimal string; null until one is known."),
]


def version_text(version: int | None) -> str | None:
    return None if version is None else str(version)


class SetCallsLimit(Body):
    calls_max_concurrent: Annotated[int, Field(ge=MIN_LIMIT, le=MAX_LIMIT)] = Field(
        description="Simultaneous calls (voice and video alike) the provider admits on this connection."
    )


class PrepareSubscription(Body):
    scope: Literal["instance", "global"] = Field(
        default="instance",
        description="`global` (platform scope) would change the server's global subscription: refused, see docs.",
    )
    include_limits: bool = Field(default=False, description="Also subscribe the optional `limits` event.")


class CallsRange(View):
    min: int
    max: int


class CapabilitiesView(View):
    calls: bool
    calls_per_instance_limit: bool
    calls_settings_webhook: bool
    calls_video: bool
    server_default_limit: int | None = Field(description="The server's default for new instances, not this limit.")
    range: CallsRange

    @classmethod
    def of(cls, capabilities: Capabilities) -> CapabilitiesView:
        return cls(
            calls=capabilities.calls,
            calls_per_instance_limit=capabilities.calls_per_instance_limit,
            calls_settings_webhook=capabilities.calls_settings_webhook,
            calls_video=capabilities.calls_video,
            server_default_limit=capabilities.calls_max_concurrent,
            range=CallsRange(min=capabilities.calls_min, max=capabilities.calls_max),
        )


class OccupantView(View):
    id: str
    call_id: str | None
    direction: str
    video: bool
    state: str
    owner: str | None
    since: str
    from_number: str | None = Field(
        default=None, alias="from", description="Who calls (digits), as the provider said; null until it did."
    )
    to_number: str | None = Field(
        default=None, alias="to", description="Whom the call is to (digits): the number dialled, or ours."
    )

    @classmethod
    def of(cls, occupant: Occupant) -> OccupantView:
        return cls.model_validate(occupant.model_dump(exclude={"kind"}))


class CallsView(View):
    instance: str
    limit: int | None
    version: Version
    updated_at: str | None
    source: SnapshotSource | None = Field(
        description="Where the stored limit came from: `post` (set through this API), `status` (a status read), "
        "`call_settings` (the provider's panel, by webhook) or `connection` (a connection event); null if unknown."
    )
    conflict: bool = Field(description="An equal version with another value was seen; a status read settles it.")
    capabilities: CapabilitiesView | None = Field(description="Null when the provider server could not be asked.")
    connected: bool
    occupancy: int
    available: int | None
    excess: int | None = Field(description="Live occupants above the limit after a reduction; nobody is hung up.")
    calls: list[OccupantView]
    reservations: list[OccupantView]

    @classmethod
    def of(cls, overview: CallsOverview) -> CallsView:
        line = overview.line or Line(instance=overview.instance.name, tenant=overview.instance.tenant)
        return cls(
            instance=overview.instance.name,
            limit=line.limit,
            version=version_text(line.version),
            updated_at=line.updated_at,
            source=line.source,
            conflict=line.conflict,
            capabilities=CapabilitiesView.of(overview.capabilities) if overview.capabilities else None,
            connected=overview.instance.connected,
            occupancy=line.occupancy,
            available=line.available,
            excess=line.excess,
            calls=[OccupantView.of(occupant) for occupant in line.live_calls()],
            reservations=[OccupantView.of(occupant) for occupant in line.reservations()],
        )


class LineConfigView(View):
    limit: int | None
    version: Version
    updated_at: str | None
    conflict: bool


class SubscriptionView(View):
    instance: str
    state: SubscriptionState
    ready: bool = Field(
        description="True when the subscription is enabled, lists every required event and the server "
        "announces `calls_settings_webhook`."
    )
    changed: bool
    inherited: bool
    enabled: bool
    url: str | None
    events: list[str]
    filters: dict[str, object]
    missing: list[str] = Field(
        description="Required events the subscription still lacks, and required capabilities "
        "(`calls_settings_webhook`) the server does not announce."
    )
    reason: str | None = Field(description="Why it is not ready, to show as is; null when ready.")
    config: LineConfigView = Field(description="The call limit as read from the status right after.")

    @classmethod
    def of(cls, report: SubscriptionReport) -> SubscriptionView:
        line = report.line
        return cls(
            **report.model_dump(exclude={"line"}),
            config=LineConfigView(
                limit=line.limit, version=version_text(line.version), updated_at=line.updated_at, conflict=line.conflict
            ),
        )

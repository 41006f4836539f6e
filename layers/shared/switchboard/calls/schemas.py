"""Bodies and views of the call control API: dial, claim/transfer, hangup, video stop, reconcile."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, StringConstraints

from switchboard.core.wire import Body, Phone, View
from switchboard.providers.base import MediaAttachment

if TYPE_CHECKING:
    # What the views are made from; the services import them when a route first runs.
    from switchboard.calls.dialing import DialOutcome
    from switchboard.calls.domain import CallRecord
    from switchboard.calls.reconcile import ReconcileReport

AttendantId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:@-]{1,128}$")]
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,128}$"  # printable ASCII, no spaces


class DialCall(Body):
    to: Phone
    video: bool = False


class ClaimCall(Body):
    """Empty to take the call; `transferTo` (owner or admin only) to hand it to another attendant."""

    transfer_to: AttendantId | None = None


class VideoAction(Body):
    action: Literal["stop"]


class CallView(View):
    call_id: str
    instance: str
    state: str | None
    direction: str | None
    peer: str | None
    video: bool
    owner: str | None
    holds_slot: bool | None = Field(description="False while an outgoing call waits for its dial answer")
    reservation_id: str | None
    end_reason: str | None
    ended_by: str | None
    recording_status: str | None
    recording_url: str | None

    @classmethod
    def of(cls, record: CallRecord) -> CallView:
        return cls(
            call_id=record.call_id,
            instance=record.instance,
            state=record.state,
            direction=record.direction,
            peer=record.peer,
            video=record.video,
            owner=record.owner,
            holds_slot=record.holds_slot,
            reservation_id=record.reservation_id,
            end_reason=record.end_reason,
            ended_by=record.ended_by,
            recording_status=record.recording_status,
            recording_url=record.recording_url,
        )


class DialView(View):
    """`connected`: the call exists (`call`); `pending`: the provider's answer was lost, the slot stays
    reserved and a retry with the same Idempotency-Key (or the reconciler) resolves it."""

    status: Literal["connected", "pending"]
    reservation_id: str
    call: CallView | None = None

    @classmethod
    def of(cls, outcome: DialOutcome) -> DialView:
        if outcome.call is None:
            return cls(status="pending", reservation_id=outcome.reservation_id)
        return cls(status="connected", reservation_id=outcome.reservation_id, call=CallView.of(outcome.call))


class ReconcileView(View):
    instance: str
    limit: int | None
    active: int
    ended: int
    unknown_to_provider: int
    reservations_bound: int
    reservations_released: int
    reservations_kept: int
    adopted: int
    strays_released: int = Field(
        description="Line entries with neither a live call nor a pending dial behind them, freed."
    )

    @classmethod
    def of(cls, report: ReconcileReport) -> ReconcileView:
        return cls.model_validate(report.model_dump(exclude={"outbox"}))


class AttachmentView(View):
    """Where the owner's browser connects for this call's media; nothing else (never a provider token)."""

    media_url: str = Field(description="A one-time WebSocket URL at the provider; connect before `expiresAt`.")
    expires_at: str = Field(description="Connect before this instant (RFC 3339, UTC).")
    resumed: bool = Field(description="True when it resumes the media session this attendant had (within 25 s).")

    @classmethod
    def of(cls, attachment: MediaAttachment) -> AttachmentView:
        return cls(media_url=attachment.media_url, expires_at=attachment.expires_at, resumed=attachment.resumed)

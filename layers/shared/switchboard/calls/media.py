"""Call media attachment: the owning attendant gets a short-lived media URL for one live call.

The browser connects to that URL at the provider directly; switchboard never relays media and
never hands out the instance token. The provider keeps a call's media session 30 s after its
socket drops; we resume a session for at most `RETAIN_SECONDS` (25 s) after the drop, and only
for the attendant it was attached for, so a reattach we allow always lands inside the
provider's window, and after a transfer the new owner never inherits the previous owner's
session (asking with `resume=False` makes the provider close it and start a new one).

Each attachment is remembered per call (`Attachment`: who and which provider session), so the
decision needs no extra provider read: one provider request, two when a resumed session turns
out to have been without its socket for longer than our retention.
"""

from __future__ import annotations

from typing import Protocol

from switchboard.calls.domain import Attachment, CallRecord, utcnow
from switchboard.calls.service import CallService, attendant_of
from switchboard.catalog.ports import Instances, Targets
from switchboard.core.errors import CallEnded, Conflict, Forbidden, ProviderError
from switchboard.core.identity import Principal
from switchboard.core.observability import logger
from switchboard.lines.service import for_caller, require_calls_instance
from switchboard.providers.base import MediaAttachment

RETAIN_SECONDS = 25.0  # below the provider's 30 s, so a resume we allow never races its release


class Attachments(Protocol):
    def get_attachment(self, record: CallRecord) -> Attachment | None: ...
    def put_attachment(self, attachment: Attachment) -> None: ...


class MediaService:
    def __init__(self, calls: CallService, instances: Instances, targets: Targets, store: Attachments) -> None:
        self._calls = calls
        self._instances = instances
        self._targets = targets
        self._store = store

    def attach(self, principal: Principal, instance_name: str, call_id: str) -> MediaAttachment:
        """A media URL for the caller's own live call.

        Raises NotFound (no such call), CallEnded (409 `call_ended`), Conflict (409
        `call_not_claimed`: nobody owns it yet), Forbidden (403 `not_call_owner`),
        UnsupportedByProvider (`not_supported`: the provider has no call media) and the
        provider's failures (502/504), never a success without a URL.
        """
        instance = self._instances.get_instance(principal.tenant, instance_name)
        require_calls_instance(instance)
        record = self._calls.get(principal, instance_name, call_id)
        attendant = attendant_of(principal)
        if not record.live:
            raise CallEnded("the call is not live: there is no media to attach")
        if record.owner is None:
            raise Conflict("nobody owns this call yet: claim or answer it first", code="call_not_claimed")
        if record.owner != attendant:
            raise Forbidden("only the call's owner gets its media", code="not_call_owner")
        previous = self._store.get_attachment(record)
        resume = previous is not None and previous.attendant == attendant
        client, target = self._targets.target_for(instance)
        try:
            attachment = client.attach_media(target, record.call_id, resume=resume)
            if attachment.resumed and not _ours_to_resume(attachment, previous):
                attachment = client.attach_media(target, record.call_id, resume=False)
        except ProviderError as failed:
            raise for_caller(failed) from failed
        self._store.put_attachment(
            Attachment(
                tenant=record.tenant,
                instance=record.instance,
                provider_id=record.provider_id,
                provider_instance_id=record.provider_instance_id,
                call_id=record.call_id,
                attendant=attendant,
                session_id=attachment.session_id,
                attached_at=utcnow().isoformat(),
            )
        )
        logger.info(
            "call media attached",
            extra={"instance": instance.key, "call_id": record.call_id, "resumed": attachment.resumed},
        )
        return attachment


def _ours_to_resume(attachment: MediaAttachment, previous: Attachment | None) -> bool:
    """The provider resumed the session we attached for this attendant, dropped at most 25 s ago."""
    return (
        previous is not None
        and attachment.session_id == previous.session_id
        and (attachment.detached_for_seconds or 0.0) <= RETAIN_SECONDS
    )

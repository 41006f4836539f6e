"""Replies from the downstream, sent through a named instance; an outbox while it is disconnected.

Every reply goes through the instance's outbox (one code path keeps the order): it is stored,
then, if the instance is connected, the outbox is drained at once. `drain` sends entries in order
and stops at the first one the provider cannot take now; a reply longer than one message of the
instance's kind (`text_limit`) leaves in parts (`routing.parts`), in order, each recorded once
accepted; it runs again when a `connection` event
says connected and on the reconciliation schedule. An entry older than the validity ends FAILED
with a reason, and a private note tells the downstream conversation.

A send whose outcome is unknown (no answer in time, or a drain that died between starting a send
and recording it: the part `in_flight`) is sent again only through a kind that is `retry_safe`
(the resend carries the same id, so WhatsApp shows one message). Through any other kind a resend
would reach the customer as a second copy, so the reply ends FAILED `ambiguous_outcome` and the
note tells the agent it may or may not have arrived: the agent, who can see the conversation,
decides whether to write again.

The outgoing webhook is authenticated by a per-instance secret (256 random bits, shown once,
stored as its SHA-256), presented in the `X-Switchboard-Secret` header and compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as random_secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal, Protocol

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import Instance, instance_key, secret_hint
from switchboard.catalog.ports import Instances
from switchboard.core.errors import ProviderError, ProviderRejected, ProviderTimeout, Unauthenticated
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.providers.kinds import spec_for
from switchboard.routing.domain import DownstreamClient, DownstreamTarget
from switchboard.routing.parts import split_text
from switchboard.routing.records import FinalStatus, OutboxEntry, Outcome
from switchboard.usage.service import UsageRecorder, count_metric

if TYPE_CHECKING:
    from switchboard.catalog.ports import Targets
    from switchboard.providers.base import ProviderClient, ProviderTarget

LEASE_SECONDS = 60
DRAIN_BATCH = 50
DEFAULT_VALIDITY = timedelta(hours=4)
REQUEST_BUDGET_SECONDS = 3.0  # drains run inside HTTP requests (webhooks, replies): bounded
AMBIGUOUS_OUTCOME = "ambiguous_outcome"  # the same reason code as a send through the API
# What became of one claimed entry: all of it sent, failed (and told), paused (the provider cannot
# take it now: the drain stops, keeping the order), or gone (finished or taken by another drain).
Step = Literal["sent", "failed", "paused", "gone"]


def part_id(message_id: str, index: int, parts: int) -> str:
    """A part's stable id: the reply's own for a reply of one part, else the reply's and its position."""
    return message_id if parts == 1 else f"{message_id}-p{index + 1}"


class OutboxStore(Protocol):
    def enqueue(self, entry: OutboxEntry) -> bool: ...
    def waiting(self, instance: str, limit: int) -> list[OutboxEntry]: ...
    def instances_waiting(self) -> list[str]: ...
    def claim(self, entry: OutboxEntry, now: datetime, lease_seconds: int) -> OutboxEntry | None:
        """The entry as stored once taken for sending (PENDING, or its sender's lease ran out);
        None when it is finished or another drain holds it."""
        ...

    def begin_part(self, entry: OutboxEntry) -> bool:
        """Record the part `entry.parts_sent` as in flight, before it is sent; False when the
        entry is no longer being sent from that part."""
        ...

    def advance(
        self, entry: OutboxEntry, parts_sent: int, part_chars: int, now: datetime, lease_seconds: int
    ) -> bool: ...
    def release(self, entry: OutboxEntry) -> None: ...
    def finish(
        self, entry: OutboxEntry, status: FinalStatus, reason: str | None, provider_message_id: str | None
    ) -> bool: ...
    def outcome(self, instance: str, message_id: str) -> Outcome | None: ...
    def set_webhook_digest(self, tenant: str, instance: str, digest: str, hint: str, at: datetime) -> None: ...
    def webhook_digest(self, tenant: str, instance: str) -> str | None: ...


class Downstreams(Protocol):
    def target_for(self, owner_tag: str | None) -> DownstreamTarget | None: ...


class Reply(Model):
    """One outgoing message from the downstream."""

    message_id: str
    phone: str
    text: str
    conversation_id: int | None = None


class DrainResult(Model):
    sent: int = 0
    failed: int = 0
    waiting: bool = False  # entries are left (instance disconnected or provider unavailable)
    left: int = 0  # replies of the batch read still waiting (a batch at most: the outbox may hold more)


class WebhookSecret(Model):
    secret: str
    hint: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class OutboxService:
    def __init__(
        self,
        store: OutboxStore,
        instances: Instances,
        targets: Targets,
        *,
        usage: UsageRecorder,
        downstreams: Downstreams,
        downstream_client: DownstreamClient,
        audit: Audit,
        validity: timedelta = DEFAULT_VALIDITY,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._instances = instances
        self._targets = targets
        self._usage = usage
        self._downstreams = downstreams
        self._downstream_client = downstream_client
        self._audit = audit
        self._validity = validity
        self._clock = clock
        self._monotonic = monotonic

    # --- the outgoing webhook secret -------------------------------------------------------

    def new_webhook_secret(self, principal: Principal, name: str) -> WebhookSecret:
        """Generate (or rotate) the instance's outgoing webhook secret; the plaintext is returned once."""
        instance = self._instances.get_instance(principal.tenant, name)
        secret = f"sbwh_{random_secrets.token_urlsafe(32)}"
        hint = secret_hint(secret)
        self._store.set_webhook_digest(instance.tenant, instance.key, _digest(secret), hint, self._clock())
        self._audit.record(
            principal, "instance.webhook_secret_rotated", name, after={"tenant": instance.tenant, "hint": hint}
        )
        return WebhookSecret(secret=secret, hint=hint)

    def authenticate(self, tenant: str, name: str, presented: str | None) -> Instance:
        """The instance if `presented` is its secret; one Unauthenticated for every failure."""
        instance = self._instances.find_instance(instance_key(tenant, name))
        expected = self._store.webhook_digest(instance.tenant, instance.key) if instance else None
        candidate = _digest(presented or "")
        if instance is None or expected is None or not presented or not hmac.compare_digest(candidate, expected):
            raise Unauthenticated("invalid instance webhook secret", code="invalid_webhook_secret")
        return instance

    # --- replies ---------------------------------------------------------------------------

    def submit(self, instance: Instance, reply: Reply) -> Outcome:
        """Store the reply in the instance's outbox (once per message id), then drain if connected."""
        entry = OutboxEntry(
            instance=instance.key,
            message_id=reply.message_id,
            phone=reply.phone,
            text=reply.text,
            conversation_id=reply.conversation_id,
            owner_tag=instance.owner_tag,
            enqueued_at=self._clock(),
        )
        if self._store.enqueue(entry):
            logger.info("reply queued", extra={"instance": instance.key, "message_id": reply.message_id})
        if instance.connected:
            self.drain(instance.key, budget_seconds=REQUEST_BUDGET_SECONDS)
        return self._store.outcome(instance.key, reply.message_id) or Outcome(status="PENDING")

    def drain(self, key: str, budget_seconds: float | None = None) -> DrainResult:
        """Send the instance's waiting replies in order; expire the too old. Safe to run concurrently.

        With `budget_seconds` (a webhook that must answer in time) no new send starts once it is
        spent; what is left waits for the next drain (the schedule at the latest).
        """
        instance = self._instances.find_instance(key)
        result = DrainResult()
        if instance is None:
            return result
        deadline = None if budget_seconds is None else self._monotonic() + budget_seconds
        entries = self._store.waiting(key, DRAIN_BATCH)
        sender: tuple[ProviderClient, ProviderTarget] | None = None
        for entry in entries:
            if deadline is not None and self._monotonic() >= deadline:
                result.waiting = True
                break
            now = self._clock()
            if now - entry.enqueued_at > self._validity:
                left = f" ({entry.parts_sent} of its parts had left)" if entry.parts_sent else ""
                result.failed += self._fail(instance, entry, f"expired: not sent within its validity{left}")
                continue
            if not instance.connected:
                result.waiting = True
                break
            claimed = self._store.claim(entry, now, LEASE_SECONDS)
            if claimed is None:
                result.waiting = True  # another drain holds it; it keeps the order
                break
            sender = sender or self._targets.target_for(instance)
            step = self._send(instance, claimed, *sender, deadline)
            if step == "sent":
                result.sent += 1
            elif step == "failed":
                result.failed += 1
            elif step == "paused":
                result.waiting = True
                break
        if len(entries) == DRAIN_BATCH and not result.waiting:
            result.waiting = True
        result.left = max(0, len(entries) - result.sent - result.failed)
        if result.sent or result.failed:
            logger.info("outbox drained", extra={"instance": key, **result.model_dump()})
        return result

    def _send(
        self,
        instance: Instance,
        entry: OutboxEntry,
        client: ProviderClient,
        target: ProviderTarget,
        deadline: float | None,
    ) -> Step:
        """Send the parts of a claimed entry still to go, in order: a part leaves only once the
        one before it was accepted, and each accepted part is recorded before the next is sent,
        so no drain sends a part twice. Each part has its own stable id (the reply's, plus its
        position), the idempotency key of its send. Where a resend could make a copy, the part
        is first recorded in flight, and a send whose outcome is unknown is never repeated."""
        spec = spec_for(target.kind)
        limit = entry.part_chars or spec.text_limit
        parts = split_text(entry.text, limit)
        if not parts:  # blank: no WhatsApp server takes an empty text
            self._store.release(entry)
            return "failed" if self._fail(instance, entry, "nothing to send: the reply is blank") else "gone"
        key = instance.key
        first = entry.parts_sent
        if entry.in_flight is not None and not spec.retry_safe:
            # The drain that sent this part died before recording what became of it.
            return self._fail_in_doubt(instance, entry, target.kind, entry.in_flight, len(parts))
        for index in range(first, len(parts)):
            if index > first and deadline is not None and self._monotonic() >= deadline:
                self._store.release(entry)  # the parts sent so far stay recorded
                return "paused"
            if not spec.retry_safe and not self._store.begin_part(entry):
                return "gone"  # no longer ours: the drain holding it goes on from what was recorded
            part = part_id(entry.message_id, index, len(parts))
            try:
                sent = client.send_text(target, entry.phone, parts[index], f"outbox-{key}-{part}")
            except ProviderRejected as exc:
                self._store.release(entry)
                reason = f"refused by the provider ({exc.code})"
                if index:
                    reason = f"part {index + 1} of {len(parts)} {reason}; the {index} before it were sent"
                return "failed" if self._fail(instance, entry, reason) else "gone"
            except ProviderTimeout:
                if not spec.retry_safe:
                    return self._fail_in_doubt(instance, entry, target.kind, index, len(parts))
                self._store.release(entry)  # resent with the same id: WhatsApp shows one message
                count_metric("SendFailures", key)
                logger.info("outbox paused", extra={"instance": key, "error": "provider_timeout"})
                return "paused"
            except ProviderError as exc:
                self._store.release(entry)
                count_metric("SendFailures", key)
                logger.info("outbox paused", extra={"instance": key, "error": exc.code})
                return "paused"
            now = self._clock()
            self._usage.record_outgoing(instance, now, f"outbox#{key}#{part}")
            if index + 1 == len(parts):
                return "sent" if self._store.finish(entry, "SENT", None, sent.provider_message_id) else "gone"
            if not self._store.advance(entry, index + 1, limit, now, LEASE_SECONDS):
                return "gone"  # no longer ours: the drain holding it goes on from what was recorded
            entry = entry.model_copy(update={"parts_sent": index + 1, "part_chars": limit})
        self._store.release(entry)
        return "gone"

    def drain_all(self) -> dict[str, DrainResult]:
        """The scheduled pass: every instance with waiting replies (sends the connected, expires the old)."""
        return {key: self.drain(key) for key in self._store.instances_waiting()}

    def _fail_in_doubt(self, instance: Instance, entry: OutboxEntry, kind: str, index: int, parts: int) -> Step:
        what = "it" if parts == 1 else f"part {index + 1} of {parts}"
        reason = (
            f"{AMBIGUOUS_OUTCOME}: the provider's answer was lost, so {what} may or may not have reached"
            f" the customer; not sent again, as a resend through {kind} would arrive as a second copy"
        )
        if index:
            reason += f" (the {index} parts before it were sent)"
        return "failed" if self._fail(instance, entry, reason, in_doubt=True) else "gone"

    def _fail(self, instance: Instance, entry: OutboxEntry, reason: str, *, in_doubt: bool = False) -> int:
        if not self._store.finish(entry, "FAILED", reason, None):
            return 0
        count_metric("SendFailures", instance.key)
        logger.info("reply failed", extra={"instance": instance.key, "message_id": entry.message_id, "reason": reason})
        self._report(instance, entry, reason, in_doubt=in_doubt)
        return 1

    def _report(self, instance: Instance, entry: OutboxEntry, reason: str, *, in_doubt: bool) -> None:
        """Tell the downstream conversation; a failure to tell it is logged, never raised."""
        if entry.conversation_id is None:
            return
        try:
            target = self._downstreams.target_for(instance.owner_tag)
            if target is None:
                return
            outcome = "may not have been delivered" if in_doubt else "was not delivered"
            note = f"Message {entry.message_id} {outcome} through {instance.name}: {reason}."
            self._downstream_client.post_note(target, entry.conversation_id, note)
        except Exception as exc:
            logger.warning(
                "failure not reported to the downstream",
                extra={"instance": instance.key, "message_id": entry.message_id, "error": type(exc).__name__},
            )

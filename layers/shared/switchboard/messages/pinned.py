"""A message pinned to one instance: the console's test message of an instance, accepted like any
other message (stored QUEUED, counted against the tenant's day, queued for the send worker) but
planned through that instance alone (`SendJob.instance`). The worker's gates, pacing, trace, usage
and message log apply to it as to every message; no client webhook is told of it (it is the
console's, not an app's), and its outcome is read back by its id."""

from __future__ import annotations

from switchboard.core.clock import new_id, utcnow
from switchboard.core.errors import QueueUnavailable
from switchboard.core.identity import Principal
from switchboard.core.observability import logger
from switchboard.core.ports import JobQueue
from switchboard.messages.domain import Message, SendJob, TraceEvent, body_hash
from switchboard.messages.ports import DailyQuota, Messages, StatusNotifier


class PinnedMessages:
    def __init__(
        self,
        messages: Messages,
        queue: JobQueue,
        *,
        daily_quota: DailyQuota | None = None,
        status: StatusNotifier | None = None,
    ) -> None:
        self._messages = messages
        self._queue = queue
        self._daily_quota = daily_quota
        self._status = status

    def submit(self, principal: Principal, instance: str, to: str, text: str) -> str:
        """Accept `text` to `to` through `instance` alone and queue it; its id. Raises
        DailyQuotaExceeded when the tenant's day is spent, QueueUnavailable when it could not be
        queued (the message then ends FAILED `not_queued`, and is told as such)."""
        now = utcnow()
        message = Message(
            tenant=principal.tenant,
            id=new_id("msg"),
            api_key_id=principal.key_id,
            to=to,
            text=text,
            pinned_instance=instance,
            body_hash=body_hash(to, text),
            created_at=now,
            trace=[TraceEvent(stage="message.accepted", at=now, data={"pinnedInstance": instance})],
        )
        quota = self._daily_quota
        charged = None if quota is None else (lambda uow: quota.charge_in(uow, message.tenant))
        self._messages.create(message, joined=charged)
        job = SendJob(
            message_id=message.id, tenant=message.tenant, api_key_id=message.api_key_id, to=to, instance=instance
        )
        try:
            self._queue.send(job.model_dump_json(exclude_none=True))
        except Exception as exc:
            logger.exception("pinned message stored but not queued", extra={"message_id": message.id})
            self._give_up(message)
            raise QueueUnavailable("the message could not be queued; retry later") from exc
        logger.info("pinned message queued", extra={"message_id": message.id, "instance": instance})
        return message.id

    def _give_up(self, message: Message) -> None:
        try:
            failed = self._messages.record_failed(message, "not_queued", [TraceEvent(stage="message.not_queued")])
            if self._status is not None:
                self._status.message_changed(failed, None)
        except Exception:
            logger.exception("could not mark the unqueued message", extra={"message_id": message.id})

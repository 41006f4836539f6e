"""In-memory fakes of the layer's ports: one per port, shared by every test that needs that port.

Each fake keeps what it was given in plain attributes the tests read (`sent`, `records`,
`requested`...) and raises what a test scripts into it (`failures`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from switchboard.catalog.domain import Instance, InstanceState, Tenant, instance_key
from switchboard.connection_state.domain import StateWrite, StoredState
from switchboard.core.clock import utcnow
from switchboard.core.errors import AlreadyExists, AlreadyFinal, NotFound, ProviderError
from switchboard.lines.domain import Line, Snapshot, SnapshotResult, Verdict, judge
from switchboard.messages.domain import Claim, Message, MessageStatus, PendingRoute, SentAs, TraceEvent
from switchboard.messages.spam_guard import KeptTexts, SentText
from switchboard.pool.domain import Affinity, Ticket
from switchboard.providers.base import Capabilities, InstanceStatus, OutgoingFile, ProviderTarget, Quote, SentMessage
from switchboard.providers.content import Content, Text, kind_of
from switchboard.providers.kinds import ProviderKind
from switchboard.routing.domain import DownstreamMapping, DownstreamTarget
from switchboard.routing.records import FinalStatus, OutboxEntry, Outcome

if TYPE_CHECKING:
    from switchboard.core.store import UnitOfWork

ALL_CALLS = Capabilities(calls=True, calls_per_instance_limit=True, calls_settings_webhook=True, calls_video=True)

# --- core: secrets, clock, backoff ----------------------------------------------------------------


class FakeSecrets:
    """`core.ports.Secrets`: values by name; a name without a value reads as `default(name)`.

    `read_only` fails the test on any write (a worker only reads); `failure` is raised by every
    read (the store is unavailable); `fresh_reads` counts reads that bypass the store's cache.
    """

    def __init__(
        self,
        values: dict[str, str] | None = None,
        *,
        prefix: str = "",
        default: Callable[[str], str] | None = None,
        read_only: bool = False,
        failure: Exception | None = None,
    ) -> None:
        self.values = dict(values or {})
        self.prefix = prefix
        self.default = default
        self.read_only = read_only
        self.failure = failure
        self.fresh_reads = 0

    def name(self, *parts: str) -> str:
        return "/".join([self.prefix, *parts] if self.prefix else parts)

    def get(self, name: str, *, fresh: bool = False) -> str:
        if self.failure is not None:
            raise self.failure
        self.fresh_reads += fresh
        if name in self.values or self.default is None:
            return self.values[name]
        return self.default(name)

    def put(self, name: str, value: str) -> None:
        assert not self.read_only, "a reader never writes secrets"
        self.values[name] = value

    def delete(self, name: str) -> None:
        assert not self.read_only, "a reader never deletes secrets"
        self.values.pop(name, None)


class FakeClock:
    """A monotonic clock that moves only when the test sets `now`."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeBackoff:
    """`core.ports.Backoff`: records each (receipt handle, delay)."""

    def __init__(self) -> None:
        self.delays: list[tuple[str, int]] = []

    def delay(self, receipt_handle: str, seconds: int) -> None:
        self.delays.append((receipt_handle, seconds))


# --- providers: the provider client and the targets -----------------------------------------------


@dataclass(frozen=True)
class Sent:
    instance: str  # the provider instance id
    token: str
    phone: str
    body: str
    key: str  # the idempotency key


class FakeProvider:
    """`providers.base.ProviderClient`: records sends; the call limit behaves like the contract.

    `failures[x]` lists errors raised by the next sends through provider instance `x`, or of the
    text `x`, or (`send_content`) of a content of kind `x` (`kind_of`: `image`, `location`, ...).
    `expected_token(target)`, when given, is the instance token every send must carry.
    `calls` logs the call-limit operations in order (`capabilities`, `post`, `status`); `parts`
    every send in order (`(phone, content or text, quoted, file)`), text or not.
    """

    def __init__(
        self, *, expected_token: Callable[[ProviderTarget], str] | None = None, limit: int = 1, version: int = 0
    ) -> None:
        self.sent: list[Sent] = []
        self.failures: dict[str, list[Exception]] = {}
        self.expected_token = expected_token
        self.limit = limit
        self.version = version
        self.capabilities_answer = ALL_CALLS
        self.post_failure: ProviderError | None = None
        self.applied_despite_failure = False
        self.status_failures: list[ProviderError] = []
        self.calls: list[str] = []
        self.parts: list[tuple[str, Any, Quote | None, OutgoingFile | None]] = []
        self._lock = threading.Lock()

    @property
    def bodies(self) -> list[str]:
        return [sent.body for sent in self.sent]

    def send_content(
        self,
        target: ProviderTarget,
        phone: str,
        content: Content,
        idempotency_key: str,
        *,
        quoted: Quote | None = None,
        file: OutgoingFile | None = None,
        uploaded: Any = None,
    ) -> SentMessage:
        with self._lock:
            pending = self.failures.get(target.provider_instance_id) or self.failures.get(kind_of(content))
            if pending:
                raise pending.pop(0)
            self.parts.append((phone, content, quoted, file))
            if isinstance(content, Text):
                token = target.instance_token or ""
                self.sent.append(Sent(target.provider_instance_id, token, phone, content.body, idempotency_key))
                return SentMessage(provider_message_id=f"wamid-{len(self.sent)}")
            return SentMessage(provider_message_id=f"wamid-{content.type}-{len(self.parts)}")

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        with self._lock:
            if self.expected_token is not None:
                assert target.instance_token == self.expected_token(target)
            pending = self.failures.get(target.provider_instance_id) or self.failures.get(body)
            if pending:
                raise pending.pop(0)
            token = target.instance_token or ""
            self.sent.append(Sent(target.provider_instance_id, token, phone, body, idempotency_key))
            self.parts.append((phone, body, None, None))
            return SentMessage(provider_message_id=f"wamid-{len(self.sent)}")

    def capabilities(self, target: ProviderTarget) -> Capabilities:
        self.calls.append("capabilities")
        return self.capabilities_answer

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        self.calls.append("status")
        if self.status_failures:
            raise self.status_failures.pop(0)
        return self._status()

    def set_call_settings(self, target: ProviderTarget, calls_max_concurrent: int) -> InstanceStatus:
        self.calls.append("post")
        if self.post_failure is not None and not self.applied_despite_failure:
            raise self.post_failure
        self.limit, self.version = calls_max_concurrent, self.version + 1
        if self.post_failure is not None:
            raise self.post_failure
        return self._status()

    def _status(self) -> InstanceStatus:
        return InstanceStatus(
            connected=True, kind="calls", calls_max_concurrent=self.limit, calls_config_version=self.version
        )


class FakeRevokingProvider(FakeProvider):
    """A `FakeProvider` whose kind deletes sent messages (`providers.base.MessageRevoker`):
    `revoked` lists `(phone, provider message id)`; `revoke_failures` the errors of the next ones."""

    def __init__(self) -> None:
        super().__init__()
        self.revoked: list[tuple[str, str]] = []
        self.revoke_failures: list[Exception] = []

    def revoke(self, target: ProviderTarget, phone: str, provider_message_id: str) -> None:
        if self.revoke_failures:
            raise self.revoke_failures.pop(0)
        self.revoked.append((phone, provider_message_id))


@dataclass
class FakeTargets:
    """`catalog.ports.Targets`: every instance is reached through `provider`, of kind `kind`."""

    provider: Any
    kind: ProviderKind = "wuzapi"

    def target_for(self, instance: Instance) -> tuple[Any, ProviderTarget]:
        target = ProviderTarget(
            kind=self.kind, base_url="http://127.0.0.1:1", provider_instance_id=instance.provider_instance_id
        )
        return self.provider, target


# --- catalog and audit ----------------------------------------------------------------------------


class FakeCatalog:
    """`catalog.ports.Instances` and the reconciler's `TenantCatalog`: the instances given, by key."""

    def __init__(self, instances: Iterable[Instance] = ()) -> None:
        self.instances = {item.key: item for item in instances}

    def find_instance(self, key: str) -> Instance | None:
        return self.instances.get(key)

    def get_instance(self, tenant: str, name: str) -> Instance:
        found = self.instances.get(instance_key(tenant, name))
        if found is None or found.tenant != tenant:
            raise NotFound("instance not found")
        return found

    def list_tenants(self) -> list[Tenant]:
        tags = sorted({item.tenant for item in self.instances.values()})
        return [Tenant(tenant=tag, owner_tag=tag, name=tag) for tag in tags]

    def list_instances(self, tenant: str) -> list[Instance]:
        return [item for item in self.instances.values() if item.tenant == tenant]


@dataclass
class FakeAudit:
    """`audit.ports.Audit`: records (action, before, after)."""

    records: list[tuple[str, Any, Any]] = field(default_factory=list)

    def record(self, principal: Any, action: str, target: str, before: Any = None, after: Any = None) -> None:
        self.records.append((action, before, after))


# --- messages -------------------------------------------------------------------------------------


class FakeMessages:
    """`messages.ports.Messages` for the send worker: claims, leases and affinities in memory; the
    spam guard's history a send keeps goes to `spam_history` (shared with the guard under test)."""

    def __init__(self) -> None:
        self.items: dict[str, Message] = {}
        self.affinities: dict[tuple[str, str], Affinity] = {}
        self.spam_history = FakeSpamHistory()
        self.counted: list[str] = []  # the instance each SENT record counted the message on

    def create(self, message: Message, *, joined: Callable[[UnitOfWork], None] | None = None) -> None:
        if joined is not None:  # a write joined to another capability's is tested on moto, not here
            raise TypeError("FakeMessages joins no unit of work: use the repository on moto")
        if message.id in self.items:
            raise AlreadyExists("message already exists")
        self.items[message.id] = message

    def get(self, tenant: str, message_id: str) -> Message:
        stored = self.items.get(message_id)
        if stored is None or stored.tenant != tenant:
            raise NotFound("message not found")
        return stored

    def claim(
        self, message_id: str, tenant: str, token: str, lease_seconds: int, wake: str | None = None
    ) -> Message | None:
        stored = self.items.get(message_id)
        if stored is None:
            return None
        woken = wake is not None and stored.status is MessageStatus.WAITING and stored.wake_token == wake
        if stored.status is not MessageStatus.QUEUED and not woken:
            return None  # final, SENDING under a live lease (fakes never let one expire), or WAITING for another job
        claimed = stored.model_copy(update={"status": MessageStatus.SENDING, "lease_token": token})
        self.items[message_id] = claimed
        return claimed

    def claim_in_flight(
        self,
        message_id: str,
        tenant: str,
        token: str,
        lease_seconds: int,
        *,
        route: PendingRoute,
        wake: str | None = None,
    ) -> Claim | None:
        """As the repository: marked in flight only when no earlier attempt left a route pending or in flight."""
        claimed = self.claim(message_id, tenant, token, lease_seconds, wake)
        if claimed is None:
            return None
        if claimed.in_flight is not None or claimed.pending is not None:
            return Claim(message=claimed, marked=False)
        marked = claimed.model_copy(update={"in_flight": route})
        self.items[message_id] = marked
        return Claim(message=marked, marked=True)

    def affinity(self, tenant: str, recipient: str) -> Affinity | None:
        return self.affinities.get((tenant, recipient))

    def _queued(self, message: Message) -> Message:
        stored = self.items[message.id]
        if stored.status is not MessageStatus.SENDING or stored.lease_token != message.lease_token:
            raise AlreadyFinal("not held")
        return stored.model_copy(update={"in_flight": None})  # every recorded outcome ends the send in flight

    def record_in_flight(self, message: Message, route: PendingRoute) -> Message:
        marked = self._queued(message).model_copy(update={"in_flight": route})
        self.items[message.id] = marked
        return marked

    def record_sent(
        self,
        message: Message,
        *,
        number_id: str,
        source_number: str,
        instance: str | None,
        provider_id: str,
        provider_message_id: str,
        events: list[TraceEvent],
        remember_affinity: bool,
        spam_history: KeptTexts | None = None,
        counted_on: Instance | None = None,
        sent_as: SentAs | None = None,
    ) -> Message:
        stored = self._queued(message)
        sent = stored.model_copy(
            update={
                "sent_as": sent_as or stored.sent_as,
                "number_id": number_id,
                "source_number": source_number,
                "instance": instance,
                "provider_id": provider_id,
                "provider_message_id": provider_message_id,
                "status": MessageStatus.SENT,
                "lease_token": None,
                "sent_at": utcnow(),
                "attempts": stored.attempts + 1,
                "pending": None,
                "trace": [*stored.trace, *events],
            }
        )
        self.items[message.id] = sent
        if remember_affinity:
            # Like the repository's update: who the recipient wrote to (`heard`) stays.
            known = self.affinities.get((message.tenant, message.to))
            self.affinities[(message.tenant, message.to)] = Affinity(
                number_id=number_id,
                number=source_number,
                sent_at=utcnow(),
                heard=known.heard if known is not None else {},
            )
        if spam_history is not None:
            kept = spam_history
            self.spam_history.replace(kept.instance, kept.recipient, list(kept.texts), kept.expires_at)
        if counted_on is not None:
            self.counted.append(counted_on.name)  # joins the SENT record, as the repository's usage
        return sent

    def record_failed(self, message: Message, reason: str, events: list[TraceEvent]) -> Message:
        stored = self._queued(message)
        failed = stored.model_copy(
            update={
                "status": MessageStatus.FAILED,
                "lease_token": None,
                "failure_reason": reason,
                "attempts": stored.attempts + 1,
                "trace": [*stored.trace, *events],
            }
        )
        self.items[message.id] = failed
        return failed

    def record_waiting(self, message: Message, next_check_at: datetime, events: list[TraceEvent]) -> Message:
        """As the repository records WAITING: the first wait counts an attempt and appends its
        trace (only the job carrying `wake_token` claims it back)."""
        stored = self._queued(message)
        first = stored.wait_checks == 0
        waiting = stored.model_copy(
            update={
                "status": MessageStatus.WAITING,
                "wake_token": stored.lease_token,
                "lease_token": None,
                "next_check_at": next_check_at,
                "wait_checks": stored.wait_checks + 1,
                "attempts": stored.attempts + (1 if first else 0),
                "trace": [*stored.trace, *events],
            }
        )
        self.items[message.id] = waiting
        return waiting

    def record_retry(
        self, message: Message, error_code: str, events: list[TraceEvent], pending: PendingRoute | None
    ) -> None:
        stored = self._queued(message)
        self.items[message.id] = stored.model_copy(
            update={
                "status": MessageStatus.QUEUED,
                "lease_token": None,
                "attempts": stored.attempts + 1,
                "last_error": error_code,
                "pending": pending or stored.pending,
                "trace": [*stored.trace, *events],
            }
        )


class FakeNotifier:
    """The send worker's `StatusNotifier` (client webhooks): records (message id, status, webhook URL)."""

    def __init__(self) -> None:
        self.changes: list[tuple[str, MessageStatus, str | None]] = []

    def message_changed(self, message: Message, webhook_url: str | None) -> None:
        self.changes.append((message.id, message.status, webhook_url))


class FakeTickets:
    """The round-robin counter: 1, 2, 3, ... (`plan_numbers` calls it; the worker asks `next_ticket`)."""

    def __init__(self) -> None:
        self.value = 0

    def __call__(self) -> Ticket:
        self.value += 1
        return Ticket(self.value)

    def next_ticket(self, api_key_id: str) -> Ticket:
        return self()


# --- usage ----------------------------------------------------------------------------------------


class FakeUsage:
    """The send worker's `Usage`: the metric of each sent message (instance name); the count
    itself joins the SENT record (`FakeMessages.counted`)."""

    def __init__(self) -> None:
        self.sent_on: list[str] = []

    def record(self, uow: UnitOfWork, instance: Instance, when: datetime) -> None:
        raise AssertionError("the fake messages' SENT record counts the message itself")

    def sent(self, instance: Instance) -> None:
        self.sent_on.append(instance.name)


class FakeUsageStore:
    """`usage.service.UsageStore`: records each count id; no month has usage."""

    def __init__(self) -> None:
        self.counted: list[str | None] = []

    def add(self, instance: Instance, day: Any, direction: str, count_id: str | None, now: datetime) -> bool:
        self.counted.append(count_id)
        return True

    def month(self, owner_tag: str | None, month: str) -> list[Any]:
        return []


# --- call limit and calls -------------------------------------------------------------------------


class FakeLines:
    """`lines.service.Lines`: the snapshot rule applied in memory."""

    def __init__(self) -> None:
        self.lines: dict[str, Line] = {}

    def get(self, tenant: str, instance_name: str) -> Line | None:
        return self.lines.get(instance_key(tenant, instance_name))

    def apply_snapshot(self, tenant: str, instance_name: str, snapshot: Snapshot) -> SnapshotResult:
        line = self.lines.get(instance_key(tenant, instance_name)) or Line(instance=instance_name, tenant=tenant)
        verdict = judge(line.limit, line.version, line.conflict, snapshot)
        before = line.limit
        if verdict in (Verdict.REPLACE, Verdict.RESOLVE):
            version = line.version if snapshot.version is None else snapshot.version
            line = line.model_copy(update={"limit": snapshot.limit, "version": version, "conflict": False})
        elif verdict is Verdict.CONFLICT:
            line = line.model_copy(update={"conflict": True})
        self.lines[instance_key(tenant, instance_name)] = line
        changed = verdict is Verdict.REPLACE or (verdict is Verdict.RESOLVE and before != snapshot.limit)
        return SnapshotResult(verdict=verdict, line=line, changed=changed)


@dataclass
class FakePublisher:
    """`lines.service.Publisher`: records (detail type, detail)."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def publish(self, detail_type: str, detail: dict[str, Any]) -> bool:
        self.events.append((detail_type, detail))
        return True


class FakeReconcileQueue:
    """`calls.ports.ReconcileRequests` and the scheduler's `Queue`: records requests and batches."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.delays: list[list[int]] = []
        self.requested: list[str] = []

    def send_batch(self, instance_names: list[str], delays: list[int] | None = None) -> int:
        self.batches.append(list(instance_names))
        self.delays.append(list(delays or [0] * len(instance_names)))
        return len(instance_names)

    def request(self, instance: str, delay_seconds: int = 0) -> None:
        self.requested.append(instance)


# --- routing --------------------------------------------------------------------------------------


class FakeConnectionStates:
    """`connection_state.service.States` of one instance: ordered events by seq, reads by revision."""

    def __init__(self, state: InstanceState = "DISCONNECTED") -> None:
        self.state: InstanceState = state
        self.seq: int | None = None
        self.rev = 0
        self.reads: list[InstanceState] = []  # the states status reads wrote

    def apply_event(self, key: str, state: InstanceState, seq: int, at: datetime) -> StateWrite:
        if self.seq is not None and seq <= self.seq:
            return StateWrite(written=False)
        previous, self.state, self.seq = self.state, state, seq
        self.rev += 1
        return StateWrite(written=True, previous=previous)

    def apply_read(self, key: str, state: InstanceState, before: StoredState, at: datetime) -> StateWrite:
        if before.rev != self.rev:
            return StateWrite(written=False)
        previous, self.state = self.state, state
        self.rev += 1
        self.reads.append(state)
        return StateWrite(written=True, previous=previous)

    def stored(self, key: str) -> StoredState | None:
        return StoredState(state=self.state, rev=self.rev)


class FakeMappingStore:
    """`routing.service.MappingReads`, and the mappings it reads: each change moves the version
    stamp; counts mapping reads."""

    def __init__(self) -> None:
        self.mappings: dict[str, DownstreamMapping] = {}
        self.stamp = 0
        self.mapping_reads = 0

    def version(self) -> int:
        return self.stamp

    def get_mapping(self, owner_tag: str) -> DownstreamMapping | None:
        self.mapping_reads += 1
        return self.mappings.get(owner_tag)

    def change(self, mapping: DownstreamMapping) -> None:
        self.mappings[mapping.owner_tag] = mapping
        self.stamp += 1

    def list_mappings(self) -> list[DownstreamMapping]:
        return list(self.mappings.values())

    def delete_mapping(self, owner_tag: str) -> None:
        self.mappings.pop(owner_tag)
        self.stamp += 1


class FakeForwardAttempts:
    """`routing.forwarder.ForwardAttempts`: the first start of each event id."""

    def __init__(self) -> None:
        self.started: dict[str, datetime] = {}

    def begin(self, message: Any, at: datetime) -> datetime | None:
        earlier = self.started.setdefault(message.event_id, at)
        return None if earlier is at else earlier


class FakeMessageLinks:
    """`routing.domain.MessageLinks` in memory: the first link of each key stands."""

    def __init__(self) -> None:
        self.by_provider: dict[tuple[str, str], Any] = {}
        self.by_downstream: dict[tuple[str, int], Any] = {}

    def link(self, link: Any) -> None:
        self.by_provider.setdefault((link.instance, link.provider_message_id), link)
        self.by_downstream.setdefault((link.instance, link.downstream_message_id), link)

    def by_provider_id(self, instance: str, provider_message_id: str) -> Any:
        return self.by_provider.get((instance, provider_message_id))

    def by_downstream_id(self, instance: str, downstream_message_id: int) -> Any:
        return self.by_downstream.get((instance, downstream_message_id))


class FakeMedia:
    """`routing.forwarder.ForwardMedia`: each message's file by its provider id, or the error its
    fetch raises (once per item of `errors`, then the file); `resolved` counts the fetches."""

    def __init__(self, stored: dict[str, tuple[Any, bytes]] | None = None) -> None:
        self.stored = dict(stored or {})  # provider message id -> (MediaRef, bytes)
        self.errors: dict[str, list[Exception]] = {}
        self.resolved: list[str] = []
        self.deadlines: list[Any] = []  # the deadline each fetch was given

    def resolve(
        self, owner_tag: str | None, instance: str, message_id: str, media: Any, *, deadline: Any = None
    ) -> Any:
        self.resolved.append(message_id)
        self.deadlines.append(deadline)
        pending = self.errors.get(message_id)
        if pending:
            raise pending.pop(0)
        return self.stored[message_id][0]

    def read(self, ref: Any) -> bytes:
        return next(data for stored, data in self.stored.values() if stored == ref)


@dataclass
class FakeDownstreams:
    """`routing.outbox.Downstreams`: every owner tag resolves to `target`."""

    target: DownstreamTarget | None

    def target_for(self, owner_tag: str | None) -> DownstreamTarget | None:
        return self.target


class FakeDownstreamClient:
    """`routing.domain.DownstreamClient` for the outbox: records private notes (conversation, text)."""

    def __init__(self) -> None:
        self.notes: list[tuple[int, str]] = []

    def post_incoming(self, target: DownstreamTarget, message: Any, post: Any, *, earlier_attempt: Any = None) -> Any:
        raise AssertionError("not used")

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        self.notes.append((conversation_id, text))


class FakeOutboxStore:
    """`routing.outbox.OutboxStore`: entries in arrival order, outcomes by message id."""

    def __init__(self) -> None:
        self.entries: list[OutboxEntry] = []
        self.outcomes: dict[str, Outcome] = {}

    def enqueue(self, entry: OutboxEntry) -> bool:
        if entry.message_id in self.outcomes:
            return False
        self.entries.append(entry)
        self.outcomes[entry.message_id] = Outcome(status="PENDING")
        return True

    def waiting(self, instance: str, limit: int) -> list[OutboxEntry]:
        return [entry for entry in self.entries if entry.instance == instance][:limit]

    def instances_waiting(self) -> list[str]:
        return sorted({entry.instance for entry in self.entries})

    def claim(self, entry: OutboxEntry, now: datetime, lease_seconds: int) -> OutboxEntry | None:
        index = self._index(entry)
        return None if index is None else self.entries[index]

    def begin_part(self, entry: OutboxEntry) -> bool:
        index = self._index(entry)
        if index is None or self.entries[index].parts_sent != entry.parts_sent:
            return False
        self.entries[index] = self.entries[index].model_copy(update={"in_flight": entry.parts_sent})
        return True

    def advance(
        self,
        entry: OutboxEntry,
        parts_sent: int,
        part_chars: int,
        now: datetime,
        lease_seconds: int,
        *,
        provider_message_id: str | None = None,
    ) -> bool:
        index = self._index(entry)
        if index is None or self.entries[index].parts_sent != parts_sent - 1:
            return False
        sent = [*self.entries[index].sent_ids, *([provider_message_id] if provider_message_id else [])]
        self.entries[index] = self.entries[index].model_copy(
            update={"parts_sent": parts_sent, "part_chars": part_chars, "in_flight": None, "sent_ids": sent}
        )
        return True

    def release(self, entry: OutboxEntry) -> None:
        index = self._index(entry)
        if index is not None:
            self.entries[index] = self.entries[index].model_copy(update={"in_flight": None})

    def finish(
        self, entry: OutboxEntry, status: FinalStatus, reason: str | None, provider_message_id: str | None
    ) -> bool:
        index = self._index(entry)
        if index is None:
            return False
        stored = self.entries.pop(index)
        sent = [*stored.sent_ids, *([provider_message_id] if provider_message_id else [])]
        self.outcomes[entry.message_id] = Outcome(
            status=status, reason=reason, provider_message_id=provider_message_id, provider_message_ids=sent
        )
        return True

    def outcome(self, instance: str, message_id: str) -> Outcome | None:
        return self.outcomes.get(message_id)

    def mark_revoked(self, instance: str, message_id: str, at: datetime) -> bool:
        known = self.outcomes.get(message_id)
        if known is None or known.revoked:
            return False
        self.outcomes[message_id] = known.model_copy(update={"revoked": True})
        return True

    def _index(self, entry: OutboxEntry) -> int | None:
        """Where the entry is, whatever its progress (an entry is known by instance and message id)."""
        for index, stored in enumerate(self.entries):
            if (stored.instance, stored.message_id) == (entry.instance, entry.message_id):
                return index
        return None

    def set_webhook_digest(self, tenant: str, instance: str, digest: str, hint: str, at: datetime) -> None:
        return None

    def webhook_digest(self, tenant: str, instance: str) -> str | None:
        return None


class FakeCredentials:
    """A provider's secrets as a kind's webhook check sees them; counts what was read."""

    def __init__(
        self,
        webhook_secret: str | None = None,
        verify_token: str | None = None,
        tokens: dict[str, str] | None = None,
    ) -> None:
        self._webhook_secret = webhook_secret
        self._verify_token = verify_token
        self._tokens = tokens or {}
        self.secret_reads = 0
        self.token_reads: list[str] = []

    def webhook_secret(self) -> str | None:
        self.secret_reads += 1
        return self._webhook_secret

    def verify_token(self) -> str | None:
        return self._verify_token

    def instance_token(self, binding: str) -> str | None:
        self.token_reads.append(binding)
        return self._tokens.get(binding)


class FakeSpamHistory:
    """`messages.spam_guard.SpamHistory` in memory: (instance key, recipient) -> texts, newest
    first, and how many times it was read (`reads`)."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], tuple[list[SentText], datetime]] = {}
        self.reads = 0

    def recent(self, instance: str, recipient: str) -> list[SentText]:
        self.reads += 1
        texts, _ = self.items.get((instance, recipient), ([], None))
        return list(texts)

    def replace(self, instance: str, recipient: str, texts: list[SentText], expires_at: datetime) -> None:
        self.items[(instance, recipient)] = (list(texts), expires_at)

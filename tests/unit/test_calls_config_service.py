"""CallsConfigService with in-memory fakes: the set-limit flow, notify after commit, webhook effects."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from switchboard.call_limit.domain import Line, Snapshot, SnapshotResult, Verdict, judge
from switchboard.call_limit.service import CONFIG_CHANGED, CallsConfigService, CapabilitiesCache
from switchboard.catalog.domain import Instance, Principal, Scope
from switchboard.core.bus import EventPublisher
from switchboard.core.errors import (
    NotCallsInstance,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    UnsupportedByProvider,
)
from switchboard.providers.base import Capabilities, InstanceStatus, ProviderTarget
from switchboard.webhooks.events import ProviderEvent

ADMIN = Principal(tenant="acme", key_id="key_1", scopes=frozenset({Scope.ADMIN}))
ALL_CALLS = Capabilities(calls=True, calls_per_instance_limit=True, calls_settings_webhook=True, calls_video=True)


def make_instance(kind: str = "calls") -> Instance:
    return Instance(
        tenant="acme",
        name="acme-calls",
        provider_id="prv_1",
        provider_instance_id="i-1",
        number_id="num_1",
        kind=kind,  # type: ignore[arg-type]
        token_hint="…",
    )


class InMemoryLines:
    """The line repository's contract, with the rule applied in memory."""

    def __init__(self) -> None:
        self.lines: dict[str, Line] = {}

    def get(self, instance_name: str) -> Line | None:
        return self.lines.get(instance_name)

    def apply_snapshot(self, instance_name: str, tenant: str, snapshot: Snapshot) -> SnapshotResult:
        line = self.lines.get(instance_name) or Line(instance=instance_name, tenant=tenant)
        verdict = judge(line.limit, line.version, line.conflict, snapshot)
        before = line.limit
        if verdict in (Verdict.REPLACE, Verdict.RESOLVE):
            version = line.version if snapshot.version is None else snapshot.version
            line = line.model_copy(update={"limit": snapshot.limit, "version": version, "conflict": False})
        elif verdict is Verdict.CONFLICT:
            line = line.model_copy(update={"conflict": True})
        self.lines[instance_name] = line
        changed = verdict is Verdict.REPLACE or (verdict is Verdict.RESOLVE and before != snapshot.limit)
        return SnapshotResult(verdict=verdict, line=line, changed=changed)


@dataclass
class FakeProvider:
    """A provider whose limit and version behave like the contract; failures are scripted."""

    limit: int = 1
    version: int = 0
    capabilities_answer: Capabilities = field(default_factory=lambda: ALL_CALLS)
    post_failure: ProviderError | None = None
    applied_despite_failure: bool = False
    status_failures: list[ProviderError] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

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


@dataclass
class FakeTargets:
    provider: FakeProvider

    def target_for(self, instance: Instance) -> tuple[Any, ProviderTarget]:
        target = ProviderTarget(kind="wuzapi", base_url="http://127.0.0.1:1", provider_instance_id="i-1")
        return self.provider, target


@dataclass
class FakeInstances:
    instance: Instance

    def get_instance(self, tenant: str, name: str) -> Instance:
        assert tenant == self.instance.tenant
        return self.instance


@dataclass
class FakePublisher:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def publish(self, detail_type: str, detail: dict[str, Any]) -> bool:
        self.events.append((detail_type, detail))
        return True


@dataclass
class FakeAudit:
    records: list[tuple[str, Any, Any]] = field(default_factory=list)

    def record(self, principal: Any, action: str, target: str, before: Any = None, after: Any = None) -> None:
        self.records.append((action, before, after))


@dataclass
class World:
    service: CallsConfigService
    provider: FakeProvider
    lines: InMemoryLines
    publisher: FakePublisher
    audit: FakeAudit
    instance: Instance


@pytest.fixture
def world() -> World:
    return build_world()


def build_world(kind: str = "calls", clock: Any = None) -> World:
    provider, lines, publisher, audit = FakeProvider(), InMemoryLines(), FakePublisher(), FakeAudit()
    instance = make_instance(kind)
    cache = CapabilitiesCache(ttl_seconds=60, clock=clock) if clock else CapabilitiesCache()
    service = CallsConfigService(
        FakeInstances(instance), lines, FakeTargets(provider), capabilities=cache, publisher=publisher, audit=audit
    )
    return World(service, provider, lines, publisher, audit, instance)


def event(instance: Instance, name: str, data: dict[str, Any], summary: dict[str, Any] | None = None) -> ProviderEvent:
    return ProviderEvent(
        provider_id="prv_1",
        instance=instance,
        name=name,
        event_id="e-1",
        seq=1,
        data=data,
        envelope_instance=summary,
        received_at=datetime.now(UTC),
    )


# --- setting the limit -----------------------------------------------------------------------


def test_set_limit_posts_once_applies_the_answer_reads_the_status_and_notifies_once(world: World) -> None:
    overview = world.service.set_limit(ADMIN, "acme-calls", 3)

    assert world.provider.calls == ["capabilities", "post", "status"]
    assert overview.line is not None and (overview.line.limit, overview.line.version) == (3, 1)
    assert world.publisher.events == [
        (
            CONFIG_CHANGED,
            {
                "instance": "acme-calls",
                "tenant": "acme",
                "limit": 3,
                "version": "1",
                "updatedAt": None,
                "source": "post",
            },
        )
    ]
    [(action, before, after)] = world.audit.records
    assert action == "calls_limit.updated"
    assert (before["limit"], after["limit"], after["version"]) == (None, 3, "1")


def test_a_refused_post_saves_nothing_notifies_nobody_and_reads_no_status(world: World) -> None:
    world.provider.post_failure = ProviderUnavailable("down", status=500, provider_code="internal")

    with pytest.raises(ProviderUnavailable) as failure:
        world.service.set_limit(ADMIN, "acme-calls", 3)

    assert failure.value.details == {"providerStatus": 500, "providerCode": "internal"}
    assert world.provider.calls == ["capabilities", "post"]
    assert world.lines.lines == {} and world.publisher.events == [] and world.audit.records == []


def test_a_lost_answer_is_settled_by_one_status_read_never_by_a_second_post(world: World) -> None:
    world.provider.post_failure = ProviderTimeout("no answer")
    world.provider.applied_despite_failure = True

    overview = world.service.set_limit(ADMIN, "acme-calls", 4)

    assert world.provider.calls == ["capabilities", "post", "status"]
    assert overview.line is not None and (overview.line.limit, overview.line.version) == (4, 1)
    assert [detail["source"] for _, detail in world.publisher.events] == ["status"]


def test_a_timeout_not_applied_is_reported_with_what_the_provider_holds(world: World) -> None:
    world.provider.post_failure = ProviderTimeout("no answer")

    with pytest.raises(ProviderTimeout) as failure:
        world.service.set_limit(ADMIN, "acme-calls", 4)

    assert failure.value.details == {"limit": 1, "version": "0"}
    assert world.provider.calls.count("post") == 1


def test_a_timeout_with_an_unreadable_status_is_the_original_timeout(world: World) -> None:
    world.provider.post_failure = ProviderTimeout("no answer")
    world.provider.status_failures = [ProviderUnavailable("down")]

    with pytest.raises(ProviderTimeout, match="no answer"):
        world.service.set_limit(ADMIN, "acme-calls", 4)
    assert world.provider.calls.count("post") == 1


def test_a_failed_status_read_after_a_saved_limit_keeps_the_post_answer(world: World) -> None:
    world.provider.status_failures = [ProviderUnavailable("down")]

    overview = world.service.set_limit(ADMIN, "acme-calls", 2)

    assert overview.line is not None and (overview.line.limit, overview.line.version) == (2, 1)


@pytest.mark.parametrize(
    ("capabilities", "limit", "missing"),
    [
        (Capabilities(), 2, ["calls", "calls_per_instance_limit"]),
        (Capabilities(calls=True), 2, ["calls_per_instance_limit"]),
        (ALL_CALLS.model_copy(update={"calls_max": 4}), 5, None),
    ],
)
def test_what_the_server_does_not_announce_is_refused_before_any_post(
    world: World, capabilities: Capabilities, limit: int, missing: list[str] | None
) -> None:
    world.provider.capabilities_answer = capabilities

    with pytest.raises(UnsupportedByProvider) as refused:
        world.service.set_limit(ADMIN, "acme-calls", limit)

    assert "post" not in world.provider.calls
    assert refused.value.details.get("missing") == missing


def test_a_messages_instance_has_no_call_limit() -> None:
    world = build_world(kind="messages")

    with pytest.raises(NotCallsInstance):
        world.service.set_limit(ADMIN, "acme-calls", 2)
    assert world.provider.calls == []


def test_capabilities_are_cached_per_server_for_a_short_time() -> None:
    now = [0.0]
    world = build_world(clock=lambda: now[0])

    world.service.capabilities(world.instance)
    world.service.capabilities(world.instance)
    now[0] = 61.0
    world.service.capabilities(world.instance)

    assert world.provider.calls.count("capabilities") == 2


# --- webhook effects ---------------------------------------------------------------------------


def test_call_settings_applies_its_snapshot_and_notifies(world: World) -> None:
    data = {"kind": "calls", "callsMaxConcurrent": 2, "callsConfigVersion": 3, "updatedAt": "2026-11-30T10:00:00Z"}

    world.service.on_call_settings(event(world.instance, "call_settings", data))
    world.service.on_call_settings(event(world.instance, "call_settings", data))  # a redelivery

    line = world.lines.get("acme-calls")
    assert line is not None and (line.limit, line.version) == (2, 3)
    assert len(world.publisher.events) == 1
    assert world.provider.calls == []


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "calls", "callsMaxConcurrent": "2", "callsConfigVersion": 3},
        {"kind": "calls", "callsMaxConcurrent": 2.0, "callsConfigVersion": 3},
        {"kind": "calls", "callsMaxConcurrent": 9, "callsConfigVersion": 3},
        {"kind": "calls", "callsMaxConcurrent": 2, "callsConfigVersion": "3"},
        {"kind": "calls", "callsMaxConcurrent": 2, "callsConfigVersion": -1},
        {"kind": "messages", "callsMaxConcurrent": 2, "callsConfigVersion": 3},
        {"callId": "c-1"},
    ],
)
def test_a_malformed_call_settings_event_changes_nothing(world: World, data: dict[str, Any]) -> None:
    world.service.on_call_settings(event(world.instance, "call_settings", data))

    assert world.lines.lines == {} and world.publisher.events == []


def test_a_conflicting_event_is_settled_inline_by_the_status(world: World) -> None:
    world.provider.limit, world.provider.version = 2, 3
    world.service.refresh_from_status(world.instance)
    conflicting = {"kind": "calls", "callsMaxConcurrent": 6, "callsConfigVersion": 3}

    world.service.on_call_settings(event(world.instance, "call_settings", conflicting))

    line = world.lines.get("acme-calls")
    assert line is not None and (line.limit, line.version, line.conflict) == (2, 3, False)
    assert world.provider.calls == ["status", "status"]


def test_a_conflict_stays_flagged_when_the_provider_cannot_be_read(world: World) -> None:
    world.provider.limit, world.provider.version = 2, 3
    world.service.refresh_from_status(world.instance)
    world.provider.status_failures = [ProviderUnavailable("down")]

    world.service.on_call_settings(
        event(world.instance, "call_settings", {"kind": "calls", "callsMaxConcurrent": 6, "callsConfigVersion": 3})
    )

    line = world.lines.get("acme-calls")
    assert line is not None and (line.limit, line.conflict) == (2, True)


def test_a_connection_event_with_the_config_applies_it_without_asking_the_provider(world: World) -> None:
    summary = {"kind": "calls", "callsMaxConcurrent": 5, "callsConfigVersion": 9}

    world.service.on_connection(event(world.instance, "connection", {"connected": True}, summary))

    line = world.lines.get("acme-calls")
    assert line is not None and (line.limit, line.version) == (5, 9)
    assert world.provider.calls == []


@pytest.mark.parametrize("summary", [None, {"kind": "calls"}, {"kind": "calls", "callsMaxConcurrent": "x"}])
def test_a_connection_event_without_the_config_keeps_the_limit_and_reads_the_status(
    world: World, summary: dict[str, Any] | None
) -> None:
    world.lines.apply_snapshot("acme-calls", "acme", Snapshot(limit=2, version=1, source="post"))
    world.provider.limit, world.provider.version = 4, 2

    world.service.on_connection(event(world.instance, "connection", {"connected": True}, summary))

    line = world.lines.get("acme-calls")
    assert line is not None and (line.limit, line.version) == (4, 2)
    assert world.provider.calls == ["status"]


def test_events_of_a_messages_instance_are_not_calls_effects() -> None:
    world = build_world(kind="messages")
    summary = {"kind": "messages"}

    world.service.on_connection(event(world.instance, "connection", {"connected": True}, summary))
    world.service.on_call_settings(
        event(world.instance, "call_settings", {"kind": "calls", "callsMaxConcurrent": 2, "callsConfigVersion": 1})
    )

    assert world.lines.lines == {} and world.provider.calls == []


# --- publishing after the commit -----------------------------------------------------------------


class FailingEvents:
    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.answer = answer

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        if self.answer is None:
            raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "PutEvents")
        return self.answer


@pytest.mark.parametrize(
    "events_client",
    [FailingEvents(), FailingEvents({"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure"}]})],
)
def test_a_failed_publish_is_logged_and_never_raised(events_client: FailingEvents) -> None:
    assert EventPublisher(events_client, "bus").publish(CONFIG_CHANGED, {"instance": "x"}) is False


def test_without_a_bus_nothing_is_published() -> None:
    assert EventPublisher(FailingEvents(), None).publish(CONFIG_CHANGED, {"instance": "x"}) is False

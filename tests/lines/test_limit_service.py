"""CallsConfigService with in-memory fakes: the set-limit flow, notify after commit, webhook effects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from botocore.exceptions import ClientError

from switchboard.catalog.domain import Instance
from switchboard.catalog.events import ProviderEvent
from switchboard.core.bus import EventPublisher
from switchboard.core.errors import (
    NotCallsInstance,
    ProviderTimeout,
    ProviderUnavailable,
    UnsupportedByProvider,
)
from switchboard.lines.domain import Snapshot
from switchboard.lines.service import CONFIG_CHANGED, CallsConfigService, CapabilitiesCache
from switchboard.providers.base import Capabilities
from tools.support.builders import admin, instance, provider_event
from tools.support.fakes import (
    ALL_CALLS,
    FakeAudit,
    FakeCatalog,
    FakeClock,
    FakeLines,
    FakeProvider,
    FakePublisher,
    FakeTargets,
)

ADMIN = admin()


@dataclass
class World:
    service: CallsConfigService
    provider: FakeProvider
    lines: FakeLines
    publisher: FakePublisher
    audit: FakeAudit
    instance: Instance


@pytest.fixture
def world() -> World:
    return new_world()


def new_world(kind: str = "calls", clock: Any = None) -> World:
    provider, lines, publisher, audit = FakeProvider(), FakeLines(), FakePublisher(), FakeAudit()
    target = instance("acme-calls", kind=kind, provider_instance_id="i-1")
    cache = CapabilitiesCache(ttl_seconds=60, clock=clock) if clock else CapabilitiesCache()
    service = CallsConfigService(
        FakeCatalog([target]), lines, FakeTargets(provider), capabilities=cache, publisher=publisher, audit=audit
    )
    return World(service, provider, lines, publisher, audit, target)


def event(target: Instance, name: str, data: dict[str, Any], summary: dict[str, Any] | None = None) -> ProviderEvent:
    return provider_event(target, name, data, seq=1, event_id="e-1", envelope_instance=summary)


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
    world = new_world(kind="messages")

    with pytest.raises(NotCallsInstance):
        world.service.set_limit(ADMIN, "acme-calls", 2)
    assert world.provider.calls == []


def test_capabilities_are_cached_per_server_for_a_short_time() -> None:
    clock = FakeClock(0.0)
    world = new_world(clock=clock)

    world.service.capabilities(world.instance)
    world.service.capabilities(world.instance)
    clock.now = 61.0
    world.service.capabilities(world.instance)

    assert world.provider.calls.count("capabilities") == 2


# --- webhook effects ---------------------------------------------------------------------------


def test_call_settings_applies_its_snapshot_and_notifies(world: World) -> None:
    data = {"kind": "calls", "callsMaxConcurrent": 2, "callsConfigVersion": 3, "updatedAt": "2026-11-30T10:00:00Z"}

    world.service.on_call_settings(event(world.instance, "call_settings", data))
    world.service.on_call_settings(event(world.instance, "call_settings", data))  # a redelivery

    line = world.lines.get("acme", "acme-calls")
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

    line = world.lines.get("acme", "acme-calls")
    assert line is not None and (line.limit, line.version, line.conflict) == (2, 3, False)
    assert world.provider.calls == ["status", "status"]


def test_a_conflict_stays_flagged_when_the_provider_cannot_be_read(world: World) -> None:
    world.provider.limit, world.provider.version = 2, 3
    world.service.refresh_from_status(world.instance)
    world.provider.status_failures = [ProviderUnavailable("down")]

    world.service.on_call_settings(
        event(world.instance, "call_settings", {"kind": "calls", "callsMaxConcurrent": 6, "callsConfigVersion": 3})
    )

    line = world.lines.get("acme", "acme-calls")
    assert line is not None and (line.limit, line.conflict) == (2, True)


def test_a_connection_event_with_the_config_applies_it_without_asking_the_provider(world: World) -> None:
    summary = {"kind": "calls", "callsMaxConcurrent": 5, "callsConfigVersion": 9}

    world.service.on_connection(event(world.instance, "connection", {"connected": True}, summary))

    line = world.lines.get("acme", "acme-calls")
    assert line is not None and (line.limit, line.version) == (5, 9)
    assert world.provider.calls == []


@pytest.mark.parametrize("summary", [None, {"kind": "calls"}, {"kind": "calls", "callsMaxConcurrent": "x"}])
def test_a_connection_event_without_the_config_keeps_the_limit_and_reads_the_status(
    world: World, summary: dict[str, Any] | None
) -> None:
    world.lines.apply_snapshot("acme", "acme-calls", Snapshot(limit=2, version=1, source="post"))
    world.provider.limit, world.provider.version = 4, 2

    world.service.on_connection(event(world.instance, "connection", {"connected": True}, summary))

    line = world.lines.get("acme", "acme-calls")
    assert line is not None and (line.limit, line.version) == (4, 2)
    assert world.provider.calls == ["status"]


def test_events_of_a_messages_instance_are_not_calls_effects() -> None:
    world = new_world(kind="messages")
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

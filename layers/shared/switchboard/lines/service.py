"""The per-instance call limit: set it at the provider, and keep our copy in step with every snapshot.

Every source (the answer of our POST, a GET status, a `call_settings` event, a `connection`
event) goes through `apply`, which stores it with the one snapshot rule (see
`switchboard.lines.domain`) and, only when the stored limit or version moved, publishes
`connection.calls.config.changed` after the commit.

Conflicts (an equal version with another value) are settled by a fresh GET status by whoever
applied the snapshot: `set_limit` always reads the status after its POST, and the webhook
handlers read it inline (one GET, rare); if that read fails the flag stays on the line and the
scheduled reconciler's `refresh_from_status` clears it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import Instance
from switchboard.catalog.ports import Instances, Targets
from switchboard.core.errors import NotCallsInstance, ProviderError, ProviderTimeout, UnsupportedByProvider
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.lines.domain import (
    CallSettingsData,
    EnvelopeInstance,
    Line,
    Snapshot,
    SnapshotResult,
    SnapshotSource,
    Verdict,
)
from switchboard.providers.base import Capabilities, InstanceStatus, ProviderClient, ProviderTarget

if TYPE_CHECKING:
    from switchboard.catalog.events import ProviderEvent

CONFIG_CHANGED = "connection.calls.config.changed"
CAPABILITIES_TTL_SECONDS = 60.0


class Lines(Protocol):
    def get(self, tenant: str, instance_name: str) -> Line | None: ...
    def apply_snapshot(self, tenant: str, instance_name: str, snapshot: Snapshot) -> SnapshotResult: ...


class Publisher(Protocol):
    def publish(self, detail_type: str, detail: dict[str, Any]) -> bool: ...


class CapabilitiesCache:
    """What each provider server announces, kept briefly per container (servers change it rarely)."""

    def __init__(self, ttl_seconds: float = CAPABILITIES_TTL_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl_seconds
        self._clock = clock
        self._known: dict[str, tuple[float, Capabilities]] = {}
        self._lock = threading.Lock()

    def get(self, provider_id: str, client: ProviderClient, target: ProviderTarget) -> Capabilities:
        now = self._clock()
        with self._lock:
            known = self._known.get(provider_id)
        if known and known[0] > now:
            return known[1]
        capabilities = client.capabilities(target)
        with self._lock:
            self._known[provider_id] = (now + self._ttl, capabilities)
        return capabilities


def require_calls_instance(instance: Instance) -> None:
    if instance.kind != "calls":
        raise NotCallsInstance(f"instance {instance.name} is a {instance.kind} instance, not a calls instance")


def require_limit_support(capabilities: Capabilities, limit: int | None = None) -> None:
    """Refuse what the server does not announce: the limit is never faked locally."""
    missing = [name for name in ("calls", "calls_per_instance_limit") if not getattr(capabilities, name)]
    if missing:
        raise UnsupportedByProvider("the provider server does not announce a per-instance call limit", missing=missing)
    if limit is not None and not capabilities.calls_min <= limit <= capabilities.calls_max:
        raise UnsupportedByProvider(
            f"the provider server accepts a limit from {capabilities.calls_min} to {capabilities.calls_max}",
            min=capabilities.calls_min,
            max=capabilities.calls_max,
        )


def for_caller(error: ProviderError) -> ProviderError:
    """The same failure with the provider's HTTP status and code as `providerStatus` / `providerCode`.

    The adapters name them `status` and `provider_code`, which would clash with the HTTP status
    of our own answer; only these two short values are kept, never provider text.
    """
    renamed = {"providerStatus": error.details.get("status"), "providerCode": error.details.get("provider_code")}
    return type(error)(error.message, **{name: value for name, value in renamed.items() if value is not None})


def snapshot_of_status(status: InstanceStatus, source: SnapshotSource) -> Snapshot | None:
    """The calls config in a status (or POST answer); None when it carries none (messages, old servers)."""
    if status.kind != "calls" or status.calls_max_concurrent is None:
        return None
    return _snapshot(status.calls_max_concurrent, status.calls_config_version, status.updated, source)


def _snapshot(limit: int, version: int | None, updated_at: str | None, source: SnapshotSource) -> Snapshot | None:
    try:
        return Snapshot(limit=limit, version=version, updated_at=updated_at, source=source)
    except ValidationError:
        logger.warning("call limit snapshot out of range ignored", extra={"limit": limit, "source": source})
        return None


class CallsOverview(Model):
    """What the read view needs: the instance, its line (None before any snapshot) and capabilities."""

    instance: Instance
    line: Line | None
    capabilities: Capabilities | None


class CallsConfigService:
    def __init__(
        self,
        instances: Instances,
        lines: Lines,
        targets: Targets,
        *,
        capabilities: CapabilitiesCache,
        publisher: Publisher,
        audit: Audit,
    ) -> None:
        self._instances = instances
        self._lines = lines
        self._targets = targets
        self._capabilities = capabilities
        self._publisher = publisher
        self._audit = audit

    # --- reads -------------------------------------------------------------------------------

    def capabilities(self, instance: Instance) -> Capabilities:
        client, target = self._targets.target_for(instance)
        return self._capabilities.get(instance.provider_id, client, target)

    def overview(self, principal: Principal, instance_name: str) -> CallsOverview:
        """The line as stored; capabilities are best effort (None when the server cannot be asked)."""
        instance = self._instances.get_instance(principal.tenant, instance_name)
        require_calls_instance(instance)
        capabilities = None
        try:
            capabilities = self.capabilities(instance)
        except ProviderError as error:
            logger.warning("capabilities unavailable", extra={"instance": instance.key, "error": error.code})
        return CallsOverview(
            instance=instance, line=self._lines.get(instance.tenant, instance.name), capabilities=capabilities
        )

    # --- the limit ---------------------------------------------------------------------------

    def set_limit(self, principal: Principal, instance_name: str, limit: int) -> CallsOverview:
        """Save `limit` at the provider, store its canonical answer, then reconcile with its status.

        Raises ProviderUnavailable/ProviderRejected (nothing was saved) and ProviderTimeout when
        the answer was lost and the status does not show the change. After a lost answer the
        status is read before anything else: a blind repeat would bump the version again.
        """
        instance = self._instances.get_instance(principal.tenant, instance_name)
        require_calls_instance(instance)
        client, target = self._targets.target_for(instance)
        capabilities = self._capabilities.get(instance.provider_id, client, target)
        require_limit_support(capabilities, limit)
        before = self._lines.get(instance.tenant, instance.name)
        try:
            answer = client.set_call_settings(target, limit)
        except ProviderTimeout as lost:
            line = self._after_lost_answer(instance, before, limit, lost)
        except ProviderError as failed:
            raise for_caller(failed) from failed
        else:
            snapshot = snapshot_of_status(answer, "post")
            if snapshot is not None:
                self.apply(instance, snapshot)
            line = self._reconcile_after_post(instance)
        self._audit.record(
            principal,
            "calls_limit.updated",
            instance.name,
            before=_config(instance, before),
            after=_config(instance, line),
        )
        return CallsOverview(instance=instance, line=line, capabilities=capabilities)

    def _after_lost_answer(self, instance: Instance, before: Line | None, limit: int, lost: ProviderTimeout) -> Line:
        """The POST may or may not have been applied: the status says which, and is stored either way."""
        try:
            line = self.refresh_from_status(instance)
        except ProviderError as error:
            logger.warning(
                "status unreadable after a lost answer", extra={"instance": instance.key, "error": error.code}
            )
            raise lost from None
        before_version = before.version if before else None
        moved = line.version is not None and (before_version is None or line.version > before_version)
        if line.limit == limit and moved:
            logger.info("call-settings answer lost; the status shows it applied", extra={"instance": instance.key})
            return line
        raise ProviderTimeout(
            "the provider did not answer; its status shows the change was not applied",
            limit=line.limit,
            version=None if line.version is None else str(line.version),
        ) from lost

    def _reconcile_after_post(self, instance: Instance) -> Line:
        """The POST answer is already stored; a failed status read leaves that to the reconciler."""
        try:
            return self.refresh_from_status(instance)
        except ProviderError as error:
            logger.warning(
                "status read after a saved limit failed", extra={"instance": instance.key, "error": error.code}
            )
            return self._line(instance)

    def refresh_from_status(self, instance: Instance) -> Line:
        """GET /instance/status applied with the snapshot rule (also settles a conflict); the stored line."""
        client, target = self._targets.target_for(instance)
        return self.apply_status(instance, client.instance_status(target))

    def apply_status(self, instance: Instance, status: InstanceStatus) -> Line:
        """A status already read (by the reconciliation's connection check) applied with the snapshot rule."""
        snapshot = snapshot_of_status(status, "status")
        if snapshot is None:
            return self._line(instance)
        return self.apply(instance, snapshot).line

    def apply(self, instance: Instance, snapshot: Snapshot) -> SnapshotResult:
        """Store one snapshot by the rule; publish after the commit when the stored config moved."""
        result = self._lines.apply_snapshot(instance.tenant, instance.name, snapshot)
        if result.changed:
            line = result.line
            self._publisher.publish(
                CONFIG_CHANGED,
                {
                    "instance": instance.name,
                    "tenant": instance.tenant,
                    "limit": line.limit,
                    "version": None if line.version is None else str(line.version),
                    "updatedAt": line.updated_at,
                    "source": snapshot.source,
                },
            )
        return result

    # --- webhook effects -----------------------------------------------------------------------

    def on_call_settings(self, event: ProviderEvent) -> None:
        """`call_settings`: a limit saved at the provider (maybe in its own panel). Never creates a call."""
        if event.instance.kind != "calls":
            return
        try:
            data = CallSettingsData.model_validate(event.data)
        except ValidationError:
            logger.warning("malformed call_settings event ignored", extra={"event_id": event.event_id})
            return
        if data.kind != "calls":
            return
        snapshot = _snapshot(data.calls_max_concurrent, data.calls_config_version, data.updated_at, "call_settings")
        if snapshot is not None:
            self._apply_and_settle(event.instance, snapshot)

    def on_connection(self, event: ProviderEvent) -> None:
        """`connection`: its top-level `instance` may carry the config; without it, the status is read."""
        if event.instance.kind != "calls":
            return
        try:
            summary = EnvelopeInstance.model_validate(event.envelope_instance or {})
        except ValidationError:
            logger.warning("malformed connection instance summary ignored", extra={"event_id": event.event_id})
            summary = EnvelopeInstance()
        snapshot = None
        if summary.kind == "calls" and summary.calls_max_concurrent is not None:
            snapshot = _snapshot(summary.calls_max_concurrent, summary.calls_config_version, None, "connection")
        if snapshot is None:
            self._settle(event.instance, reason="connection event without the calls config")
            return
        self._apply_and_settle(event.instance, snapshot)

    def _apply_and_settle(self, instance: Instance, snapshot: Snapshot) -> None:
        if self.apply(instance, snapshot).verdict is Verdict.CONFLICT:
            self._settle(instance, reason="conflict")

    def _settle(self, instance: Instance, *, reason: str) -> None:
        """Read the status inline; if the provider cannot answer, the scheduled reconciler will."""
        try:
            self.refresh_from_status(instance)
        except ProviderError as error:
            logger.warning(
                "status read failed; left to the reconciler",
                extra={"instance": instance.key, "reason": reason, "error": error.code},
            )

    def _line(self, instance: Instance) -> Line:
        return self._lines.get(instance.tenant, instance.name) or Line(instance=instance.name, tenant=instance.tenant)


def _config(instance: Instance, line: Line | None) -> dict[str, Any]:
    return {
        "tenant": instance.tenant,
        "instance": instance.name,
        "limit": line.limit if line else None,
        "version": None if line is None or line.version is None else str(line.version),
    }

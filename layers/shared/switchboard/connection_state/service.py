"""Connection state use cases: a status read (on save, on reconciliation, to confirm an event
without an order) and the `connection` webhook effect. The rules are in `domain.py`.

After a write that moved the state, `instance.connection.changed` is published. The ban watch
hears what the provider confirmed (a logout pauses the number, a connection lifts that pause) and
what a cloud kind says of the number itself; replies waiting in the instance's outbox leave once
it is connected.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from switchboard.catalog.domain import Instance, InstanceState
from switchboard.connection_state.domain import Check, StateWrite, StoredState, state_of
from switchboard.core.bus import INSTANCE_CONNECTION_CHANGED
from switchboard.core.errors import ProviderError, SwitchboardError
from switchboard.core.observability import logger, metrics
from switchboard.core.ports import Publisher
from switchboard.providers.kinds import spec_for

if TYPE_CHECKING:
    from switchboard.catalog.events import ProviderEvent
    from switchboard.catalog.ports import Targets
    from switchboard.providers.base import InstanceStatus, NumberStanding


class States(Protocol):
    def apply_event(self, key: str, state: InstanceState, seq: int, at: datetime) -> StateWrite: ...
    def apply_read(self, key: str, state: InstanceState, before: StoredState, at: datetime) -> StateWrite: ...
    def stored(self, key: str) -> StoredState | None: ...


class Health(Protocol):
    """What the ban watch hears from here (`health.service.BanWatch`)."""

    def connection(self, instance: Instance, *, connected: bool, reason: str | None) -> None: ...
    def standing(self, instance: Instance, status: str | None, quality_rating: str | None) -> None: ...


class ConnectionStateService:
    def __init__(
        self,
        states: States,
        targets: Targets,
        publisher: Publisher,
        *,
        health: Callable[[], Health] | None = None,
        drain: Callable[[str], object] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._states = states
        self._targets = targets
        self._publisher = publisher
        self._health = health
        self._drain = drain
        self._clock = clock

    # --- status reads ----------------------------------------------------------------------

    def check(self, instance: Instance) -> tuple[Check, InstanceStatus | None]:
        """Read the instance's state from its provider and apply it; `instance` must be read just
        before (its state and revision are what the read is judged against).

        Returns what happened and the provider's answer (the calls instances' limit is in it).
        Raises ProviderError when the provider cannot be read, except for a cloud kind (connected
        by nature: written so, and its standing is left as it was)."""
        return self._check(instance, StoredState(state=instance.state, rev=instance.state_rev), event=None)

    def after_save(self, instance: Instance) -> Instance:
        """The catalog's, once an instance is saved (created, bound to another session, or given a
        new token): its state read from the provider right away, so an already paired number is
        connected without waiting for a webhook. Best effort, never raising: a provider that cannot
        answer (or an instance it does not know yet) leaves the state to the reconciliation."""
        try:
            check, _ = self.check(instance)
        except Exception as exc:
            code = exc.code if isinstance(exc, SwitchboardError) else type(exc).__name__
            logger.warning("status not read after the save", extra={"instance": instance.key, "error": code})
            return instance
        if not check.changed:
            return instance
        return instance.model_copy(
            update={"state": check.state, "state_rev": instance.state_rev + 1, "state_changed_at": self._clock()}
        )

    def _check(
        self, instance: Instance, before: StoredState, *, event: ProviderEvent | None
    ) -> tuple[Check, InstanceStatus | None]:
        client, target = self._targets.target_for(instance)
        cloud = spec_for(target.kind).always_connected
        status: InstanceStatus | None = None
        try:
            status = client.instance_status(target)
        except ProviderError as error:
            if not cloud:
                raise
            logger.warning("number standing not read", extra={"instance": instance.key, "error": error.code})
        connected = cloud or (status is not None and status.connected)
        state = state_of(connected)
        agrees = None if event is None else event.data.get("connected") is connected
        write = (
            self._states.apply_read(instance.key, state, before, self._clock())
            if state != before.state
            else StateWrite(written=False, previous=before.state)
        )
        if before.state != state and not write.written:
            logger.info("status read dropped: the state was written meanwhile", extra={"instance": instance.key})
        changed = write.changed(state)
        if changed:
            self._announce(instance, state)
        if status is not None and status.number is not None:
            self._standing(instance, status.number)
        if changed or event is not None:
            reason = event.data.get("reason") if event is not None and agrees else None
            self._hear(instance, connected=connected, reason=reason if isinstance(reason, str) else None)
        if connected and (changed or event is not None):
            self._drain_outbox(instance.key)
        # Every instance is read each period: only a read that moved something is worth a log line.
        (logger.info if changed else logger.debug)(
            "instance status read",
            extra={"instance": instance.key, "state": state, "changed": changed, "status_read": status is not None},
        )
        check = Check(state=state, changed=changed, status_read=status is not None, agrees=agrees)
        return check, status

    # --- the webhook effect -----------------------------------------------------------------

    def on_event(self, event: ProviderEvent) -> None:
        """`connection` effect. An event with the provider's `seq` is applied by it; one without
        is confirmed by a status read first (a ProviderError leaves the event pending: the
        provider's retry or the sweep of pending events confirms it later)."""
        if event.seq is None:
            self._confirm(event)
            return
        connected = event.data.get("connected") is True
        state = state_of(connected)
        key = event.instance.key
        write = self._states.apply_event(key, state, event.seq, event.received_at)
        logger.info(
            "instance connection event",
            extra={"instance": key, "state": state, "seq": event.seq, "applied": write.written},
        )
        if write.changed(state):
            self._announce(event.instance, state, at=event.received_at)
        reason = event.data.get("reason")
        self._hear(event.instance, connected=connected, reason=reason if isinstance(reason, str) else None)
        if not connected:
            return
        if not write.written:
            # A redelivery finds its own state already written (same seq), an older event a newer
            # state: drain (idempotently) only if the instance is connected now.
            current = self._states.stored(key)
            if current is None or current.state != "CONNECTED":
                return
        self._drain_outbox(key)

    def _confirm(self, event: ProviderEvent) -> None:
        before = self._states.stored(event.instance.key)
        if before is None:
            logger.info("connection event of a deleted instance", extra={"instance": event.instance.key})
            return
        check, _ = self._check(event.instance, before, event=event)
        if check.agrees is False:
            metrics.add_metric(name="ConnectionEventsRefuted", unit="Count", value=1)
            logger.warning(
                "connection event contradicted by the provider's status: not applied",
                extra={"instance": event.instance.key, "event_id": event.event_id, "state": check.state},
            )

    # --- steps ------------------------------------------------------------------------------

    def _announce(self, instance: Instance, state: InstanceState, *, at: datetime | None = None) -> None:
        self._publisher.publish(
            INSTANCE_CONNECTION_CHANGED,
            {
                "tenant": instance.tenant,
                "instance": instance.name,
                "numberId": instance.number_id,
                "state": state,
                "at": (at or self._clock()).isoformat(),
            },
        )

    def _hear(self, instance: Instance, *, connected: bool, reason: str | None) -> None:
        """Best effort: the ban watch never fails the state that was written."""
        if self._health is None:
            return
        try:
            self._health().connection(instance, connected=connected, reason=reason)
        except Exception:
            logger.exception("connection not seen by the ban watch", extra={"instance": instance.key})

    def _standing(self, instance: Instance, standing: NumberStanding) -> None:
        if self._health is None:
            return
        try:
            self._health().standing(instance, standing.status, standing.quality_rating)
        except Exception:
            logger.exception("number standing not seen by the ban watch", extra={"instance": instance.key})

    def _drain_outbox(self, key: str) -> None:
        if self._drain is not None:
            self._drain(key)

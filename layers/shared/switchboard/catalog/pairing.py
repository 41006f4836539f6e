"""Pairing an instance's number from the console: start its session, show the code its provider
draws until the phone scans it, log the phone out, and send a test message through it.

Every pairing call goes to the instance's own provider server through its kind's client
(`providers.base.PairingSessions`); a kind that pairs no numbers this way (the Meta Cloud API,
whose numbers are registered in Meta's own tools) raises `UnsupportedByProvider`. The connection
state stays the connection state's: the provider's webhook (or a status read) moves it. A test
message is an ordinary message pinned to the instance (`TestMessages`): queued, paced, traced,
logged and counted like any other, its outcome read back by its id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from switchboard.audit.ports import Audit
from switchboard.catalog.domain import Instance, Provider
from switchboard.catalog.ports import Targets, TestMessages
from switchboard.core.errors import InstanceDisconnected, ProviderDisconnected, UnsupportedByProvider
from switchboard.core.identity import Principal
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.providers.base import Pairing, PairingSessions, ProviderClient, ProviderTarget
from switchboard.providers.kinds import spec_for


class Instances(Protocol):
    def get_instance(self, tenant: str, name: str) -> Instance: ...


class PairingTargets(Targets, Protocol):
    def provider_of(self, instance: Instance) -> Provider: ...


class WebhookConfigurer(Protocol):
    def configure(self, instance: Instance) -> bool: ...


class InstancePairing(Model):
    """The provider's pairing and the instance as switchboard holds it now."""

    instance: Instance
    pairing: Pairing


class PairingService:
    def __init__(
        self,
        instances: Instances,
        targets: PairingTargets,
        setup: WebhookConfigurer,
        audit: Audit,
        *,
        status_read: Callable[[Instance], Instance],
        test_messages: TestMessages | None = None,
    ) -> None:
        """`status_read` reads an instance's connection state from its provider and returns the
        instance as it then is (best effort, never raising); `test_messages` queues a test message
        (None: a function that sends none)."""
        self._instances = instances
        self._test_messages = test_messages
        self._targets = targets
        self._setup = setup
        self._audit = audit
        self._status_read = status_read

    def pairing(self, principal: Principal, name: str) -> InstancePairing:
        """The code to show now. A session the provider says is paired while switchboard still
        holds it disconnected (its connected webhook lost or still on its way) is read again, so
        the console shows what the provider says."""
        instance, sessions, target = self._sessions(principal, name)
        pairing = sessions.pairing(target)
        if pairing.state == "paired" and not instance.connected:
            instance = self._status_read(instance)
        return InstancePairing(instance=instance, pairing=pairing)

    def start(self, principal: Principal, name: str) -> InstancePairing:
        """Start the instance's session (connect, or reconnect after a logout) and answer its
        first code. The provider's webhook is pointed at switchboard again afterwards: a wuzapi
        connect replaces the events it posts."""
        instance, sessions, target = self._sessions(principal, name)
        pairing = sessions.start_session(target)
        self._setup.configure(instance)
        self._audit.record(principal, "instance.session_started", name)
        logger.info("instance session started", extra={"instance": instance.key, "pairing": pairing.state})
        if pairing.state == "paired" and not instance.connected:
            instance = self._status_read(instance)
        return InstancePairing(instance=instance, pairing=pairing)

    def log_out(self, principal: Principal, name: str) -> Instance:
        """Unlink the phone from the instance's session; the instance as its provider then says.
        Raises InstanceDisconnected when no phone is linked."""
        instance, sessions, target = self._sessions(principal, name)
        try:
            sessions.log_out(target)
        except ProviderDisconnected as exc:
            raise InstanceDisconnected("no phone is linked to this instance's session") from exc
        self._audit.record(principal, "instance.logged_out", name)
        logger.info("instance logged out", extra={"instance": instance.key})
        return self._status_read(instance)

    def send_test(self, principal: Principal, name: str, to: str, text: str) -> str:
        """A text through this instance alone, to check it end to end: queued for the send worker
        like any message and tried through no other instance or number; the message's id, whose
        status says how it went. Raises InstanceDisconnected at once when the instance's number is
        not paired (a cloud kind's number needs no session)."""
        if self._test_messages is None:
            raise RuntimeError("test messages are not provided")
        instance = self._instances.get_instance(principal.tenant, name)
        provider = self._targets.provider_of(instance)
        if not instance.connected and not spec_for(provider.kind).always_connected:
            raise InstanceDisconnected("the instance's number is not connected: pair it first")
        message_id = self._test_messages.submit(principal, instance.name, to, text)
        self._audit.record(principal, "instance.test_message_queued", name, after={"to": to, "messageId": message_id})
        logger.info("test message queued", extra={"instance": instance.key, "message_id": message_id})
        return message_id

    def _sessions(self, principal: Principal, name: str) -> tuple[Instance, PairingSessions, ProviderTarget]:
        instance = self._instances.get_instance(principal.tenant, name)
        client, target = self._targets.target_for(instance)
        return instance, _pairing_sessions(client), target


def _pairing_sessions(client: ProviderClient) -> PairingSessions:
    if not isinstance(client, PairingSessions):
        raise UnsupportedByProvider(
            "this provider kind pairs its numbers in its own tools, not by a code here", code="not_supported"
        )
    return client

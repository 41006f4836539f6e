"""Preparing a calls instance's webhook subscription at its provider.

The subscription must list `call`, `call_settings` and `connection` (and `limits` if asked). We
merge those names into the events already saved and change nothing else: URL, secret (never
sent: omitting it keeps it), filters and the enabled state stay as they are. Only an instance's
own subscription is edited. One inherited from the server's global subscription is reported,
never turned into an instance override; a disabled or missing one is reported, never enabled
or created. Changing the global subscription is a platform decision that no provider client
offers, so it is refused rather than approximated.

Registering a webhook produces no snapshot, so the status is read afterwards: it gives the
current config and settles any race with events that arrived during the preparation.
"""

from __future__ import annotations

from typing import Literal

from switchboard.audit.ports import Audit
from switchboard.catalog.ports import Instances, Targets
from switchboard.core.errors import Forbidden, ProviderError, UnsupportedByProvider
from switchboard.core.identity import Principal, Scope
from switchboard.core.model import Model
from switchboard.core.observability import logger
from switchboard.lines.domain import Line
from switchboard.lines.service import CallsConfigService, for_caller, require_calls_instance
from switchboard.providers.base import ProviderClient, ProviderTarget, WebhookSubscription

REQUIRED_EVENTS = ("call", "call_settings", "connection")
OPTIONAL_EVENTS = ("limits",)
# A server that does not announce these never sends `call_settings`, whatever the subscription
# lists: a limit changed in the provider's panel would then reach us only by reconciliation.
REQUIRED_CAPABILITIES = ("calls_settings_webhook",)

SubscriptionState = Literal["ready", "updated", "inherited", "disabled", "missing", "unannounced"]


class SubscriptionReport(Model):
    """What the subscription looks like now and whether call events will be delivered.

    `ready` is True only for an enabled subscription listing every required event on a server
    that announces every required capability. `missing` names the events it still lacks and the
    capabilities the server does not announce (nothing was changed for `inherited` and `missing`
    states); `reason` says why it is not ready, for the panel to show. `unannounced`: the
    subscription itself is complete, but the server does not announce `calls_settings_webhook`.
    """

    instance: str
    state: SubscriptionState
    ready: bool
    changed: bool
    inherited: bool
    enabled: bool
    url: str | None
    events: list[str]
    filters: dict[str, object]
    missing: list[str]
    reason: str | None = None
    line: Line


class SubscriptionService:
    def __init__(self, instances: Instances, targets: Targets, calls_config: CallsConfigService, audit: Audit) -> None:
        self._instances = instances
        self._targets = targets
        self._calls_config = calls_config
        self._audit = audit

    def prepare(
        self,
        principal: Principal,
        instance_name: str,
        *,
        scope: Literal["instance", "global"] = "instance",
        include_limits: bool = False,
    ) -> SubscriptionReport:
        """Raises Forbidden, NotFound, UnsupportedByProvider and the provider's failures (502/504)."""
        try:
            return self._prepare(principal, instance_name, scope=scope, include_limits=include_limits)
        except ProviderError as failed:
            raise for_caller(failed) from failed

    def _prepare(
        self,
        principal: Principal,
        instance_name: str,
        *,
        scope: Literal["instance", "global"] = "instance",
        include_limits: bool = False,
    ) -> SubscriptionReport:
        if scope == "global":
            if not principal.has(Scope.PLATFORM):
                raise Forbidden("changing a provider server's global subscription needs the platform scope")
            raise UnsupportedByProvider(
                "the provider API offers no way to change the server's global subscription; "
                "change it at the provider, then prepare each instance again"
            )
        if not principal.has(Scope.ADMIN):
            raise Forbidden("preparing an instance's subscription needs the admin scope")
        instance = self._instances.get_instance(principal.tenant, instance_name)
        require_calls_instance(instance)
        client, target = self._targets.target_for(instance)
        capabilities = self._calls_config.capabilities(instance)
        if not capabilities.calls:
            raise UnsupportedByProvider("the provider server does not announce calls", missing=["calls"])
        wanted = [*REQUIRED_EVENTS, *(OPTIONAL_EVENTS if include_limits else ())]
        current = client.get_webhook(target)
        missing = [name for name in wanted if name not in current.events]
        state, after = self._merge(client, target, current, missing)
        if after is not current:
            self._audit.record(
                principal,
                "calls_subscription.updated",
                instance.name,
                before={"tenant": instance.tenant, "events": current.events},
                after={"tenant": instance.tenant, "events": after.events},
            )
        line = self._calls_config.refresh_from_status(instance)
        still_missing = [name for name in wanted if name not in after.events]
        unannounced = [name for name in REQUIRED_CAPABILITIES if not getattr(capabilities, name)]
        if unannounced and state in ("ready", "updated"):
            state = "unannounced"
        ready = after.exists and after.enabled and not still_missing and not unannounced
        report = SubscriptionReport(
            instance=instance.name,
            state=state,
            ready=ready,
            changed=after is not current,
            inherited=after.inherited,
            enabled=after.enabled,
            url=after.url,
            events=after.events,
            filters=after.filters,
            missing=[*still_missing, *unannounced],
            reason=None if ready else _reason(state, still_missing, unannounced),
            line=line,
        )
        logger.info(
            "calls subscription prepared",
            extra={"instance": instance.key, "state": state, "ready": report.ready, "missing": still_missing},
        )
        return report

    @staticmethod
    def _merge(
        client: ProviderClient, target: ProviderTarget, current: WebhookSubscription, missing: list[str]
    ) -> tuple[SubscriptionState, WebhookSubscription]:
        """Add the missing names to the instance's own subscription; report every other case as is."""
        if not current.exists:
            return "missing", current
        if current.inherited:
            return ("inherited" if missing or not current.enabled else "ready"), current
        if not missing:
            return ("ready" if current.enabled else "disabled"), current
        updated = client.update_webhook_events(target, [*current.events, *missing])
        return ("updated" if updated.enabled else "disabled"), updated


def _reason(state: SubscriptionState, missing_events: list[str], unannounced: list[str]) -> str:
    """Why call events will not all be delivered, in words an attendant's panel can show."""
    parts: list[str] = []
    if state == "missing":
        parts.append("the instance has no webhook subscription: provision it at the provider")
    elif state == "disabled":
        parts.append("the instance's webhook subscription is disabled at the provider")
    elif state == "inherited":
        parts.append("the instance inherits the server's global subscription, which only the platform can change")
    if missing_events and state != "missing":
        parts.append(f"the subscription lacks {', '.join(missing_events)}")
    if unannounced:
        parts.append(
            f"the provider server does not announce {', '.join(unannounced)}: "
            "limit changes made in its panel reach us only by reconciliation"
        )
    return "; ".join(parts) or "the subscription is not enabled"

"""After an instance is saved: point its provider's webhooks at switchboard, where the kind allows it."""

from __future__ import annotations

from switchboard.catalog.domain import Instance
from switchboard.catalog.ports import Targets
from switchboard.core.observability import logger
from switchboard.core.ports import Secrets
from switchboard.core.secrets import provider_secret_name
from switchboard.providers.kinds import spec_for


class WebhookSetup:
    def __init__(self, targets: Targets, secrets: Secrets, public_base_url: str | None) -> None:
        self._targets = targets
        self._secrets = secrets
        self._base_url = (public_base_url or "").rstrip("/")

    def configure(self, instance: Instance) -> bool:
        """Best effort: the instance is saved whatever the provider answers; a failure is logged
        (without its URL's secrets) and the operator can configure the provider by hand."""
        if not self._base_url:
            return False
        try:
            client, target = self._targets.target_for(instance)
            secret = self._secrets.get(provider_secret_name(self._secrets, instance.provider_id, "webhook-secret"))
            url = f"{self._base_url}/webhooks/{instance.provider_id}"
            configured = spec_for(target.kind).configure_webhooks(client, target, url, secret)
        except Exception as exc:
            logger.warning(
                "provider webhooks not configured", extra={"instance": instance.key, "error": type(exc).__name__}
            )
            return False
        if configured:
            logger.info("provider webhooks configured", extra={"instance": instance.key})
        return configured

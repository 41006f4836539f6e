"""What the health routes need from capabilities above them, declared here and handed in."""

from __future__ import annotations

from typing import Protocol

from switchboard.core.identity import Principal


class EventsWebhookSecrets(Protocol):
    """The signing secret of an instance's events webhook (the client webhooks' signer keeps it)."""

    def rotate_instance_secret(self, principal: Principal, name: str) -> str: ...

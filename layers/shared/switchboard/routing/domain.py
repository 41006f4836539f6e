"""Downstream (Chatwoot-style helpdesk) routing: per-tenant mappings, targets and jobs.

A tenant (owner_tag) may map its instances to its own downstream; instances without an owner
tag, or whose tag has no mapping, use the global fallback from the `DOWNSTREAM_*` settings.
The API token is write-only: stored in the secret store, only a hint is kept here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import ConfigDict, Field

from switchboard.catalog.domain import utcnow
from switchboard.core.model import Model


class DownstreamMapping(Model):
    """The stored mapping of one owner_tag (no token: see `token_hint`)."""

    owner_tag: str
    base_url: str
    account_id: int
    inbox_id: int
    token_hint: str
    updated_at: datetime = Field(default_factory=utcnow)


class DownstreamTarget(Model):
    """Everything needed to call one downstream inbox. Holds the token: never log it."""

    model_config = ConfigDict(frozen=True)

    base_url: str
    account_id: int
    inbox_id: int
    api_token: str = Field(repr=False)
    source: Literal["tenant", "global"]
    owner_tag: str | None = None


class IncomingMessage(Model):
    """One incoming WhatsApp message to post in the downstream inbox."""

    event_id: str  # provider event id: the idempotency key of the forward
    instance: str
    owner_tag: str | None
    inbox_id: int | None = None  # the instance's own inbox in its owner tag's downstream
    provider_message_id: str
    sender: str  # E.164 digits
    text: str
    sent_at: str | None = None


class DownstreamClient(Protocol):
    def post_incoming(self, target: DownstreamTarget, message: IncomingMessage) -> int:
        """Find or create the contact and its conversation, post the message; returns the conversation id."""
        ...

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        """A private note in a conversation (e.g. a reply that could not be delivered)."""
        ...

"""Downstream (Chatwoot-style helpdesk) routing: per-tenant mappings, targets and jobs.

A tenant (owner_tag) may map its instances to its own downstream; instances without an owner
tag, or whose tag has no mapping, use the global fallback from the `DOWNSTREAM_*` settings.
The API token is write-only: stored in the secret store, only a hint is kept here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import ConfigDict, Field, model_validator

from switchboard.core.clock import utcnow
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
    """One incoming WhatsApp message to post in the downstream inbox.

    The sender is known by its phone number (`sender`), its LID (`sender_lid`, WhatsApp's
    address for a user whose number it hides) or both; `sender_name` is their WhatsApp profile
    name, when the provider sent it."""

    event_id: str  # provider event id: the idempotency key of the forward
    instance: str
    owner_tag: str | None
    inbox_id: int | None = None  # the instance's own inbox in its owner tag's downstream
    provider_message_id: str
    sender: str | None = None  # E.164 digits
    sender_lid: str | None = None  # `<digits>@lid`
    sender_name: str | None = None
    text: str
    sent_at: str | None = None

    @model_validator(mode="after")
    def _someone(self) -> IncomingMessage:
        if self.sender is None and self.sender_lid is None:
            raise ValueError("an incoming message needs a sender phone number or LID")
        return self


class MessageLink(Model):
    """One WhatsApp message and its message in the downstream: what threads a quote, a reaction,
    an edit or a deletion to the message it refers to, either way.

    `provider_message_id` is the WhatsApp id as the instance's provider gave it (the id a later
    quote or reaction names); `message_id` is switchboard's own id of an outgoing message."""

    instance: str  # the instance key (`<tenant>:<name>`)
    provider_message_id: str
    conversation_id: int  # the downstream's
    downstream_message_id: int  # the downstream's message id
    direction: Literal["in", "out"]
    message_id: str | None = None


class MessageLinks(Protocol):
    """The map of WhatsApp ids to downstream ids, per instance, both ways.

    A link is kept for `routing.links_dynamo.LINK_DAYS`: a message older than that is no longer
    found, and what refers to it is posted unthreaded (saying so)."""

    def link(self, link: MessageLink) -> None:
        """Record both keys of `link` in one transaction; recording it again changes nothing (the
        first link of a WhatsApp id or a downstream id stands)."""
        ...

    def by_provider_id(self, instance: str, provider_message_id: str) -> MessageLink | None: ...

    def by_downstream_id(self, instance: str, downstream_message_id: int) -> MessageLink | None: ...


class DownstreamClient(Protocol):
    def post_incoming(
        self, target: DownstreamTarget, message: IncomingMessage, *, earlier_attempt: datetime | None = None
    ) -> int:
        """Find or create the contact and its conversation, post the message; returns the conversation id.

        The contact is found by phone number, else by LID; it is created with the sender's
        profile name, and given it while it is still named by its number. A contact known by its
        LID alone carries a note saying so. With `earlier_attempt` (a forward of this message
        started then, and may have posted it) the message is first looked for by its provider id
        in the contact's conversations of the inbox: found, it is not posted again."""
        ...

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        """A private note in a conversation (e.g. a reply that could not be delivered)."""
        ...

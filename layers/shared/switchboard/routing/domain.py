"""Downstream (Chatwoot-style helpdesk) routing: per-tenant mappings, targets and jobs.

A tenant (owner_tag) may map its instances to its own downstream; instances without an owner
tag, or whose tag has no mapping, use the global fallback from the `DOWNSTREAM_*` settings.
The API token is write-only: stored in the secret store, only a hint is kept here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
    name, when the provider sent it.

    `content` is what the customer sent, as the JSON of a `providers.content.Content` (a file by
    its claim check, never its bytes; JSON here, so that the functions that name this record
    without forwarding never load the contents' schema), and `reply_to` the WhatsApp id of the
    message they quoted; `text` is the content as the agent reads it in words
    (`routing.as_text`), what a job queued before contents existed carries alone."""

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
    content: dict[str, Any] | None = None
    reply_to: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _content_json(cls, value: Any) -> Any:
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value

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


class FileToPost(Model):
    """A file posted with a message, as bytes (the helpdesk never gets a URL of the media bucket)."""

    file_name: str
    mime_type: str
    data: bytes = Field(repr=False)


class DownstreamPost(Model):
    """What one incoming message becomes in the helpdesk: its content, its files, and the message
    it refers to (a quote; what a reaction, an edit or a deletion changes).

    `refers_to` is the link of that message. A quote is threaded to it when it is in the
    conversation posted to, and posted unthreaded otherwise. A change (`change_note` set) is shown
    only threaded to its message: when that is not in the conversation, `change_note` (which says
    which message it meant) is posted as a private note instead of a customer's message."""

    content: str | None
    files: list[FileToPost] = Field(default_factory=list)
    voice: bool = False  # the file is a voice note (Chatwoot's `is_voice_message`)
    refers_to: MessageLink | None = None
    change_note: str | None = None


class PostedIncoming(Model):
    """Where an incoming message was posted: its conversation and its message there; `threaded`
    when it was posted as a reply to the message it refers to, `note` when it became a private note."""

    conversation_id: int
    message_id: int
    threaded: bool = False
    note: bool = False


class DownstreamClient(Protocol):
    def post_incoming(
        self,
        target: DownstreamTarget,
        message: IncomingMessage,
        post: DownstreamPost,
        *,
        earlier_attempt: datetime | None = None,
    ) -> PostedIncoming:
        """Find or create the contact and its conversation, post `post` with the message's
        provider id as its `source_id`; returns where it went.

        The contact is found by phone number, else by LID; it is created with the sender's
        profile name, and given it while it is still named by its number. A contact known by its
        LID alone carries a note saying so. With `earlier_attempt` (a forward of this message
        started then, and may have posted it) the message is first looked for by its provider id
        in the contact's conversations of the inbox: found, it is not posted again."""
        ...

    def post_note(self, target: DownstreamTarget, conversation_id: int, text: str) -> None:
        """A private note in a conversation (e.g. a reply that could not be delivered)."""
        ...

"""Bodies of the replies API: the downstream's webhook and our answers to it (camelCase).

Apart from the tenants' downstream schemas: each function builds only the models of its routes."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import ConfigDict, Field, field_validator

from switchboard.core.model import Model, Text
from switchboard.core.wire import View
from switchboard.routing.outbox import Attachment, Reply, Revocation

SECRET_HEADER = "X-Switchboard-Secret"  # noqa: S105 - a header name, not a secret
TOKEN_PARAMETER = "token"  # noqa: S105 - a parameter name, not a secret


class _Lenient(Model):
    model_config = ConfigDict(extra="ignore")


class _Sender(_Lenient):
    phone_number: str | None = None
    identifier: str | None = None


class _Meta(_Lenient):
    sender: _Sender | None = None


class _ConversationRef(_Lenient):
    id: int | None = None
    meta: _Meta | None = None


# What Chatwoot sends to a channel (`Base::SendOnChannelService`): outgoing messages and its own
# automatic ones (`template`: greeting, out-of-office, CSAT survey, auto-resolve), never private
# notes, never a message that came from the channel (it has a `source_id`), never a call bubble.
SENT_TYPES = frozenset({"outgoing", "template"})
# An automatic message whose content is a text the customer can read: its greeting and other
# texts, and the CSAT survey (its webhook content carries the survey link). The others
# (email collect, option lists, cards, forms, articles) are web-widget forms with no text form.
TEMPLATE_CONTENT_TYPES = frozenset({"text", "input_csat"})
# Chatwoot's own limit on a message's content (`validates :content, length: { maximum: 150_000 }`).
MAX_CONTENT_CHARS = 150_000
_LID = re.compile(r"[0-9]{5,20}@lid")


# Chatwoot's own limit on a message's attachments (`Message::NUMBER_OF_PERMITTED_ATTACHMENTS`).
MAX_ATTACHMENTS = 15


class _Attachment(_Lenient):
    """One of a message's `attachments[]` (`Attachment#push_event_data`): a file's `data_url` is
    Chatwoot's redirect route to it (`file_url`; an audio's the inline one), its `extension` and
    `content_type` as uploaded; a location's `coordinates_lat`/`coordinates_long` and
    `fallback_title`."""

    file_type: str | None = None
    data_url: str | None = Field(default=None, max_length=4096)
    extension: str | None = Field(default=None, max_length=64)
    content_type: str | None = Field(default=None, max_length=255)
    file_size: int | None = None
    coordinates_lat: float | None = None
    coordinates_long: float | None = None
    fallback_title: str | None = Field(default=None, max_length=1000)

    def attachment(self) -> Attachment:
        located = self.file_type == "location"
        return Attachment(
            file_type=self.file_type or "unknown",
            data_url=self.data_url or None,
            file_name=None if located else attachment_file_name(self.data_url, self.extension),
            latitude=self.coordinates_lat if located else None,
            longitude=self.coordinates_long if located else None,
            title=self.fallback_title if located else None,
        )


class _ContentAttributes(_Lenient):
    """`Message#content_attributes`: the message quoted (`in_reply_to`, the helpdesk's id, and
    `in_reply_to_external_id`, that message's `source_id`) and an agent's deletion (`deleted`)."""

    in_reply_to: int | None = None
    in_reply_to_external_id: str | None = Field(default=None, max_length=256)
    deleted: bool = False

    @field_validator("in_reply_to", mode="before")
    @classmethod
    def _id(cls, value: Any) -> Any:
        # Chatwoot stores what the client posted: an id may come as its digits.
        return int(value) if isinstance(value, str) and value.isdigit() else value


class OutgoingWebhook(_Lenient):
    """The downstream's `message_created` webhook (Chatwoot-style), and its `message_updated` for
    an agent's deletion; other events are ignored."""

    event: str
    id: int | str | None = None
    content: Text | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    message_type: str | None = None
    content_type: str | None = None
    private: bool = False
    source_id: str | None = None
    conversation: _ConversationRef | None = None
    attachments: list[_Attachment] = Field(default_factory=list, max_length=MAX_ATTACHMENTS)
    content_attributes: _ContentAttributes | None = None

    @field_validator("attachments", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        # `Attachment#push_event_data` is nil for an attachment without a file type: kept, so the
        # agent is told it was not sent.
        if value is None:
            return []
        return [{} if item is None else item for item in value] if isinstance(value, list) else value

    @field_validator("content_attributes", mode="before")
    @classmethod
    def _attributes(cls, value: Any) -> Any:
        # An empty store is `{}`; some serialisations send it as a JSON string.
        return None if not isinstance(value, dict) else value

    def reply(self) -> Reply | None:
        """The reply to send, or None when this is not a public message for the customer."""
        if self.event != "message_created" or self.message_type not in SENT_TYPES or self.private:
            return None
        if self.source_id or self.content_type == "voice_call":
            return None
        if self.message_type == "template" and (self.content_type or "text") not in TEMPLATE_CONTENT_TYPES:
            return None
        address = self._address()
        text = self.content if self.content and self.content.strip() else ""
        attachments = [attachment.attachment() for attachment in self.attachments]
        if not ((text or attachments) and self.id is not None and address):
            return None
        attributes = self.content_attributes or _ContentAttributes()
        return Reply(
            message_id=str(self.id),
            phone=address,
            text=text,
            conversation_id=self.conversation.id if self.conversation else None,
            attachments=attachments,
            in_reply_to=attributes.in_reply_to,
            in_reply_to_external_id=attributes.in_reply_to_external_id or None,
        )

    def revocation(self) -> Revocation | None:
        """An agent's deletion of one of their replies (`MessagesController#destroy` sets
        `content_attributes.deleted` and sends `message_updated`), or None."""
        if self.event != "message_updated" or self.message_type not in SENT_TYPES or self.private:
            return None
        if not (self.content_attributes and self.content_attributes.deleted) or self.source_id:
            return None
        address = self._address()
        if self.id is None or address is None:
            return None
        return Revocation(
            message_id=str(self.id), phone=address, conversation_id=self.conversation.id if self.conversation else None
        )

    def _address(self) -> str | None:
        sender = self.conversation.meta.sender if self.conversation and self.conversation.meta else None
        return _address(sender)


def attachment_file_name(data_url: str | None, extension: str | None) -> str | None:
    """The file's name as the helpdesk URL ends with it (ActiveStorage's routes end in the blob's
    file name), else `attachment.<extension>`."""
    path = urlsplit(data_url or "").path
    last = unquote(path.rsplit("/", 1)[-1]) if "/" in path else ""
    if last and "." in last.strip(".") and len(last) <= 200 and not any(ch in last for ch in "/\\\0"):
        return last
    suffix = (extension or "").strip(".").strip()
    return f"attachment.{suffix}" if suffix.isalnum() and len(suffix) <= 10 else None


def _address(sender: _Sender | None) -> str | None:
    """The contact's phone number (digits), else the LID it is known by (a contact whose number
    WhatsApp hides)."""
    if sender is None:
        return None
    digits = (sender.phone_number or "").lstrip("+")
    if digits.isascii() and digits.isdigit() and 8 <= len(digits) <= 15:
        return digits
    identifier = sender.identifier or ""
    return identifier if _LID.fullmatch(identifier) else None


class OutgoingView(View):
    status: str = Field(
        description="SENT (every part: a long text in parts, each attachment), PENDING (in the outbox), FAILED, "
        "REVOKED (an agent's deletion, deleted for everyone on WhatsApp), or IGNORED (not a message for the "
        "customer: a private note, an incoming message, an echo from the channel)"
    )
    reason: str | None = None


class InstanceWebhookSecretView(View):
    secret: str = Field(
        description=f"Send it in the `{SECRET_HEADER}` header or as `?{TOKEN_PARAMETER}=`. Shown only in this response."
    )
    hint: str
    header: str = SECRET_HEADER
    webhook_url: str = Field(
        description="The webhook URL for the instance's Chatwoot API-channel inbox, secret included. Shown only here."
    )

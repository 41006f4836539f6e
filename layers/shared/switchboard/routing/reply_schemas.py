"""Bodies of the replies API: the downstream's webhook and our answers to it (camelCase).

Apart from the tenants' downstream schemas: each function builds only the models of its routes."""

from __future__ import annotations

import re

from pydantic import ConfigDict, Field

from switchboard.core.model import Model, Text
from switchboard.core.wire import View
from switchboard.routing.outbox import Reply

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


class OutgoingWebhook(_Lenient):
    """The downstream's `message_created` webhook (Chatwoot-style); other events are ignored."""

    event: str
    id: int | str | None = None
    content: Text | None = Field(default=None, max_length=MAX_CONTENT_CHARS)
    message_type: str | None = None
    content_type: str | None = None
    private: bool = False
    source_id: str | None = None
    conversation: _ConversationRef | None = None

    def reply(self) -> Reply | None:
        """The reply to send, or None when this is not a public message for the customer."""
        if self.event != "message_created" or self.message_type not in SENT_TYPES or self.private:
            return None
        if self.source_id or self.content_type == "voice_call":
            return None
        if self.message_type == "template" and (self.content_type or "text") not in TEMPLATE_CONTENT_TYPES:
            return None
        sender = self.conversation.meta.sender if self.conversation and self.conversation.meta else None
        address = _address(sender)
        if not (self.content and self.content.strip() and self.id is not None and address):
            return None
        return Reply(
            message_id=str(self.id),
            phone=address,
            text=self.content,
            conversation_id=self.conversation.id if self.conversation else None,
        )


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
        description="SENT (every part, for a reply longer than one message), PENDING (in the outbox), FAILED, or "
        "IGNORED (not a message for the customer: a private note, an incoming message, an echo from the channel)"
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

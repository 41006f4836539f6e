"""Bodies of the replies API: the downstream's webhook and our answers to it (camelCase).

Apart from the tenants' downstream schemas: each function builds only the models of its routes."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from switchboard.catalog.wire import View
from switchboard.core.model import Model, Text
from switchboard.routing.outbox import Reply

SECRET_HEADER = "X-Switchboard-Secret"  # noqa: S105 - a header name, not a secret
TOKEN_PARAMETER = "token"  # noqa: S105 - a parameter name, not a secret


class _Lenient(Model):
    model_config = ConfigDict(extra="ignore")


class _Sender(_Lenient):
    phone_number: str | None = None


class _Meta(_Lenient):
    sender: _Sender | None = None


class _ConversationRef(_Lenient):
    id: int | None = None
    meta: _Meta | None = None


class OutgoingWebhook(_Lenient):
    """The downstream's `message_created` webhook (Chatwoot-style); other events are ignored."""

    event: str
    id: int | str | None = None
    content: Text | None = Field(default=None, max_length=4096)
    message_type: str | None = None
    private: bool = False
    conversation: _ConversationRef | None = None

    def reply(self) -> Reply | None:
        """The reply to send, or None when this is not an outgoing public text message."""
        if self.event != "message_created" or self.message_type != "outgoing" or self.private:
            return None
        phone = (
            self.conversation.meta.sender.phone_number
            if self.conversation and self.conversation.meta and self.conversation.meta.sender
            else None
        )
        digits = (phone or "").lstrip("+")
        if not (self.content and self.id is not None and digits.isdigit() and 8 <= len(digits) <= 15):
            return None
        return Reply(
            message_id=str(self.id),
            phone=digits,
            text=self.content,
            conversation_id=self.conversation.id if self.conversation else None,
        )


class OutgoingView(View):
    status: str = Field(description="SENT, PENDING (in the outbox), FAILED, or IGNORED (not an outgoing message)")
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

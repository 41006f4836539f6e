"""Bodies of the routing API: downstream mappings, outgoing replies, usage and audit (camelCase)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints

from switchboard.catalog.domain import Tenant
from switchboard.catalog.schemas import Body, Secret, TenantView, View
from switchboard.core.model import Model, Text
from switchboard.routing.domain import DownstreamMapping
from switchboard.routing.outbox import Reply

# Printable ASCII only: an internationalised host must come as punycode (xn--...).
DownstreamUrl = Annotated[str, StringConstraints(pattern=r"^https?://[!-~]+$", max_length=2048)]
SECRET_HEADER = "X-Switchboard-Secret"  # noqa: S105 - a header name, not a secret
TOKEN_PARAMETER = "token"  # noqa: S105 - a parameter name, not a secret


# --- downstream mappings -------------------------------------------------------------------


class PutDownstream(Body):
    """Upsert of a tenant's downstream. The token is write-only; omit it to keep the current one."""

    downstream_base_url: DownstreamUrl
    downstream_api_token: Secret | None = None
    downstream_account_id: int = Field(ge=1, lt=2**53)
    downstream_inbox_id: int = Field(ge=1, lt=2**53)


class DownstreamView(View):
    downstream_base_url: str
    downstream_account_id: int
    downstream_inbox_id: int
    downstream_api_token_set: bool = True
    downstream_api_token_hint: str
    updated_at: datetime

    @classmethod
    def of(cls, mapping: DownstreamMapping) -> DownstreamView:
        return cls(
            downstream_base_url=mapping.base_url,
            downstream_account_id=mapping.account_id,
            downstream_inbox_id=mapping.inbox_id,
            downstream_api_token_hint=mapping.token_hint,
            updated_at=mapping.updated_at,
        )


class TenantRoutingView(TenantView):
    downstream: DownstreamView | None = Field(
        default=None, description="The tenant's own downstream; null: its instances use the global fallback."
    )

    @classmethod
    def with_mapping(cls, tenant: Tenant, mapping: DownstreamMapping | None) -> TenantRoutingView:
        return cls(
            **TenantView.of(tenant).model_dump(),
            downstream=DownstreamView.of(mapping) if mapping else None,
        )


# --- outgoing replies ----------------------------------------------------------------------


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


# --- usage and audit -----------------------------------------------------------------------

"""`ProviderClient` for the Meta WhatsApp Cloud API: text messages only.

`POST /{version}/{phone-number-id}/messages` with `Authorization: Bearer <token>` (the target's
instance token) and `{"messaging_product": "whatsapp", "to", "type": "text", "text": {"body"}}`.
The phone-number id is `target.meta_phone_id`, else `provider_instance_id`. A Cloud API number has
no session to lose, so `instance_status` answers connected without a request. The Cloud API has
no idempotency key: after a `ProviderTimeout` a retry may send twice. Calls, call settings and
webhook subscriptions raise `UnsupportedByProvider`.
"""

from __future__ import annotations

import httpx
from pydantic import ConfigDict, Field, StrictStr

from switchboard.core.errors import InvalidInput
from switchboard.core.model import Model
from switchboard.providers.base import (
    InstanceStatus,
    ProviderTarget,
    SentMessage,
)
from switchboard.providers.http import DEFAULT_READ_TIMEOUT_SECONDS, ProviderHttp, path_segment
from switchboard.providers.messaging_only import MessagingOnly

DEFAULT_API_VERSION = "v21.0"
SEND_ROUTE = "/{version}/{phone-number-id}/messages"


class _Answer(Model):
    model_config = ConfigDict(extra="ignore")


class _MessageId(_Answer):
    id: StrictStr = Field(min_length=1)


class _SendAnswer(_Answer):
    messages: list[_MessageId] = Field(min_length=1)


class MetaCloudClient(MessagingOnly):
    provider_label = "the Meta Cloud API client"
    subscriptions_note = "Cloud API webhooks are configured in the Meta app, not per number"

    def __init__(
        self,
        *,
        local_mode: bool,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
        api_version: str = DEFAULT_API_VERSION,
    ) -> None:
        self._http = ProviderHttp("meta", local_mode=local_mode, read_timeout=read_timeout, transport=transport)
        self._api_version = api_version

    def close(self) -> None:
        self._http.close()

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        if not target.instance_token:
            raise InvalidInput("the target has no Cloud API access token")
        phone_id = target.meta_phone_id or target.provider_instance_id
        path = f"/{path_segment(self._api_version)}/{path_segment(phone_id)}/messages"
        response = self._http.request(
            "POST",
            target.base_url,
            path,
            route=SEND_ROUTE,
            headers={"Authorization": f"Bearer {target.instance_token}"},
            body={"messaging_product": "whatsapp", "to": phone, "type": "text", "text": {"body": body}},
        )
        answer = self._http.answer(response, _SendAnswer, self._http.label("POST", SEND_ROUTE))
        return SentMessage(provider_message_id=answer.messages[0].id)

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        return InstanceStatus(connected=True, kind="meta")

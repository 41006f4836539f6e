"""`ProviderClient` for Evolution API v2: text messages and connection state only.

`POST /message/sendText/{instance}` and `GET /instance/connectionState/{instance}`, header
`apikey` (the instance token, else the server's global key). Evolution has no idempotency key:
after a `ProviderTimeout` a retry may send twice. Calls, call settings and webhook subscriptions
raise `UnsupportedByProvider`; `capabilities` announces none without a request.
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

SEND_ROUTE = "/message/sendText/{instance}"
STATE_ROUTE = "/instance/connectionState/{instance}"


class _Answer(Model):
    model_config = ConfigDict(extra="ignore")


class _MessageKey(_Answer):
    id: StrictStr = Field(min_length=1)


class _SendAnswer(_Answer):
    key: _MessageKey


class _ConnectionState(_Answer):
    state: StrictStr  # "open", "connecting" or "close"


class _StateAnswer(_Answer):
    instance: _ConnectionState


class EvolutionClient(MessagingOnly):
    provider_label = "Evolution API"
    subscriptions_note = "Evolution API subscriptions are not managed through this client"

    def __init__(
        self,
        *,
        local_mode: bool,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = ProviderHttp("evolution", local_mode=local_mode, read_timeout=read_timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        path = f"/message/sendText/{path_segment(target.provider_instance_id)}"
        response = self._http.request(
            "POST",
            target.base_url,
            path,
            route=SEND_ROUTE,
            headers=self._headers(target),
            body={"number": phone, "text": body},
        )
        answer = self._http.answer(response, _SendAnswer, self._http.label("POST", SEND_ROUTE))
        return SentMessage(provider_message_id=answer.key.id)

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        path = f"/instance/connectionState/{path_segment(target.provider_instance_id)}"
        response = self._http.request("GET", target.base_url, path, route=STATE_ROUTE, headers=self._headers(target))
        answer = self._http.answer(response, _StateAnswer, self._http.label("GET", STATE_ROUTE))
        return InstanceStatus(connected=answer.instance.state == "open", kind="messages")

    @staticmethod
    def _headers(target: ProviderTarget) -> dict[str, str]:
        key = target.instance_token or target.admin_token
        if not key:
            raise InvalidInput("the target has no Evolution API key")
        return {"apikey": key}

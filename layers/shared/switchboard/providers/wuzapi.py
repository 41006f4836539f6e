"""`ProviderClient` for wuzapi servers and their calls-capable variant; `devstack.simulator` speaks it.

Wire contract, besides the HTTP error mapping of `_http`:

- instance routes send header `token`; `set_call_settings` uses the admin route
  `POST /v1/instances/{id}/call-settings` with `admintoken` only when the target has no instance token;
- `409 {"error": "not_connected"}` (send or dial while the instance has no WhatsApp session)
  -> `ProviderDisconnected`; `409 {"error": "line_busy"}` on dial -> `ProviderLineBusy`;
- `send_text` passes its key as `Idempotency-Key`, but the server does not deduplicate sends: after a
  `ProviderTimeout` a retry may deliver the message twice. Dials are deduplicated by the key.
- `callsConfigVersion` is a 64-bit integer parsed without a float in between; absent stays None.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx
from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from switchboard.core.errors import Conflict, InvalidInput, ProviderDisconnected, ProviderLineBusy
from switchboard.core.model import Model
from switchboard.providers.base import (
    CallState,
    Capabilities,
    DialResult,
    InstanceStatus,
    ProviderCall,
    ProviderTarget,
    SentMessage,
    WebhookSubscription,
)
from switchboard.providers.http import (
    DEFAULT_READ_TIMEOUT_SECONDS,
    ProviderHttp,
    error_code,
    path_segment,
)

MAX_VERSION = 2**63 - 1


class _Answer(Model):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class _Instance(_Answer):
    connected: StrictBool
    kind: StrictStr | None = None
    calls_max_concurrent: StrictInt | None = None
    calls_config_version: StrictInt | None = Field(default=None, ge=0, le=MAX_VERSION)
    updated: StrictStr | None = None

    def status(self) -> InstanceStatus:
        return InstanceStatus(
            connected=self.connected,
            kind=self.kind,
            calls_max_concurrent=self.calls_max_concurrent,
            calls_config_version=self.calls_config_version,
            updated=self.updated,
        )


class _InstanceAnswer(_Answer):
    instance: _Instance


class _CapabilityFlags(Model):
    calls: StrictBool = False
    calls_per_instance_limit: StrictBool = False
    calls_settings_webhook: StrictBool = False
    calls_video: StrictBool = False


class _Range(Model):
    min: StrictInt
    max: StrictInt


class _CapabilitiesAnswer(Model):
    capabilities: _CapabilityFlags = Field(default_factory=_CapabilityFlags)
    calls_max_concurrent: StrictInt | None = None
    calls_max_concurrent_range: _Range = Field(default_factory=lambda: _Range(min=1, max=8))


class _WebhookAnswer(_Answer):
    url: StrictStr | None = None
    events: list[StrictStr] = Field(default_factory=list)
    filters: dict[str, Any] = Field(default_factory=dict)
    enabled: StrictBool = False
    inherited: StrictBool = False


class _Call(_Answer):
    call_id: StrictStr
    state: CallState
    direction: Literal["incoming", "outgoing"] | None = None
    from_: StrictStr | None = Field(default=None, alias="from")
    to: StrictStr | None = None
    video: StrictBool = False
    end_reason: StrictStr | None = None
    ended_by: StrictStr | None = None

    def call(self) -> ProviderCall:
        return ProviderCall(
            call_id=self.call_id,
            state=self.state,
            direction=self.direction,
            peer=self.from_ if self.direction == "incoming" else self.to,
            video=self.video,
            end_reason=self.end_reason,
            ended_by=self.ended_by,
        )


class _CallAnswer(_Answer):
    call: _Call


class _CallsAnswer(_Answer):
    calls: list[_Call]


class _DialAnswer(_Answer):
    call_id: StrictStr = Field(min_length=1)


class _SentAnswer(_Answer):
    id: StrictStr = Field(min_length=1)


class WuzapiClient:
    """Talks to wuzapi-style servers; one instance serves every target of this kind."""

    def __init__(
        self,
        *,
        local_mode: bool,
        read_timeout: float = DEFAULT_READ_TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = ProviderHttp("wuzapi", local_mode=local_mode, read_timeout=read_timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    # --- messages ----------------------------------------------------------------------------

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        response = self._call(
            target,
            "POST",
            "/chat/send/text",
            body={"phone": phone, "body": body},
            idempotency_key=idempotency_key,
        )
        answer = self._http.answer(response, _SentAnswer, self._http.label("POST", "/chat/send/text"))
        return SentMessage(provider_message_id=answer.id)

    # --- instance and call settings ----------------------------------------------------------

    def capabilities(self, target: ProviderTarget) -> Capabilities:
        """What the server announces; a server without the route (older versions) announces nothing."""
        response = self._call(target, "GET", "/v1/capabilities")
        if response.status_code == 404:
            return Capabilities()
        answer = self._http.answer(response, _CapabilitiesAnswer, self._http.label("GET", "/v1/capabilities"))
        return Capabilities(
            **answer.capabilities.model_dump(),
            calls_max_concurrent=answer.calls_max_concurrent,
            calls_min=answer.calls_max_concurrent_range.min,
            calls_max=answer.calls_max_concurrent_range.max,
        )

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        response = self._call(target, "GET", "/instance/status")
        return self._http.answer(
            response, _InstanceAnswer, self._http.label("GET", "/instance/status")
        ).instance.status()

    def set_call_settings(self, target: ProviderTarget, calls_max_concurrent: int) -> InstanceStatus:
        """Save the limit; the answer is the canonical (limit, version) snapshot.

        The server has no conditional write: the last save wins and every save bumps the version.
        After a `ProviderTimeout`, read the status before repeating the change.
        """
        body = {"callsMaxConcurrent": calls_max_concurrent}
        if target.instance_token:
            route = "/instance/call-settings"
            response = self._call(target, "POST", route, body=body)
        else:
            route = "/v1/instances/{id}/call-settings"
            path = f"/v1/instances/{path_segment(target.provider_instance_id)}/call-settings"
            response = self._http.request(
                "POST", target.base_url, path, route=route, headers=self._admin_headers(target), body=body
            )
        return self._http.answer(response, _InstanceAnswer, self._http.label("POST", route)).instance.status()

    # --- webhook subscription ----------------------------------------------------------------

    def get_webhook(self, target: ProviderTarget) -> WebhookSubscription:
        response = self._call(target, "GET", "/webhook")
        answer = self._http.answer(response, _WebhookAnswer, self._http.label("GET", "/webhook"))
        return WebhookSubscription(**answer.model_dump(), exists=answer.url is not None)

    def update_webhook_events(self, target: ProviderTarget, events: list[str]) -> WebhookSubscription:
        """Replace the event list of the instance's own subscription; URL, secret, filters and enabled stay.

        The server would turn an inherited (global) subscription into the instance's own on any
        POST, so this refuses with `Conflict` instead: that change needs an explicit decision.
        """
        current = self.get_webhook(target)
        if current.inherited or not current.exists:
            raise Conflict(
                "the instance has no webhook subscription of its own; it is not created implicitly",
                reason="webhook_inherited" if current.inherited else "webhook_absent",
            )
        response = self._call(target, "POST", "/webhook", body={"events": events})
        answer = self._http.answer(response, _WebhookAnswer, self._http.label("POST", "/webhook"))
        return WebhookSubscription(**answer.model_dump(), exists=True)

    # --- calls -------------------------------------------------------------------------------

    def dial(self, target: ProviderTarget, phone: str, video: bool, idempotency_key: str) -> DialResult:
        """Dial once per key: repeating the key after a `ProviderTimeout` returns the same call."""
        response = self._call(
            target,
            "POST",
            "/call/dial",
            body={"phone": phone, "video": video},
            idempotency_key=idempotency_key,
        )
        answer = self._http.answer(response, _DialAnswer, self._http.label("POST", "/call/dial"))
        return DialResult(call_id=answer.call_id)

    def active_calls(self, target: ProviderTarget) -> list[ProviderCall]:
        """Live calls with an id; the server's own dial reservations without an id are not listed."""
        return self._calls(target, "/call/active")

    def call_history(self, target: ProviderTarget) -> list[ProviderCall]:
        return self._calls(target, "/call/history")

    def get_call(self, target: ProviderTarget, call_id: str) -> ProviderCall | None:
        route = "/call/{id}"
        response = self._call(target, "GET", f"/call/{path_segment(call_id)}", route=route)
        if response.status_code == 404 and error_code(response) == "call_not_found":
            return None
        return self._http.answer(response, _CallAnswer, self._http.label("GET", route)).call.call()

    def hangup(self, target: ProviderTarget, call_id: str) -> None:
        response = self._call(target, "POST", "/call/hangup", body={"callId": call_id})
        self._http.expect_success(response, self._http.label("POST", "/call/hangup"))

    def stop_video(self, target: ProviderTarget, call_id: str) -> None:
        """Turn the camera off; the call keeps its slot."""
        response = self._call(target, "POST", "/call/video", body={"callId": call_id, "action": "stop"})
        self._http.expect_success(response, self._http.label("POST", "/call/video"))

    def _calls(self, target: ProviderTarget, route: str) -> list[ProviderCall]:
        response = self._call(target, "GET", route)
        answer = self._http.answer(response, _CallsAnswer, self._http.label("GET", route))
        return [call.call() for call in answer.calls]

    # --- plumbing ----------------------------------------------------------------------------

    def _call(
        self,
        target: ProviderTarget,
        method: str,
        path: str,
        *,
        route: str | None = None,
        body: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> httpx.Response:
        """An instance route; a 409 not_connected / line_busy becomes its own error here."""
        route = route or path
        headers = self._instance_headers(target)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        response = self._http.request(method, target.base_url, path, route=route, headers=headers, body=body)
        if response.status_code == 409:
            code = error_code(response)
            if code == "not_connected":
                raise ProviderDisconnected(f"{self._http.label(method, route)}: the instance is not connected")
            if code == "line_busy":
                raise ProviderLineBusy(f"{self._http.label(method, route)}: no free call slot")
        return response

    @staticmethod
    def _instance_headers(target: ProviderTarget) -> dict[str, str]:
        if not target.instance_token:
            raise InvalidInput("the target has no instance token")
        return {"token": target.instance_token}

    @staticmethod
    def _admin_headers(target: ProviderTarget) -> dict[str, str]:
        if not target.admin_token:
            raise InvalidInput("the target has neither an instance nor an admin token")
        return {"admintoken": target.admin_token}

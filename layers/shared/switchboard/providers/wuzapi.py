"""`ProviderClient` for wuzapi servers and their calls-capable variant; `devstack.simulator` speaks it.

A plain wuzapi (asternic/wuzapi) serves messages; the calls-capable server built on it adds
`/v1/capabilities`, `/instance/status`, call settings, its own `GET/POST /webhook` shape, `/call/*`
and signed envelope webhooks. Wire contract, besides the HTTP error mapping of `_http`:

- instance routes send header `token`; `set_call_settings` uses the admin route
  `POST /v1/instances/{id}/call-settings` with `admintoken` only when the target has no instance token;
- wuzapi wraps answers as `{"code", "data", "success"}` or `{"code", "error", "success"}` and
  reports state problems as 500 with a text `error`: `no session`, `... not connected`, `... device
  JID` (not paired) -> `ProviderDisconnected`; `... timed out ...` on a send -> `ProviderTimeout`;
- `409 {"error": "not_connected"}` (the calls-capable server, send or dial without a WhatsApp
  session) -> `ProviderDisconnected`; `409 {"error": "line_busy"}` on dial -> `ProviderLineBusy`;
- `send_text` passes its key as wuzapi's message `Id` (and as `Idempotency-Key`): a retry after a
  `ProviderTimeout` sends the same WhatsApp message id again. Neither server refuses a reused id;
  that the recipient keeps one message per id is WhatsApp's behaviour. Dials are deduplicated by
  the key;
- `instance_status` reads `/instance/status`; a server without that route (404, a plain wuzapi)
  is read through `/session/status` (`connected && loggedIn`), remembered per base URL for a while;
- `configure_webhook` / `read_webhook` manage a plain wuzapi's webhook and HMAC key;
- `callsConfigVersion` is a 64-bit integer parsed without a float in between; absent stays None.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, Literal

import httpx
from pydantic import AliasChoices, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from switchboard.core.api.body import read_answer
from switchboard.core.clock import Deadline
from switchboard.core.errors import (
    CallEnded,
    Conflict,
    InvalidInput,
    ProviderDisconnected,
    ProviderLineBusy,
    ProviderThrottled,
    ProviderTimeout,
    UnsupportedByProvider,
    provider_text,
)
from switchboard.core.model import Model
from switchboard.providers import envelope, wuzapi_send, wuzapi_webhooks
from switchboard.providers.base import (
    WHATSAPP_TEXT_CHARS,
    CallState,
    Capabilities,
    Credentials,
    DeliveryToken,
    DialResult,
    DownloadedMedia,
    InboundEvent,
    InstanceStatus,
    KindDefaults,
    MediaAttachment,
    OutgoingFile,
    Pairing,
    ProviderCall,
    ProviderClient,
    ProviderKindSpec,
    ProviderTarget,
    Quote,
    SentMessage,
    UploadedMedia,
    WebhookRequest,
    WebhookSubscription,
)
from switchboard.providers.content import Content, Interactive, MediaSource
from switchboard.providers.http import (
    DEFAULT_READ_TIMEOUT_SECONDS,
    ProviderHttp,
    error_code,
    path_segment,
)
from switchboard.providers.kinds import ProviderKind, WebhookScheme

MAX_VERSION = 2**63 - 1
PLAIN_SERVER_MEMO_SECONDS = 600.0
MIN_HMAC_KEY_CHARS = 32

# The events switchboard maps (`wuzapi_webhooks`). wuzapi posts receipts as `ReadReceipt`, so a
# `Receipt` subscription never matches anything; `PushNameSetting` is posted as `Connected`.
WEBHOOK_EVENTS = ("Message", "ReadReceipt", "Connected", "Disconnected", "LoggedOut")
WEBHOOK_EVENT_NAMES = frozenset(
    {
        *WEBHOOK_EVENTS,
        *("UndecryptableMessage", "MediaRetry", "GroupInfo", "JoinedGroup", "Picture", "BlocklistChange"),
        *("Blocklist", "ConnectFailure", "KeepAliveRestored", "KeepAliveTimeout", "QRTimeout", "ClientOutdated"),
        *("TemporaryBan", "StreamError", "StreamReplaced", "PairSuccess", "PairError", "QR", "PrivacySettings"),
        *("QRScannedWithoutMultidevice", "UserAbout", "AppState", "AppStateSyncComplete", "HistorySync"),
        *("OfflineSyncCompleted", "OfflineSyncPreview", "CallOffer", "CallAccept", "CallTerminate"),
        *("CallOfferNotice", "CallRelayLatency", "Presence", "ChatPresence", "IdentityChange", "CATRefreshError"),
        *("NewsletterJoin", "NewsletterLeave", "NewsletterMuteChange", "NewsletterLiveUpdate", "FBMessage", "All"),
    }
)
# Lower-cased fragments of wuzapi's 500 `error` texts (whatsmeow errors, possibly wrapped).
_NO_SESSION = ("no session", "not connected", "not logged in", "device jid")
_TIMED_OUT = ("timed out", "deadline exceeded")
# whatsmeow wraps WhatsApp's refusal of a send as "server returned error <code>", which wuzapi
# answers 500 "error sending message: server returned error 463". 463 is the reach-out timelock:
# the number may not start new conversations for a while.
_SERVER_ERROR = re.compile(r"server returned error (\d{3})\b")
_NUMBER_LIMIT_CODES = frozenset({"463"})


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
            from_number=self.from_,
            to_number=self.to,
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


class _AttachAnswer(_Answer):
    media_url: StrictStr = Field(min_length=1)
    expires_at: StrictStr
    session_id: StrictStr = Field(min_length=1)
    resumed: StrictBool = False
    detached_for_seconds: float | None = Field(default=None, ge=0)


class _Plain(Model):
    """A plain wuzapi answer: Go field names, read as they are."""

    model_config = ConfigDict(extra="ignore")


class _SentData(_Plain):
    id: StrictStr = Field(alias="Id", min_length=1)


class _SentAnswer(_Plain):
    """wuzapi's `{"code", "data": {"Details", "Id", "Timestamp"}, "success"}`, or the calls-capable `{"id"}`."""

    data: _SentData | None = None
    id: StrictStr | None = Field(default=None, min_length=1)


class _Session(_Plain):
    """`/session/status` data; it also echoes the user's token, which is never read."""

    connected: StrictBool = Field(validation_alias=AliasChoices("connected", "Connected"))
    logged_in: StrictBool = Field(validation_alias=AliasChoices("loggedIn", "LoggedIn"))


class _SessionAnswer(_Plain):
    data: _Session


class _PlainWebhook(_Plain):
    webhook: StrictStr = ""
    subscribe: list[StrictStr] | None = None


class _PlainWebhookAnswer(_Plain):
    data: _PlainWebhook


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
        self._plain_until: dict[str, float] = {}  # base URL -> until when it is known to lack /instance/status

    def close(self) -> None:
        self._http.close()

    def download_media(
        self, target: ProviderTarget, source: MediaSource, *, max_bytes: int, deadline: Deadline | None = None
    ) -> DownloadedMedia:
        from switchboard.providers import wuzapi_media  # noqa: PLC0415 - only the forwarder fetches media

        return wuzapi_media.download(self._http, target, source, max_bytes, deadline)

    # --- messages ----------------------------------------------------------------------------

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        """Send under the message id `idempotency_key`; after a `ProviderTimeout` retry with the same key."""
        return self._send(
            target, "/chat/send/text", {"Phone": phone, "Body": body, "Id": idempotency_key}, idempotency_key
        )

    def send_content(
        self,
        target: ProviderTarget,
        phone: str,
        content: Content,
        idempotency_key: str,
        *,
        quoted: Quote | None = None,
        file: OutgoingFile | None = None,
        uploaded: UploadedMedia | None = None,
    ) -> SentMessage:
        """Send `content` through its `/chat/send/*` route (`wuzapi_send`), as `send_text` sends a text.
        Reply buttons with a file header go as two messages (the server has no file headers): the
        file first (its `Id` derived from ours, so a resend reuses it too), then the text menu."""
        if isinstance(content, Interactive):
            header, content = content.header_first()
            if header is not None:
                key = f"{idempotency_key}-header"
                first = wuzapi_send.request_for(phone, header, key, quoted=quoted, file=file)
                self._send(target, first.route, first.body, key)
                quoted, file = None, None
        request = wuzapi_send.request_for(phone, content, idempotency_key, quoted=quoted, file=file)
        return self._send(target, request.route, request.body, idempotency_key)

    def revoke(self, target: ProviderTarget, phone: str, provider_message_id: str) -> None:
        """`POST /chat/delete` `{Phone, Id}` (handlers.go `DeleteMessage`: whatsmeow's `BuildRevoke`
        of our own message in the chat with `Phone`)."""
        self._send(target, "/chat/delete", {"Phone": phone, "Id": provider_message_id}, f"revoke-{provider_message_id}")

    def _send(self, target: ProviderTarget, route: str, body: dict[str, Any], idempotency_key: str) -> SentMessage:
        label = self._http.label("POST", route)
        response = self._call(target, "POST", route, body=body, idempotency_key=idempotency_key)
        if (status := response.status_code) >= 500:
            text = _error_text(response)
            if any(fragment in text for fragment in _NO_SESSION):
                raise ProviderDisconnected(f"{label}: the instance has no WhatsApp session", status=status)
            if any(fragment in text for fragment in _TIMED_OUT):
                raise ProviderTimeout(f"{label}: WhatsApp did not confirm the send in time, the outcome is unknown")
            if (code := _server_error_code(text)) in _NUMBER_LIMIT_CODES:
                message = f"{label}: WhatsApp refused the send ({code}, reach-out timelock)"
                raise ProviderThrottled(message, status=status, provider_code=code)
        if not response.is_success:
            error = self._http.error_for(response, label)
            if (words := provider_text(_error_words(response))) is not None:
                error.details["provider_message"] = words
            raise error
        answer = self._http.answer(response, _SentAnswer, label)
        message_id = answer.data.id if answer.data is not None else answer.id
        if message_id is None:
            raise ProviderTimeout(f"{label}: the answer has no message id, the outcome is unknown")
        return SentMessage(provider_message_id=message_id)

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
        """`/instance/status`, or `/session/status` on a server without it (a plain wuzapi)."""
        if self._plain_until.get(target.base_url, 0.0) > time.monotonic():
            status = self._session_status(target)
            if status is not None:
                return status
            self._plain_until.pop(target.base_url, None)
        response = self._call(target, "GET", "/instance/status")
        if response.status_code == 404:
            status = self._session_status(target)
            if status is None:
                raise self._http.error_for(response, self._http.label("GET", "/instance/status"))
            if len(self._plain_until) >= 256:
                self._plain_until.clear()
            self._plain_until[target.base_url] = time.monotonic() + PLAIN_SERVER_MEMO_SECONDS
            return status
        return self._http.answer(
            response, _InstanceAnswer, self._http.label("GET", "/instance/status")
        ).instance.status()

    def _session_status(self, target: ProviderTarget) -> InstanceStatus | None:
        """Connected and usable is `connected && loggedIn`; None when the server has no such route."""
        response = self._call(target, "GET", "/session/status")
        if response.status_code == 404:
            return None
        session = self._http.answer(response, _SessionAnswer, self._http.label("GET", "/session/status")).data
        return InstanceStatus(connected=session.connected and session.logged_in)

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

    # --- a plain wuzapi's webhook -------------------------------------------------------------

    def configure_webhook(
        self, target: ProviderTarget, url: str, events: Sequence[str], hmac_key: str
    ) -> WebhookSubscription:
        """Set the user's HMAC key, then its webhook URL with the full event list.

        The key goes first so no delivery leaves unsigned. `events` is always sent: a
        `POST /webhook` without it empties the server's in-memory subscription and every delivery
        stops. `POST /session/connect` and `/session/disconnect` overwrite the events, and after a
        server restart the key may be missing from its cache (deliveries then come unsigned and
        are refused): call this again after every connect.
        """
        events = list(events)
        if not url:
            raise InvalidInput("the webhook URL is empty")
        if not events:
            raise InvalidInput("wuzapi needs the full event list: without one its deliveries stop")
        unknown = sorted(set(events) - WEBHOOK_EVENT_NAMES)
        if unknown:
            raise InvalidInput(f"not wuzapi webhook events: {', '.join(unknown)}")
        if len(hmac_key) < MIN_HMAC_KEY_CHARS:
            raise InvalidInput(f"the webhook key needs at least {MIN_HMAC_KEY_CHARS} characters")
        response = self._call(target, "POST", "/session/hmac/config", body={"hmac_key": hmac_key})
        self._http.expect_success(response, self._http.label("POST", "/session/hmac/config"))
        response = self._call(target, "POST", "/webhook", body={"webhookurl": url, "events": events})
        answer = self._http.answer(response, _PlainWebhookAnswer, self._http.label("POST", "/webhook")).data
        return WebhookSubscription(
            url=answer.webhook or None, events=events, enabled=bool(answer.webhook), exists=bool(answer.webhook)
        )

    def read_webhook(self, target: ProviderTarget) -> WebhookSubscription:
        """A plain wuzapi's `GET /webhook` (`{webhook, subscribe}`), as the server has it stored.

        The server delivers from a cache that a `POST /webhook` without events or a
        connect/disconnect may have changed since: this is not proof that deliveries flow.
        """
        response = self._call(target, "GET", "/webhook")
        answer = self._http.answer(response, _PlainWebhookAnswer, self._http.label("GET", "/webhook")).data
        events = [event for event in answer.subscribe or [] if event]
        url = answer.webhook or None
        return WebhookSubscription(url=url, events=events, enabled=bool(url and events), exists=url is not None)

    # --- pairing a phone (a plain wuzapi's session routes: `wuzapi_pairing`) -------------------

    @property
    def http(self) -> ProviderHttp:
        return self._http

    def instance_request(
        self, target: ProviderTarget, method: str, route: str, body: dict[str, Any] | None
    ) -> httpx.Response:
        """A request to an instance route with the instance's token (no error mapping of its own)."""
        return self._call(target, method, route, body=body)

    @staticmethod
    def error_text(response: httpx.Response) -> str:
        return _error_text(response)

    def start_session(self, target: ProviderTarget) -> Pairing:
        """`POST /session/connect` subscribing the events switchboard maps, then the pairing."""
        from switchboard.providers import wuzapi_pairing  # noqa: PLC0415 - only the catalog pairs

        return wuzapi_pairing.start_session(self, target, list(WEBHOOK_EVENTS))

    def pairing(self, target: ProviderTarget) -> Pairing:
        from switchboard.providers import wuzapi_pairing  # noqa: PLC0415 - only the catalog pairs

        return wuzapi_pairing.pairing(self, target)

    def log_out(self, target: ProviderTarget) -> None:
        from switchboard.providers import wuzapi_pairing  # noqa: PLC0415 - only the catalog pairs

        wuzapi_pairing.log_out(self, target)

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

    def attach_media(self, target: ProviderTarget, call_id: str, *, resume: bool = True) -> MediaAttachment:
        """`POST /call/{id}/attach`: a one-time media URL for a live call of this instance.

        A server without the route (a plain wuzapi, an older calls server) answers 404 without
        `call_not_found`: `UnsupportedByProvider` `not_supported`. An ended call: `CallEnded`.
        """
        route = "/call/{id}/attach"
        label = self._http.label("POST", route)
        response = self._call(
            target, "POST", f"/call/{path_segment(call_id)}/attach", route=route, body={"resume": resume}
        )
        code = error_code(response)
        if response.status_code == 404 and code != "call_not_found":
            raise UnsupportedByProvider("the provider server offers no call media attachment", code="not_supported")
        if response.status_code == 409 and code == "call_ended":
            raise CallEnded("the call has ended at the provider")
        answer = self._http.answer(response, _AttachAnswer, label)
        return MediaAttachment.model_validate(answer.model_dump())

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


def _server_error_code(text: str) -> str | None:
    match = _SERVER_ERROR.search(text)
    return match.group(1) if match else None


def _error_words(response: httpx.Response) -> str | None:
    """wuzapi's `error` text as it wrote it, kept for the operator."""
    try:
        payload = read_answer(response.content)
    except ValueError:
        return None
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, str) else None


def _error_text(response: httpx.Response) -> str:
    """wuzapi's `error` text, lower-cased, to classify it; never copied into our messages."""
    try:
        payload = read_answer(response.content)
    except ValueError:
        return ""
    error = payload.get("error") if isinstance(payload, dict) else None
    return error.lower() if isinstance(error, str) else ""


class WuzapiKind(KindDefaults):
    """wuzapi, and the calls-capable server built on it (which announces calls in `/v1/capabilities`).

    Each server signs its deliveries one way, stored with its provider: the calls-capable server's
    signed envelope (`envelope`: `X-Webhook-Timestamp`, `X-Webhook-Signature`, its events in the
    envelope format) or a plain wuzapi's (`wuzapi-hmac`: `x-hmac-signature`, `wuzapi_webhooks`).
    Both are checked against the provider's webhook secret (a plain wuzapi's `hmac_key`), never
    one in place of the other: the headers of a delivery choose nothing.
    """

    name: ProviderKind = "wuzapi"
    retry_safe = True
    always_connected = False
    # `/chat/send/text` checks only that `Body` is not empty (nor does whatsmeow): WhatsApp's applies.
    text_limit = WHATSAPP_TEXT_CHARS
    schemes: tuple[WebhookScheme, ...] = ("envelope", "wuzapi-hmac")

    def client(
        self,
        *,
        local_mode: bool,
        read_timeout: float,
        transport: httpx.BaseTransport | None = None,
        api_version: str | None = None,
    ) -> ProviderClient:
        return WuzapiClient(local_mode=local_mode, read_timeout=read_timeout, transport=transport)

    def authenticate(
        self, request: WebhookRequest, credentials: Credentials, now: float, scheme: WebhookScheme
    ) -> DeliveryToken | None:
        if scheme == "envelope":
            envelope.authenticate(request, credentials, now)
        elif scheme == "wuzapi-hmac":
            wuzapi_webhooks.authenticate(request, credentials)
        else:
            raise envelope.refused()
        return None

    def events(self, request: WebhookRequest, scheme: WebhookScheme) -> list[InboundEvent]:
        if scheme == "envelope":
            return envelope.events(request)
        return wuzapi_webhooks.events(request)

    def configure_webhooks(self, client: ProviderClient, target: ProviderTarget, url: str, secret: str) -> bool:
        """A plain wuzapi gets our URL, its full event list and the provider's secret as its HMAC key.

        A calls-capable server's subscription is prepared by the call limit instead (it merges
        events and keeps inherited settings), and a secret shorter than wuzapi's minimum cannot be
        its HMAC key: both are left to the operator. So is a server that announces calls although
        its provider was saved as a plain wuzapi: its subscription is not a plain wuzapi's."""
        if target.webhook_scheme not in (None, "wuzapi-hmac"):
            return False
        if not isinstance(client, WuzapiClient) or len(secret) < MIN_HMAC_KEY_CHARS:
            return False
        if client.capabilities(target).calls:
            return False
        client.configure_webhook(target, url, WEBHOOK_EVENTS, secret)
        return True


KIND: ProviderKindSpec = WuzapiKind()

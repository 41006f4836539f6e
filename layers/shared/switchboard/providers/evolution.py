"""Evolution API v2: its client (text messages and connection state) and its webhooks (`KIND`).

Outbound: `POST /message/sendText/{instance}`, `GET /instance/connectionState/{instance}` and
`POST /chat/whatsappNumbers/{instance}` (the phone number behind a LID, where Evolution knows
it), header `apikey` (the instance token, else the server's global key). Evolution has no send
idempotency key: after a `ProviderTimeout` a retry may send the message twice. Calls, call
settings and webhook subscriptions raise `UnsupportedByProvider`; `capabilities` announces none
without a request.

Errors: every error body is `{status, error, response: {message}}` where `message` is an array,
a nested array or a string; none of its text reaches our errors, only a short code:

- 400 with `[{"exists": false, ...}]`: `ProviderRejected` (`not_on_whatsapp`);
- on send, 400 or 500 whose only message is "Connection Closed": `ProviderDisconnected` (the
  instance's WhatsApp session is down: another instance may send it);
- other 400, 401/403, 404 (unknown instance, answered before the key is checked): `ProviderRejected`;
- other 5xx and 429: `ProviderUnavailable`; timeouts: `ProviderTimeout` (outcome unknown).

Incoming webhooks, body `{event, instance, data, destination, date_time, sender, server_url, apikey}`:

- authenticated one way per provider, stored with it: `evolution-jwt` when `Authorization:
  Bearer <JWT>` is an HS256 token signed with the provider's webhook secret (the webhook's
  `jwt_key` header on Evolution's side) and not expired; `evolution-apikey` when the body's
  `apikey` is the token of the instance it names (sent only when the server exposes instance
  tokens; the global webhook, which has no headers, authenticates only this way). A provider of
  one never accepts the other: the body of a JWT delivery usually carries the instance token too,
  and an observed body would otherwise forge any other, for good;
- the JWT covers no part of the body: `{iat, exp: iat + 600, app, action}`, made once per event
  (its retries carry the same token) with `iat` in whole seconds and no nonce, so every event an
  Evolution server emits within one second under one `jwt_key` carries the same token. The token
  is returned to the ingest (`DeliveryToken`), which lets it bring new bodies only for
  `NEW_BODIES_SECONDS` after it first sees it, then only the bodies it already brought;
- `instance` (the instance's name on that server) binds to our instance's `providerInstanceId`;
- `messages.upsert` -> message (its content by `providers.wa_message`, the quoted id from
  `data.contextInfo`; a media's file from `message.base64` when the instance has `webhookBase64`,
  else `message.mediaUrl` when Evolution keeps media in S3/MinIO, else its
  `getBase64FromMediaMessage` route; `from` from the phone-number JID in `remoteJid`, else in
  `remoteJidAlt` or the older `senderPn`; `lid` from the `@lid` one; a chat WhatsApp addressed
  only by a LID has `lid` alone; `name` from `pushName`), `messages.update` -> receipt, `messages.edited` (the
  `protocolMessage` of a customer's edit) and `messages.delete` (the key of a message the
  customer deleted for everyone) -> message with an edit or a revoke,
  `connection.update` -> connection;
  anything else is returned as ignored. `date_time` is the server's local time labelled UTC and is
  never used; times come from `data.messageTimestamp` (unix seconds).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import ConfigDict, Field, RootModel, StrictBool, StrictStr, ValidationError

from switchboard.core.api.body import MAX_WEBHOOK_BODY_BYTES, parse_json, read_answer
from switchboard.core.clock import Deadline
from switchboard.core.errors import (
    InvalidInput,
    ProviderDisconnected,
    ProviderError,
    ProviderRejected,
    ProviderUnavailable,
    SwitchboardError,
    provider_text,
)
from switchboard.core.model import Model
from switchboard.core.outbound import MAX_ANSWER_BYTES
from switchboard.providers import envelope, evolution_send, wa_message
from switchboard.providers.base import (
    WHATSAPP_TEXT_CHARS,
    Credentials,
    DeliveryToken,
    DownloadedMedia,
    IgnoredKind,
    InboundEvent,
    InstanceStatus,
    KindDefaults,
    OutgoingFile,
    Pairing,
    ProviderClient,
    ProviderKindSpec,
    ProviderTarget,
    Quote,
    SentMessage,
    UploadedMedia,
    WebhookRequest,
    display_name,
)
from switchboard.providers.content import Content, Interactive, MediaMessage, MediaSource, Revoke, content_data
from switchboard.providers.http import DEFAULT_READ_TIMEOUT_SECONDS, ProviderHttp, base64_answer_bytes, path_segment
from switchboard.providers.kinds import ProviderKind, WebhookScheme
from switchboard.providers.messaging_only import MessagingOnly

SEND_ROUTE = "/message/sendText/{instance}"
STATE_ROUTE = "/instance/connectionState/{instance}"
NUMBERS_ROUTE = "/chat/whatsappNumbers/{instance}"

# --- outbound ------------------------------------------------------------------------------


class _Answer(Model):
    model_config = ConfigDict(extra="ignore")


class _MessageKey(_Answer):
    id: StrictStr = Field(min_length=1, max_length=128)


class _SendAnswer(_Answer):
    """201: the stored message; `status` there is the message's (`PENDING`), not the HTTP one."""

    key: _MessageKey


class _ConnectionState(_Answer):
    # "open", "connecting" or "close"; absent when the instance exists but is not loaded.
    state: StrictStr | None = None


class _StateAnswer(_Answer):
    instance: _ConnectionState


class _OnWhatsApp(_Answer):
    """`OnWhatsAppDto`: `{jid, exists, number, name?, lid?}`."""

    jid: StrictStr
    exists: StrictBool = False


class _NumbersAnswer(RootModel[list[_OnWhatsApp]]):
    pass


_CONNECTION_CLOSED = frozenset({"Connection Closed", "Error: Connection Closed"})


def _answer_bound(file: OutgoingFile | None) -> int:
    """What a send's answer may hold: the message sent, whose `message.base64` is the whole file
    when the instance's webhook carries base64 (`sendMessageWithTyping` returns `messageRaw`)."""
    return base64_answer_bytes(len(file.data)) if file is not None else MAX_ANSWER_BYTES


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

    def download_media(
        self, target: ProviderTarget, source: MediaSource, *, max_bytes: int, deadline: Deadline | None = None
    ) -> DownloadedMedia:
        from switchboard.providers import evolution_media  # noqa: PLC0415 - only the forwarder fetches media

        return evolution_media.download(self._http, target, source, max_bytes, deadline)

    def send_text(self, target: ProviderTarget, phone: str, body: str, idempotency_key: str) -> SentMessage:
        """Send one text. `idempotency_key` cannot be passed on: Evolution has no such header.

        The answer's `key.id` is the WhatsApp message id that receipts (`messages.update`
        `data.keyId`) refer to.
        """
        return self._send(target, "sendText", {"number": phone, "text": body})

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
        """Send `content` through its `/message/{action}/{instance}` route (`evolution_send`).
        Reply buttons or a list with a file header go as two messages (its `sendList` and text
        menus have no file headers): the file first (`sendMedia`), then the menu."""
        if isinstance(content, Interactive):
            header, content = content.header_first()
            if header is not None:
                first = evolution_send.request_for(phone, header, quoted=quoted, file=file)
                self._send(target, first.action, first.body, max_answer_bytes=_answer_bound(file))
                quoted, file = None, None
        request = evolution_send.request_for(phone, content, quoted=quoted, file=file)
        return self._send(target, request.action, request.body, max_answer_bytes=_answer_bound(file))

    def revoke(self, target: ProviderTarget, phone: str, provider_message_id: str) -> None:
        """`DELETE /chat/deleteMessageForEveryone/{instance}` `{id, fromMe, remoteJid}`
        (`chat.router.ts`, `deleteMessageSchema`; Baileys sends `{delete: key}`): 201 with the
        revoke it sent."""
        path = f"/chat/deleteMessageForEveryone/{path_segment(target.provider_instance_id)}"
        route = "/chat/deleteMessageForEveryone/{instance}"
        body = {"id": provider_message_id, "fromMe": True, "remoteJid": evolution_send.jid(phone)}
        response = self._http.request(
            "DELETE", target.base_url, path, route=route, headers=self._headers(target), body=body
        )
        if not response.is_success:
            raise _error_for(response, self._http.label("DELETE", route), sending=True)

    def _send(
        self, target: ProviderTarget, action: str, body: dict[str, Any], *, max_answer_bytes: int = MAX_ANSWER_BYTES
    ) -> SentMessage:
        path = f"/message/{action}/{path_segment(target.provider_instance_id)}"
        route = f"/message/{action}/{{instance}}"
        response = self._http.request(
            "POST",
            target.base_url,
            path,
            route=route,
            headers=self._headers(target),
            body=body,
            max_answer_bytes=max_answer_bytes,
        )
        label = self._http.label("POST", route)
        if not response.is_success:
            raise _error_for(response, label, sending=True)
        answer = self._http.answer(response, _SendAnswer, label)
        return SentMessage(provider_message_id=answer.key.id)

    def instance_status(self, target: ProviderTarget) -> InstanceStatus:
        """Connected only when the state is `open`; `close`, `connecting` and a missing state
        (the instance is stored but not loaded on the server) are not connected."""
        path = f"/instance/connectionState/{path_segment(target.provider_instance_id)}"
        response = self._http.request("GET", target.base_url, path, route=STATE_ROUTE, headers=self._headers(target))
        label = self._http.label("GET", STATE_ROUTE)
        if not response.is_success:
            raise _error_for(response, label)
        answer = self._http.answer(response, _StateAnswer, label)
        return InstanceStatus(connected=answer.instance.state == "open", kind="messages")

    def phone_for_lid(self, target: ProviderTarget, lid: str) -> str | None:
        """The phone number behind `lid`, from `POST /chat/whatsappNumbers/{instance}`.

        Evolution answers a LID from its `IsOnWhatsapp` cache, which learns a LID's number from
        the messages that carried both (`remoteJidAlt`): then the answer's `jid` is the phone
        JID; a LID it never saw comes back as itself (`lid: "lid"`), which is None here."""
        path = f"/chat/whatsappNumbers/{path_segment(target.provider_instance_id)}"
        response = self._http.request(
            "POST", target.base_url, path, route=NUMBERS_ROUTE, headers=self._headers(target), body={"numbers": [lid]}
        )
        label = self._http.label("POST", NUMBERS_ROUTE)
        if not response.is_success:
            raise _error_for(response, label)
        try:
            answers = _NumbersAnswer.model_validate(read_answer(response.content)).root
        except (ValueError, ValidationError) as exc:
            raise ProviderUnavailable(f"{label}: unreadable answer") from exc
        return next((phone for answer in answers if answer.exists and (phone := _phone(answer.jid))), None)

    # --- pairing a phone (`evolution_pairing`) ---------------------------------------------

    def start_session(self, target: ProviderTarget) -> Pairing:
        """The connect route: it starts a closed instance and answers its first code."""
        from switchboard.providers import evolution_pairing  # noqa: PLC0415 - only the catalog pairs

        return evolution_pairing.connect(self._http, target, self._headers(target))

    def pairing(self, target: ProviderTarget) -> Pairing:
        """The connect route again: a connecting instance answers its current code (a closed one
        starts again: Evolution has no read-only route for the code)."""
        from switchboard.providers import evolution_pairing  # noqa: PLC0415 - only the catalog pairs

        return evolution_pairing.connect(self._http, target, self._headers(target))

    def log_out(self, target: ProviderTarget) -> None:
        from switchboard.providers import evolution_pairing  # noqa: PLC0415 - only the catalog pairs

        evolution_pairing.log_out(self._http, target, self._headers(target))

    @staticmethod
    def _headers(target: ProviderTarget) -> dict[str, str]:
        key = target.instance_token or target.admin_token
        if not key:
            raise InvalidInput("the target has no Evolution API key")
        return {"apikey": key}


def _error_for(response: httpx.Response, label: str, *, sending: bool = False) -> ProviderError:
    """The error of a non-2xx answer, with Evolution's `response.message` as its provider message
    (kept for the operator, never copied into our own messages)."""
    error = _classified(response, label, sending=sending)
    words = [m if isinstance(m, str) else json.dumps(m, separators=(",", ":")) for m in _error_messages(response)]
    if (text := provider_text("; ".join(words))) is not None:
        error.details["provider_message"] = text
    return error


def _classified(response: httpx.Response, label: str, *, sending: bool) -> ProviderError:
    status = response.status_code
    messages = _error_messages(response)
    if (
        sending
        and status in (400, 500)
        and messages
        and all(isinstance(m, str) and m in _CONNECTION_CLOSED for m in messages)
    ):
        return ProviderDisconnected(
            f"{label}: the instance is not connected ({status})", status=status, provider_code="connection_closed"
        )
    if status == 400 and any(isinstance(m, dict) and m.get("exists") is False for m in messages):
        return ProviderRejected(
            f"{label}: the number is not on WhatsApp (400)", status=status, provider_code="not_on_whatsapp"
        )
    if status == 404:
        return ProviderRejected(f"{label}: unknown instance (404)", status=status, provider_code="instance_not_found")
    return ProviderHttp.error_for(response, label)


def _error_messages(response: httpx.Response) -> list[Any]:
    """`response.message` of an error body, flattened one level deep (strings, objects)."""
    try:
        payload = read_answer(response.content)
    except ValueError:
        return []
    inner = payload.get("response") if isinstance(payload, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    if not isinstance(message, list):
        return [message] if isinstance(message, str | dict) else []
    flat: list[Any] = []
    for item in message:
        flat.extend(item if isinstance(item, list) else [item])
    return flat


# --- webhook authentication -----------------------------------------------------------------

JWT_LEEWAY_SECONDS = 30
# Events emitted within one second share a token and are posted at once; a delivery that fails is
# retried after 5 s, then 10 s, 20 s (jitter 20 %), with the same token. A minute after a token is
# first seen, its first attempts and three retries are in: any new body it brings after that is a
# replay of an observed token with a body Evolution never sent.
NEW_BODIES_SECONDS = 60
MAX_TOKEN_CHARS = 4096
MAX_NAME_CHARS = 128
_JWT = re.compile(r"([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)")


def _b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _json_segment(segment: str) -> dict[str, Any] | None:
    """A base64url (unpadded) JSON object, or None."""
    if len(segment) % 4 == 1:
        return None
    try:
        value = parse_json(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, binascii.Error, SwitchboardError):
        return None
    return value if isinstance(value, dict) else None


def _numeric_date(value: object) -> float | None:
    """A JWT NumericDate (seconds, a JSON number) within a sane range, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and abs(value) > 2**53:  # float() of a huge int would overflow
        return None
    return float(value) if math.isfinite(value) else None


def jwt_expiry(token: str, secret: str, now: float) -> float | None:
    """The `exp` of an HS256 JWT signed with `secret`, unexpired (30 s leeway), with Evolution's
    claims; None for any other token.

    Strict: the header's `alg` must be exactly `HS256` (so `none` and every other algorithm are
    refused), `typ` if present `JWT`, no `crit`; the signature is compared in constant time
    before the claims are read; `exp` is required; `nbf` if present is honoured; `app` must be
    `evolution` and `action` `webhook`, the only claims Evolution signs besides `iat` and `exp`.
    """
    if not secret or len(token) > MAX_TOKEN_CHARS:
        return None
    match = _JWT.fullmatch(token)
    if match is None:
        return None
    header_segment, claims_segment, signature_segment = match.groups()
    header = _json_segment(header_segment)
    if header is None or header.get("alg") != "HS256" or header.get("typ", "JWT") != "JWT" or "crit" in header:
        return None
    signed = f"{header_segment}.{claims_segment}".encode("ascii")
    expected = _b64url_encode(hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).digest())
    if not hmac.compare_digest(expected.encode("ascii"), signature_segment.encode("ascii")):
        return None
    claims = _json_segment(claims_segment)
    if claims is None:
        return None
    expires = _numeric_date(claims.get("exp"))
    if expires is None or now > expires + JWT_LEEWAY_SECONDS:
        return None
    if "nbf" in claims:
        not_before = _numeric_date(claims["nbf"])
        if not_before is None or now + JWT_LEEWAY_SECONDS < not_before:
            return None
    if claims.get("app") != "evolution" or claims.get("action") != "webhook":
        return None
    return expires


def verify_jwt(token: str, secret: str, now: float) -> bool:
    """True for a token `jwt_expiry` accepts."""
    return jwt_expiry(token, secret, now) is not None


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _json_body(body: bytes) -> object:
    """The parsed body, or None when it is not JSON or holds a lone surrogate escape (`\\ud800`),
    which no later UTF-8 encoding would survive; never an exception."""
    try:
        payload = parse_json(body, limit=MAX_WEBHOOK_BODY_BYTES)
        if b"\\ud" in body or b"\\uD" in body:
            json.dumps(payload, ensure_ascii=False).encode("utf-8")
    except ValueError:  # UnicodeError and InvalidBody are ValueErrors
        return None
    return payload


def _apikey_matches(body: bytes, credentials: Credentials) -> bool:
    """The body's `apikey` equals the token of the instance named in `instance`."""
    payload = _json_body(body)
    if not isinstance(payload, dict):
        return False
    instance, apikey = payload.get("instance"), payload.get("apikey")
    if not isinstance(instance, str) or not 0 < len(instance) <= MAX_NAME_CHARS:
        return False
    if not isinstance(apikey, str) or not apikey:
        return False
    expected = credentials.instance_token(instance)
    if not expected:
        return False
    return hmac.compare_digest(apikey.encode("utf-8"), expected.encode("utf-8"))


# --- webhook events -------------------------------------------------------------------------


class _Delivery(Model):
    """The envelope Evolution posts for every event (`data` is checked per event)."""

    model_config = ConfigDict(extra="ignore")

    event: StrictStr = Field(min_length=1, max_length=64)
    instance: StrictStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    data: Any = None


class _UpsertKey(Model):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: StrictStr = Field(min_length=1, max_length=128)
    remote_jid: StrictStr | None = Field(default=None, alias="remoteJid")
    remote_jid_alt: StrictStr | None = Field(default=None, alias="remoteJidAlt")
    # Evolution 2.3.1 to 2.3.4 (Baileys 6.7 / 7.0.0-rc.3) named the other address `senderPn`.
    sender_pn: StrictStr | None = Field(default=None, alias="senderPn")
    from_me: StrictBool | None = Field(default=None, alias="fromMe")


class _Upsert(Model):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    key: _UpsertKey
    message: dict[str, Any] | None = None
    context_info: Any = Field(default=None, alias="contextInfo")
    message_type: StrictStr | None = Field(default=None, alias="messageType")
    message_timestamp: Any = Field(default=None, alias="messageTimestamp")
    push_name: Any = Field(default=None, alias="pushName")


class _Update(Model):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    key_id: StrictStr = Field(min_length=1, max_length=128, alias="keyId")
    from_me: StrictBool | None = Field(default=None, alias="fromMe")
    status: StrictStr | None = None


class _Connection(Model):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    state: StrictStr | None = None
    status_reason: Any = Field(default=None, alias="statusReason")


RECEIPT_STATUS = {"DELIVERY_ACK": "delivered", "READ": "read", "PLAYED": "read", "ERROR": "failed"}
CLOSE_REASONS = {401: "logged out", 403: "forbidden"}
_PHONE_JID = "@s.whatsapp.net"
_LID_JID = "@lid"
_PHONE = re.compile(r"[0-9]{5,20}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_MAX_SECONDS = 2**63 // 1000 - 1


def _canonical_event(name: str) -> str:
    """`messages.upsert`; also accepts `MESSAGES_UPSERT` and `messages-upsert`."""
    return name.strip().lower().replace("_", ".").replace("-", ".")


def _safe(value: str, limit: int = 48) -> str:
    """A provider-chosen name made safe for a short reason."""
    return _UNSAFE.sub("", value)[:limit] or "unknown"


def _body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:32]


def _phone(jid: str | None) -> str | None:
    """Digits of a phone-number JID (`5511...@s.whatsapp.net`, device suffix dropped), else None."""
    if not jid or not jid.endswith(_PHONE_JID):
        return None
    user = jid[: -len(_PHONE_JID)].split(":", 1)[0]
    return user if _PHONE.fullmatch(user) else None


def _lid(jid: str | None) -> str | None:
    """A LID JID (`104857600012345@lid`, device suffix dropped), WhatsApp's hidden-number address."""
    if not jid or not jid.endswith(_LID_JID):
        return None
    user = jid[: -len(_LID_JID)].split(":", 1)[0]
    return f"{user}{_LID_JID}" if _PHONE.fullmatch(user) else None


def _seconds(value: object) -> int | None:
    """Unix seconds from a number, a digit string or a protobuf Long `{low, high}`; else None."""
    if isinstance(value, str):
        value = int(value) if value.isascii() and value.isdigit() and len(value) <= 19 else None
    elif isinstance(value, dict):
        low, high = value.get("low"), value.get("high")
        value = (high << 32) | (low & 0xFFFFFFFF) if type(low) is int and type(high) is int else None
    elif isinstance(value, float):
        value = int(value) if math.isfinite(value) else None
    if type(value) is not int or not 0 < value <= _MAX_SECONDS:
        return None
    return value


def _invalid(what: str) -> InvalidInput:
    return InvalidInput(f"the Evolution API {what} is not in the expected format", code="invalid_envelope")


def _message_event(instance: str, data: object) -> InboundEvent:
    try:
        upsert = _Upsert.model_validate(data)
    except ValidationError as exc:
        raise _invalid("messages.upsert data") from exc
    key = upsert.key
    seconds = _seconds(upsert.message_timestamp)
    seq = seconds * 1000 if seconds is not None else None

    def ignored(reason: str, kind: IgnoredKind = "unsupported") -> InboundEvent:
        return InboundEvent(
            name="message",
            binding=instance,
            event_id=key.id,
            seq=seq,
            data={"id": key.id},
            ignored=reason,
            ignored_kind=kind,
        )

    jid = key.remote_jid or ""
    if key.from_me:
        return ignored("sent from the phone or the API", "from_us")
    if jid.endswith("@g.us"):
        return ignored("group message", "group")
    if jid.endswith("@broadcast"):
        return ignored("broadcast message", "group")
    if jid.endswith("@newsletter"):
        return ignored("newsletter message", "group")
    mapped = wa_message.map_message(upsert.message, context_info=upsert.context_info)
    if isinstance(mapped, str):
        return ignored(mapped)
    # A chat is addressed by phone number or by LID, with the other address in `remoteJidAlt`
    # when WhatsApp sent it; without it, a LID is all there is to answer to.
    sender = _phone(jid) or _phone(key.remote_jid_alt) or _phone(key.sender_pn)
    lid = _lid(jid) or _lid(key.remote_jid_alt)
    if sender is None and lid is None:
        return ignored("sender phone number unknown", "no_sender")
    content, media_bytes = _with_media(mapped, upsert.message or {}, key.id)
    data_out: dict[str, Any] = {"id": key.id, "content": content_data(content)}
    if mapped.reply_to is not None:
        data_out["replyTo"] = mapped.reply_to
    if sender is not None:
        data_out["from"] = sender
    if lid is not None:
        data_out["lid"] = lid
    if seconds is not None:
        data_out["timestamp"] = datetime.fromtimestamp(seconds, UTC).isoformat()
    if (name := display_name(upsert.push_name)) is not None:
        data_out["name"] = name
    return InboundEvent(
        name="message", binding=instance, event_id=key.id, seq=seq, data=data_out, media_bytes=media_bytes
    )


def _with_media(mapped: wa_message.Mapped, message: dict[str, Any], message_id: str) -> tuple[Content, bytes | None]:
    """The content with where its file is: `message.base64` (the instance's `webhookBase64`),
    `message.mediaUrl` (media kept in S3/MinIO), else `getBase64FromMediaMessage`, which finds
    the message by its key (`{"message": {"key": {"id"}}}`)."""
    content = mapped.content
    if not isinstance(content, MediaMessage):
        return content, None
    inline = _inline(message.get("base64"))
    url = message.get("mediaUrl")
    source: MediaSource | None
    if isinstance(url, str) and url.startswith(("https://", "http://")) and len(url) <= 4096:
        source = MediaSource(via="url", url=url)
    elif inline is None:
        source = MediaSource(via="provider_download", fields={"message": {"key": {"id": message_id}}})
    else:
        source = None
    media = content.media.model_copy(update={"inline": inline is not None, "source": source})
    return MediaMessage(media=media), inline


def _inline(value: object) -> bytes | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _change_event(instance: str, name: str, data: object, body: bytes) -> InboundEvent:
    """A customer's edit or "delete for everyone" of an earlier message. Evolution posts neither
    as `messages.upsert`: an edit as `messages.edited` with the `protocolMessage` itself
    (`{key, type, editedMessage}`), a deletion as `messages.delete` with the deleted message's
    `key`. Either becomes a `message` event whose content names the message changed; its id is
    the change's own (a redelivery of the same change is the same event)."""
    if not isinstance(data, dict):
        raise _invalid(f"{name} data")
    key = data.get("key") if name == "messages.edited" else data
    try:
        target = _UpsertKey.model_validate(key)
    except ValidationError as exc:
        raise _invalid(f"{name} data") from exc
    event_id = f"{'edit' if name == 'messages.edited' else 'revoke'}:{target.id}:{_body_digest(body)[:16]}"

    def ignored(reason: str, kind: IgnoredKind = "unsupported") -> InboundEvent:
        return InboundEvent(
            name="message",
            binding=instance,
            event_id=event_id,
            data={"id": target.id},
            ignored=reason,
            ignored_kind=kind,
        )

    jid = target.remote_jid or ""
    if target.from_me:
        return ignored("a change of our own message", "from_us")
    if not jid.endswith((_PHONE_JID, _LID_JID)):
        return ignored("change in a group or broadcast", "group")
    if name == "messages.edited":
        mapped = wa_message.map_message({"protocolMessage": data})
    else:
        mapped = wa_message.Mapped(Revoke(target_id=target.id))
    if isinstance(mapped, str):
        return ignored(mapped)
    sender = _phone(jid) or _phone(target.remote_jid_alt) or _phone(target.sender_pn)
    lid = _lid(jid) or _lid(target.remote_jid_alt)
    data_out: dict[str, Any] = {"id": event_id, "content": content_data(mapped.content)}
    if sender is not None:
        data_out["from"] = sender
    if lid is not None:
        data_out["lid"] = lid
    return InboundEvent(name="message", binding=instance, event_id=event_id, data=data_out)


def _receipt_event(instance: str, data: object) -> InboundEvent:
    try:
        update = _Update.model_validate(data)
    except ValidationError as exc:
        raise _invalid("messages.update data") from exc
    raw = _safe(update.status or "none", 32)
    event_id = f"{update.key_id}:{raw}"
    status = RECEIPT_STATUS.get(update.status or "")
    reason = None
    if update.from_me is False:
        reason = "receipt of a received message"
    elif status is None:
        reason = f"status {raw}"
    if reason is not None:
        return InboundEvent(
            name="receipt", binding=instance, event_id=event_id, data={"id": update.key_id}, ignored=reason
        )
    return InboundEvent(
        name="receipt", binding=instance, event_id=event_id, data={"id": update.key_id, "status": status}
    )


def _connection_event(instance: str, data: object, body: bytes) -> InboundEvent:
    try:
        connection = _Connection.model_validate(data)
    except ValidationError as exc:
        raise _invalid("connection.update data") from exc
    event_id = _body_digest(body)
    state = connection.state
    code = connection.status_reason if type(connection.status_reason) is int else None
    if state == "open":
        return InboundEvent(name="connection", binding=instance, event_id=event_id, data={"connected": True})
    if state in ("close", "refused"):
        reason = "qr code limit reached" if state == "refused" else CLOSE_REASONS.get(code or 0, "closed")
        if code is not None:
            reason = f"{reason} ({code})"
        return InboundEvent(
            name="connection", binding=instance, event_id=event_id, data={"connected": False, "reason": reason}
        )
    reason = "connecting" if state == "connecting" else f"state {_safe(state or 'none', 32)}"
    return InboundEvent(name="connection", binding=instance, event_id=event_id, ignored=reason)


def parse_events(body: bytes) -> list[InboundEvent]:
    """The one event of an Evolution delivery, mapped (or returned ignored with its reason)."""
    payload = _json_body(body)
    try:
        delivery = _Delivery.model_validate(payload)
    except ValidationError as exc:
        raise _invalid("webhook body") from exc
    name = _canonical_event(delivery.event)
    if name == "messages.upsert":
        return [_message_event(delivery.instance, delivery.data)]
    if name == "messages.update":
        return [_receipt_event(delivery.instance, delivery.data)]
    if name in ("messages.edited", "messages.delete"):
        return [_change_event(delivery.instance, name, delivery.data, body)]
    if name == "connection.update":
        return [_connection_event(delivery.instance, delivery.data, body)]
    return [
        InboundEvent(
            name=_safe(name, 64),
            binding=delivery.instance,
            event_id=_body_digest(body),
            ignored=f"unsupported event {_safe(name, 64)}",
        )
    ]


class EvolutionKind(KindDefaults):
    # A list is sent native (`sendList`); reply buttons as a numbered text menu (`evolution_send`).
    interactive_native = frozenset({"list"})

    name: ProviderKind = "evolution"
    retry_safe = False
    always_connected = False
    # `sendText` sets no length (its schema has no maxLength, Baileys none): WhatsApp's own applies.
    text_limit = WHATSAPP_TEXT_CHARS
    # `sendWhatsAppAudio` converts any audio to Opus with ffmpeg and sends it as PTT.
    converts_voice_notes = True
    schemes: tuple[WebhookScheme, ...] = ("evolution-jwt", "evolution-apikey")

    def client(
        self,
        *,
        local_mode: bool,
        read_timeout: float,
        transport: httpx.BaseTransport | None = None,
        api_version: str | None = None,
    ) -> ProviderClient:
        return EvolutionClient(local_mode=local_mode, read_timeout=read_timeout, transport=transport)

    def authenticate(
        self, request: WebhookRequest, credentials: Credentials, now: float, scheme: WebhookScheme
    ) -> DeliveryToken | None:
        """`evolution-jwt`: a valid bearer JWT (the provider's webhook secret), returned to be
        remembered with the body; `evolution-apikey`: the body's instance apikey."""
        if scheme == "evolution-jwt":
            token = _bearer(request.headers.get("authorization"))
            expires = jwt_expiry(token, credentials.webhook_secret() or "", now) if token is not None else None
            if token is None or expires is None:
                raise envelope.refused()
            return DeliveryToken(
                digest=hashlib.sha256(token.encode("ascii")).hexdigest(),
                expires_at=int(expires) + JWT_LEEWAY_SECONDS,
                new_bodies_for_seconds=NEW_BODIES_SECONDS,
            )
        if scheme == "evolution-apikey" and _apikey_matches(request.body, credentials):
            return None
        raise envelope.refused()

    def events(self, request: WebhookRequest, scheme: WebhookScheme) -> list[InboundEvent]:
        return parse_events(request.body)


KIND: ProviderKindSpec = EvolutionKind()
